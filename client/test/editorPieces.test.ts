// The small vscode-free pieces of the editor experience (issue 18): the status item's
// look, rule links, the restart's clean exit, and where the interpreter picker looks.
import assert from "node:assert/strict";
import { test } from "node:test";

import { isCleanExit } from "../src/cleanExit";
import { findPythons, type SearchInputs } from "../src/interpreterSearch";
import { ruleCodeOf, ruleUri } from "../src/ruleLinks";
import { statusLook } from "../src/statusLook";

test("graphlife.enable false shows as off, not as running", () => {
  assert.match(statusLook("running", false).detail, /off/);
  assert.match(statusLook("running", true).detail, /checking/);
  assert.equal(statusLook("failed", false).error, true, "a failure is still said");
});

test("rule pages are virtual markdown documents named by the code", () => {
  assert.equal(ruleCodeOf("gl101"), "GL101");
  assert.equal(ruleCodeOf("/GL102.md"), "GL102");
  assert.equal(ruleCodeOf("E501"), undefined);
  assert.equal(ruleUri("GL101"), "graphlife-rule:/GL101.md");
  assert.equal(ruleUri("GL101", "zh-cn"), "graphlife-rule:/GL101.md?language=zh-cn", "a page in another language is another document");
});

test("only exit code 0 is a clean exit", () => {
  assert.equal(isCleanExit("Server process exited with code 0."), true);
  assert.equal(isCleanExit("Server process exited with code 1."), false);
  assert.equal(isCleanExit("Server process exited with signal SIGKILL."), false);
});

function inputs(files: Record<string, string[]>, extra: Partial<SearchInputs> = {}): SearchInputs {
  const all = new Set(Object.entries(files).flatMap(([folder, names]) => names.map((n) => `${folder}/${n}`)));
  return {
    known: [],
    pathEnv: "/usr/bin:/usr/local/bin",
    platform: "linux",
    workspaceFolders: ["/work/project"],
    home: "/home/me",
    listDir: (folder) => files[folder] ?? [],
    exists: (file) => all.has(file),
    ...extra,
  };
}

test("the picker looks at the Python extension, workspace venvs, PATH, pyenv and conda, each once", () => {
  const found = findPythons(
    inputs(
      {
        "/usr/bin": ["python3", "python3.12", "python3-config", "ls", "python2.7"],
        "/usr/local/bin": ["python3.13"],
        "/work/project/.venv/bin": ["python"],
        "/home/me/.pyenv/versions": ["3.11.9"],
        "/home/me/.pyenv/versions/3.11.9/bin": ["python"],
        "/home/me/miniconda3/bin": ["python"],
        "/home/me/miniconda3/envs": ["ml"],
        "/home/me/miniconda3/envs/ml/bin": ["python"],
      },
      { known: ["/opt/env/bin/python", "/usr/bin/python3"] },
    ),
  );
  assert.deepEqual(
    found.map((f) => `${f.where}: ${f.executable}`),
    [
      "Python extension: /opt/env/bin/python",
      "Python extension: /usr/bin/python3",
      "workspace: /work/project/.venv/bin/python",
      "PATH: /usr/bin/python3.12",
      "PATH: /usr/local/bin/python3.13",
      "pyenv: /home/me/.pyenv/versions/3.11.9/bin/python",
      "conda: /home/me/miniconda3/bin/python",
      "conda: /home/me/miniconda3/envs/ml/bin/python",
    ],
  );
});
