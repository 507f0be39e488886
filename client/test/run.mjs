// `npm test`: bundles every client/test/**/*.test.ts (the debug inspector's tests in
// client/test/debug/ too) with the same esbuild options as the extension, then runs
// them with node's test runner. Tests import only modules that do not need `vscode`.
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { common } from "../build.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const testRoot = path.join(root, "client/test");
const outRoot = path.join(root, "client/out/test");

function findTests(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return findTests(full);
    return /\.test\.(ts|mts|js|mjs)$/.test(entry.name) ? [full] : [];
  });
}

const tests = findTests(testRoot);
if (tests.length === 0) {
  console.error("no tests found under client/test/");
  process.exit(1);
}
fs.rmSync(outRoot, { recursive: true, force: true });
await esbuild.build({
  ...common,
  // The compiler API (the l10n tests read client/src's syntax tree) is loaded from node_modules, not bundled.
  external: [...common.external, "typescript"],
  entryPoints: tests,
  outbase: testRoot,
  outdir: outRoot,
  outExtension: { ".js": ".cjs" },
  sourcemap: "inline",
});
const built = tests.map((t) => path.join(outRoot, path.relative(testRoot, t)).replace(/\.(ts|mts|js|mjs)$/, ".cjs"));
const result = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...built], { stdio: "inherit" });
process.exit(result.status ?? 1);
