// Run the Autograd-view test in a real VS Code after the main e2e (which installs code-server),
// with the same rule: without Chromium say SKIP loudly and exit 0; CI installs Chromium.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
if (!fs.existsSync("/usr/bin/chromium")) {
  console.log("!! SKIP: the Autograd-view test needs Chromium at /usr/bin/chromium; nothing was tested.");
  process.exit(0);
}
const build = spawnSync(process.execPath, [path.join(root, "client", "build.mjs")], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);
const run = spawnSync(process.execPath, [path.join(root, "tests", "debug", "vscode", "run_autograd_view.mjs")], {
  stdio: "inherit",
  env: process.env,
});
process.exit(run.status ?? 1);
