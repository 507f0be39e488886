import assert from "node:assert/strict";
import { test } from "node:test";

import { parseImportProbe, pathLaunch, serverLaunch } from "../src/serverCommand";

const info = { version: [3, 11, 2] as [number, number, number], executable: "/usr/bin/python3.11" };

test("the bundled server and libraries go first on PYTHONPATH", () => {
  const present = new Set(["/ext/bundled/graphlife/__init__.py", "/ext/bundled/libs/cp311"]);
  const launch = serverLaunch("/ext", ["/usr/bin/python3"], info, { PYTHONPATH: "/user/lib", HOME: "/home/me" }, (p) => present.has(p), ":");
  assert.equal(launch.command, "/usr/bin/python3");
  assert.deepEqual(launch.args, ["-m", "graphlife", "lsp"]);
  assert.equal(launch.env.PYTHONPATH, "/ext/bundled/libs/cp311:/ext/bundled/libs/common:/ext/bundled:/user/lib");
  assert.equal(launch.env.HOME, "/home/me");
  assert.equal(launch.layout, "bundled");
  assert.equal(launch.warning, undefined);
});

test("interpreter arguments come before -m graphlife lsp", () => {
  const launch = serverLaunch("/ext", ["conda", "run", "-n", "ml", "python"], info, {}, () => false, ":");
  assert.equal(launch.command, "conda");
  assert.deepEqual(launch.args, ["run", "-n", "ml", "python", "-m", "graphlife", "lsp"]);
});

test("a Python without compiled libraries in the .vsix is said in the log", () => {
  const present = new Set(["/ext/bundled/graphlife/__init__.py"]);
  const launch = serverLaunch("/ext", ["python3"], { ...info, version: [3, 15, 0] }, {}, (p) => present.has(p), ":");
  assert.equal(launch.env.PYTHONPATH, "/ext/bundled/libs/common:/ext/bundled");
  assert.match(launch.warning ?? "", /no compiled libraries for Python 3\.15 \(cp315\)/);
});

test("from a source checkout the repository's server/ folder is used", () => {
  const launch = serverLaunch("/repo", ["python3"], info, {}, () => false, ":");
  assert.equal(launch.layout, "source");
  assert.equal(launch.env.PYTHONPATH, "/repo/server");
});

test("importStrategy fromEnvironment runs the environment's graphlife: nothing of the extension on PYTHONPATH", () => {
  const present = new Set(["/ext/bundled/graphlife/__init__.py", "/ext/bundled/libs/cp311"]);
  const launch = serverLaunch("/ext", ["/venv/bin/python"], info, { PYTHONPATH: "/user/lib" }, (p) => present.has(p), ":", {
    fromEnvironment: true,
    extraArgs: ["--tcp", "127.0.0.1:2087"],
  });
  assert.equal(launch.layout, "environment");
  assert.equal(launch.env.PYTHONPATH, "/user/lib");
  assert.deepEqual(launch.args, ["-m", "graphlife", "lsp", "--tcp", "127.0.0.1:2087"]);
});

test("graphlife.path runs that executable with lsp and graphlife.args", () => {
  const launch = pathLaunch(["/venv/bin/graphlife"], ["--tcp", "127.0.0.1:2087"], { HOME: "/home/me" });
  assert.equal(launch.command, "/venv/bin/graphlife");
  assert.deepEqual(launch.args, ["lsp", "--tcp", "127.0.0.1:2087"]);
  assert.equal(launch.env.PYTHONPATH, undefined);
  assert.equal(launch.layout, "path");
});

test("the import probe says whether the environment has graphlife", () => {
  assert.equal(parseImportProbe("noise\nGRAPHLIFE-VERSION 0.1.0\n"), "0.1.0");
  assert.equal(parseImportProbe(""), undefined);
});
