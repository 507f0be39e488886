import assert from "node:assert/strict";
import { test } from "node:test";

import { chooseInterpreter, expandVariables, parseInterpreterSetting } from "../src/interpreter";

test("the graphlife.interpreter setting wins over the Python extension and PATH", () => {
  const choice = chooseInterpreter({ setting: ["/opt/py/bin/python3"], pythonExtensionExecutable: "/venv/bin/python", platform: "linux" });
  assert.deepEqual(choice.candidates, [{ command: ["/opt/py/bin/python3"], source: "setting" }]);
  assert.deepEqual(choice.problems, []);
});

test("the setting may carry arguments and variables", () => {
  const choice = chooseInterpreter({
    setting: ["${workspaceFolder}/.venv/bin/python", "-X", "utf8"],
    workspaceFolder: "/home/me/proj",
    platform: "linux",
  });
  assert.deepEqual(choice.candidates[0].command, ["/home/me/proj/.venv/bin/python", "-X", "utf8"]);
});

test("a plain string setting is accepted as one command", () => {
  assert.deepEqual(parseInterpreterSetting("  /usr/bin/python3 "), { command: ["/usr/bin/python3"] });
});

test("the Python extension's environment is used when the setting is empty", () => {
  const choice = chooseInterpreter({ setting: [], pythonExtensionExecutable: "/venv/bin/python", platform: "linux" });
  assert.deepEqual(choice.candidates, [{ command: ["/venv/bin/python"], source: "python-extension" }]);
});

test("without setting and Python extension: python3, then python, on PATH", () => {
  const choice = chooseInterpreter({ setting: [], platform: "linux" });
  assert.deepEqual(
    choice.candidates.map((c) => [c.command.join(" "), c.source]),
    [
      ["python3", "path"],
      ["python", "path"],
    ],
  );
  assert.deepEqual(
    chooseInterpreter({ setting: undefined, platform: "win32" }).candidates.map((c) => c.command[0]),
    ["python", "py"],
  );
});

test("a setting of the wrong shape is reported and PATH is used", () => {
  const choice = chooseInterpreter({ setting: { path: "/usr/bin/python3" }, platform: "linux" });
  assert.equal(choice.candidates[0].source, "path");
  assert.equal(choice.problems.length, 1);
  assert.match(choice.problems[0], /graphlife\.interpreter must be a list of strings/);
});

test("${workspaceFolder} without an open folder is reported", () => {
  const choice = chooseInterpreter({ setting: ["${workspaceFolder}/.venv/bin/python"], platform: "linux" });
  assert.match(choice.problems.join("\n"), /no folder is open/);
});

test("variables: ~, ${userHome}, ${env:NAME}", () => {
  const inputs = { setting: [], home: "/home/me", env: { CONDA_PREFIX: "/conda/env" } };
  assert.equal(expandVariables("~/py/bin/python", inputs), "/home/me/py/bin/python");
  assert.equal(expandVariables("${userHome}/x", inputs), "/home/me/x");
  assert.equal(expandVariables("${env:CONDA_PREFIX}/bin/python", inputs), "/conda/env/bin/python");
  assert.equal(expandVariables("${env:MISSING}/python", inputs), "/python");
  assert.equal(expandVariables("/a~b", inputs), "/a~b");
});
