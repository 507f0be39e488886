// A configuration event restarts the server only when the interpreter resolved now
// differs from the running one, and never moves it down to a worse tier on its own.
// The regression: in the Autograd-view e2e (code-server), starting a debug session fired
// a change of graphlife.interpreter (VS Code dropped the machine-overridable value from
// the local User settings), the server restarted on `python3` from PATH, which lacks the
// server's libraries, and crashed.
import assert from "node:assert/strict";
import { test } from "node:test";

import { chooseInterpreter, type InterpreterChoice, interpreterChange, type InterpreterInputs, type RunningInterpreter } from "../src/interpreter";
import { planConfigurationChange } from "../src/settings";

const VENV = "/work/main/.venv/bin/python";

/** `event.affectsConfiguration` as VS Code answers it: a changed key and its parent sections. */
function changed(...keys: string[]): (section: string) => boolean {
  return (section) => keys.some((key) => key === section || key.startsWith(`${section}.`));
}

/** A looser `affects` that also says yes for the children of a changed section. */
function changedSections(...sections: string[]): (section: string) => boolean {
  return (section) => sections.some((s) => s === section || s.startsWith(`${section}.`) || section.startsWith(`${s}.`));
}

function resolved(inputs: Partial<InterpreterInputs>): InterpreterChoice {
  return chooseInterpreter({ setting: [], platform: "linux", ...inputs });
}

/** The server as started on `inputs`: the first candidate worked. */
function runningOn(inputs: Partial<InterpreterInputs>): RunningInterpreter {
  const choice = resolved(inputs);
  return { candidates: choice.candidates, used: choice.candidates[0] };
}

function resolver(choice: InterpreterChoice) {
  const calls = { count: 0 };
  return { calls, resolve: () => (calls.count++, Promise.resolve(choice)) };
}

test("a debug-session start that touches python/debugpy/launch settings neither restarts nor resolves", async () => {
  const r = resolver(resolved({}));
  const plan = await planConfigurationChange(
    changed("python.defaultInterpreterPath", "debugpy.debugJustMyCode", "launch", "debug.console.fontSize", "graphlifeTest.python"),
    runningOn({ setting: [VENV] }),
    r.resolve,
  );
  assert.deepEqual(plan, { restart: false, relaunch: false, push: false, change: undefined });
  assert.equal(r.calls.count, 0);
});

test("a change of another graphlife key (the parent section `graphlife` is affected too) pushes, never restarts", async () => {
  const r = resolver(resolved({}));
  const plan = await planConfigurationChange(changed("graphlife.select"), runningOn({ setting: [VENV] }), r.resolve);
  assert.deepEqual(plan, { restart: false, relaunch: false, push: true, change: undefined });
  assert.equal(r.calls.count, 0);
  const trace = await planConfigurationChange(changed("graphlife.trace.server"), runningOn({ setting: [VENV] }), r.resolve);
  assert.deepEqual(trace, { restart: false, relaunch: false, push: false, change: undefined });
});

test("an event that claims the whole graphlife section changed does not restart when the interpreter resolves the same", async () => {
  const plan = await planConfigurationChange(changedSections("graphlife"), runningOn({ setting: [VENV] }), resolver(resolved({ setting: [VENV] })).resolve);
  assert.equal(plan.restart, false);
  assert.equal(plan.push, true);
  assert.deepEqual(plan.change, { kind: "unchanged" });
});

test("graphlife.interpreter touched but resolving to the same command does not restart", async () => {
  // Same value re-read; a string instead of a list; PATH before and after.
  for (const [before, after] of [
    [{ setting: [VENV] }, { setting: [VENV] }],
    [{ setting: [VENV] }, { setting: ` ${VENV} ` }],
    [{ setting: [] }, { setting: undefined }],
    [{ pythonExtensionExecutable: VENV }, { setting: [], pythonExtensionExecutable: VENV }],
  ] as Partial<InterpreterInputs>[][]) {
    const plan = await planConfigurationChange(changed("graphlife.interpreter"), runningOn(before), resolver(resolved(after)).resolve);
    assert.equal(plan.restart, false, JSON.stringify({ before, after }));
    assert.deepEqual(plan.change, { kind: "unchanged" });
  }
});

