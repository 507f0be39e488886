// Restricted Mode: VS Code hides the workspace's values of graphlife.interpreter and
// graphlife.path from the extension, so the message naming what was ignored is made from
// the settings files themselves (the real-VS-Code test shows `inspect()` reports nothing).
import assert from "node:assert/strict";
import { test } from "node:test";

import { graphlifeSettingsInFile, inspectFromFiles, RESTRICTED_KEYS } from "../src/restrictedSettings";
import { restrictedModeMessage } from "../src/settings";

test("a folder's settings.json with comments and a trailing comma names the interpreter", () => {
  const text = `{
    // the project's venv
    "graphlife.interpreter": ["/ws/.venv/bin/python"], /* pinned */
    "editor.tabSize": 4,
  }`;
  assert.deepEqual(graphlifeSettingsInFile(text, RESTRICTED_KEYS), { interpreter: ["/ws/.venv/bin/python"] });
});

test("the nested spelling and a .code-workspace file's settings section count too", () => {
  assert.deepEqual(graphlifeSettingsInFile(`{"graphlife": {"path": ["/opt/gl/bin/graphlife"]}}`, RESTRICTED_KEYS), { path: ["/opt/gl/bin/graphlife"] });
  const workspace = `{"folders": [{"path": "."}], "settings": {"graphlife.interpreter": ["/usr/bin/python3.12"]}}`;
  assert.deepEqual(graphlifeSettingsInFile(workspace, RESTRICTED_KEYS, "settings"), { interpreter: ["/usr/bin/python3.12"] });
  assert.deepEqual(graphlifeSettingsInFile(workspace, RESTRICTED_KEYS), {}); // not at the top level of that file
});

test("a file that does not parse, or is not there, names nothing", () => {
  assert.deepEqual(graphlifeSettingsInFile("[1, 2", RESTRICTED_KEYS), {});
  const inspect = inspectFromFiles([{ path: "/ws/.vscode/settings.json", folder: false }], () => undefined);
  assert.equal(restrictedModeMessage(false, inspect), undefined);
});

test("in Restricted Mode the message names the interpreter the workspace's file sets", () => {
  const files: Record<string, string> = { "/ws/.vscode/settings.json": `{"graphlife.interpreter": ["/ws/.venv/bin/python"]}` };
  const inspect = inspectFromFiles([{ path: "/ws/.vscode/settings.json", folder: false }], (file) => files[file]);
  const message = restrictedModeMessage(false, inspect);
  assert.ok(message?.includes('graphlife.interpreter (["/ws/.venv/bin/python"])'), message);
  assert.equal(restrictedModeMessage(true, inspect), undefined); // trusted: nothing was ignored
});
