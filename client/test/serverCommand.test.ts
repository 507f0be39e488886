import assert from "node:assert/strict";
import { test } from "node:test";

import { serverLaunch } from "../src/serverCommand";

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
