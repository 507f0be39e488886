// `npm run package`: dist/graphlife-<version>.vsix with the bundled client, the
// server package and its Python libraries (tools/bundle_python.py). The libraries
// include compiled wheels for this machine, so the .vsix is marked for this
// platform (`vsce --target`), which keeps it from being installed where it cannot run.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { buildExtension } from "./build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const out = path.join(root, "dist", `graphlife-${manifest.version}.vsix`);

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, NODE_ENV: "production" } });
  if (result.error || result.status !== 0) {
    console.error(`package: \`${command} ${args.join(" ")}\` failed${result.error ? `: ${result.error.message}` : ""}`);
    process.exit(1);
  }
}

await buildExtension({ production: true });

// PYTHON lets `make vsix` use the project's venv (its pip can fetch wheels for other Python minors).
const python = process.env.PYTHON || (process.platform === "win32" ? "python" : "python3");
run(python, [path.join("tools", "bundle_python.py")]);

const targets = { "linux-x64": 1, "linux-arm64": 1, "linux-armhf": 1, "darwin-x64": 1, "darwin-arm64": 1, "win32-x64": 1, "win32-arm64": 1 };
const target = `${process.platform}-${process.arch === "arm" ? "armhf" : process.arch}`;
const vsce = path.join(root, "node_modules", "@vscode", "vsce", "vsce");
// The Marketplace page is the extension's own README and CHANGELOG (client/), not the repository's.
// The project names no public repository yet: relative links are not rewritten to one.
const args = [
  vsce, "package", "--no-dependencies", "--out", out,
  "--readme-path", path.join("client", "README.md"),
  "--changelog-path", path.join("client", "CHANGELOG.md"),
  "--allow-missing-repository",
];
if (target in targets) args.push("--target", target);
else console.warn(`package: no VS Code target for ${target}; building a universal .vsix`);
// Without a LICENSE file vsce asks on the terminal, which would hang CI.
if (!fs.existsSync(path.join(root, "LICENSE")) && !fs.existsSync(path.join(root, "LICENSE.md"))) args.push("--skip-license");
fs.mkdirSync(path.dirname(out), { recursive: true });
run(process.execPath, args);
console.log(`package: ${path.relative(root, out)}`);