test("the e2e regression: graphlife.interpreter dropped by VS Code does not move a working server to python3 on PATH", async () => {
  const plan = await planConfigurationChange(changed("graphlife.interpreter"), runningOn({ setting: VENV }), resolver(resolved({ setting: [] })).resolve);
  assert.equal(plan.restart, false);
  assert.equal(plan.change?.kind, "downgrade");
  if (plan.change?.kind !== "downgrade") return;
  assert.deepEqual(plan.change.from, { command: [VENV], source: "setting" });
  assert.deepEqual(plan.change.to, { command: ["python3"], source: "path" });
});

test("the Python extension losing its environment does not move a working server to PATH either", () => {
  const change = interpreterChange(runningOn({ pythonExtensionExecutable: VENV }), resolved({}));
  assert.equal(change.kind, "downgrade");
  const fromSetting = interpreterChange(runningOn({ setting: [VENV] }), resolved({ pythonExtensionExecutable: "/other/bin/python" }));
  assert.equal(fromSetting.kind, "downgrade");
});

test("a real change of graphlife.interpreter restarts", async () => {
  const plan = await planConfigurationChange(
    changed("graphlife.interpreter", "graphlife.select"),
    runningOn({ setting: [VENV] }),
    resolver(resolved({ setting: ["/opt/py311/bin/python3"] })).resolve,
  );
  assert.equal(plan.restart, true);
  assert.equal(plan.push, false, "the restarted server gets the settings in initializationOptions");
  assert.deepEqual(plan.change, { kind: "restart", to: { command: ["/opt/py311/bin/python3"], source: "setting" } });
});

test("setting an interpreter over PATH or the Python extension restarts (an upgrade)", () => {
  assert.equal(interpreterChange(runningOn({}), resolved({ setting: [VENV] })).kind, "restart");
  assert.equal(interpreterChange(runningOn({ pythonExtensionExecutable: "/a/python" }), resolved({ setting: [VENV] })).kind, "restart");
  assert.equal(interpreterChange(runningOn({}), resolved({ pythonExtensionExecutable: VENV })).kind, "restart");
});

test("another environment in the Python extension restarts (same tier)", () => {
  const change = interpreterChange(runningOn({ pythonExtensionExecutable: "/a/bin/python" }), resolved({ pythonExtensionExecutable: "/b/bin/python" }));
  assert.deepEqual(change, { kind: "restart", to: { command: ["/b/bin/python"], source: "python-extension" } });
});

test("extra arguments in the setting are part of the command", () => {
  assert.equal(interpreterChange(runningOn({ setting: [VENV] }), resolved({ setting: [VENV, "-X", "utf8"] })).kind, "restart");
});

test("with no server running (none found, or it crashed for good) any touch of graphlife.interpreter starts one", async () => {
  const plan = await planConfigurationChange(changed("graphlife.interpreter"), undefined, resolver(resolved({})).resolve);
  assert.equal(plan.restart, true);
  assert.deepEqual(plan.change, { kind: "restart", to: { command: ["python3"], source: "path" } });
});

test("the server running on `python` (python3 missing) is unchanged when PATH is resolved again", () => {
  const choice = resolved({});
  const running: RunningInterpreter = { candidates: choice.candidates, used: choice.candidates[1] };
  assert.deepEqual(interpreterChange(running, resolved({ setting: undefined })), { kind: "unchanged" });
});

test("a change of which graphlife runs (importStrategy, path, args) restarts without resolving the interpreter", async () => {
  for (const key of ["graphlife.importStrategy", "graphlife.path", "graphlife.args"]) {
    const r = resolver(resolved({ setting: [VENV] }));
    const plan = await planConfigurationChange(changed(key), runningOn({ setting: [VENV] }), r.resolve, () => true);
    assert.deepEqual(plan, { restart: true, relaunch: true, push: false, change: undefined }, key);
    assert.equal(r.calls.count, 0, key);
    const same = await planConfigurationChange(changed(key), runningOn({ setting: [VENV] }), r.resolve, () => false);
    assert.equal(same.restart, false, `${key} re-read with the same value`);
  }
});
