import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";

import type { InterpreterCandidate } from "../src/interpreter";
import {
  findWorkingInterpreter,
  isSupported,
  parseProbeOutput,
  parseVersionString,
  probeInterpreter,
  PROBE_CODE,
  type Runner,
} from "../src/pythonVersion";

const cand = (cmd: string): InterpreterCandidate => ({ command: [cmd], source: "path" });
const probeLine = (v: number[], exe: string) => `GRAPHLIFE-PROBE ${JSON.stringify({ version: v, executable: exe })}\n`;

test("the probe's line is found among other output", () => {
  const info = parseProbeOutput(`conda banner\n${probeLine([3, 12, 4], "/env/bin/python")}`);
  assert.deepEqual(info, { version: [3, 12, 4], executable: "/env/bin/python" });
  assert.equal(parseProbeOutput("Python 3.12.4\n"), undefined);
  assert.equal(parseProbeOutput("GRAPHLIFE-PROBE {not json\n"), undefined);
});

test("version strings", () => {
  assert.deepEqual(parseVersionString("Python 3.9.18"), [3, 9, 18]);
  assert.deepEqual(parseVersionString("Python 3.13"), [3, 13, 0]);
  assert.equal(parseVersionString("no version"), undefined);
});

test("3.10 is the minimum", () => {
  assert.equal(isSupported([3, 10, 0]), true);
  assert.equal(isSupported([3, 13, 1]), true);
  assert.equal(isSupported([4, 0, 0]), true);
  assert.equal(isSupported([3, 9, 18]), false);
  assert.equal(isSupported([2, 7, 18]), false);
});

test("a missing command, an old Python and a good one are told apart, in order", async () => {
  const runner: Runner = (command) => {
    if (command[0] === "python3") return Promise.resolve({ stdout: "", stderr: "", spawnError: "ENOENT", exitCode: null });
    if (command[0] === "old") {
      return Promise.resolve({ stdout: probeLine([3, 8, 10], "/usr/bin/python3.8"), stderr: "", exitCode: 0 });
    }
    return Promise.resolve({ stdout: probeLine([3, 11, 2], "/usr/bin/python3.11"), stderr: "", exitCode: 0 });
  };
  const result = await findWorkingInterpreter([cand("python3"), cand("old"), cand("python")], runner);
  assert.equal(result.found?.info.executable, "/usr/bin/python3.11");
  assert.deepEqual(
    result.failures.map((f) => f.reason),
    ["missing", "too-old"],
  );
  assert.match(result.failures[0].message, /`python3` was not found/);
  assert.match(result.failures[1].message, /`old` is Python 3\.8\.10; graphlife needs Python 3\.10 or newer/);
});

test("Python 2 fails on the probe with a SyntaxError and is called too old", async () => {
  const runner: Runner = () =>
    Promise.resolve({ stdout: "", stderr: '  File "<string>", line 1\nSyntaxError: invalid syntax', exitCode: 1 });
  const result = await probeInterpreter(cand("python"), runner);
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.reason, "too-old");
});

test("a command that is not Python is called broken with its output", async () => {
  const runner: Runner = () => Promise.resolve({ stdout: "", stderr: "bash: -I: invalid option", exitCode: 2 });
  const result = await probeInterpreter(cand("bash"), runner);
  assert.ok(!result.ok);
  assert.equal(result.reason, "broken");
  assert.match(result.message, /did not run as Python: bash: -I: invalid option/);
});

test("the real probe runs on this machine's python3 and on a missing command", async (t) => {
  try {
    execFileSync("python3", ["--version"]);
  } catch {
    t.skip("no python3 on PATH");
    return;
  }
  const good = await probeInterpreter(cand("python3"));
  assert.ok(good.ok, !good.ok ? good.message : "");
  assert.ok(good.info.version[0] === 3);
  const out = execFileSync("python3", ["-I", "-c", PROBE_CODE]).toString();
  assert.deepEqual(parseProbeOutput(out)?.version, good.info.version);
  const missing = await probeInterpreter(cand("/nonexistent/python3"));
  assert.ok(!missing.ok);
  assert.equal(missing.reason, "missing");
});
