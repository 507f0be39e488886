import assert from "node:assert/strict";
import { test } from "node:test";

import { evaluateArguments, graphExpression, isUserFrame, localPath, probeCandidates, pyString, snapshotExpression } from "../../src/debug/probeExpression";

test("the probe is looked up in the bundled layout first, then the repository layout", () => {
  assert.deepEqual(probeCandidates("/ext"), ["/ext/bundled/graphlife/debug/probe.py", "/ext/server/graphlife/debug/probe.py"]);
});

test("expressions bind no name and quote paths and messages safely", () => {
  const expr = snapshotExpression("/a b/it's/probe.py", 'bad "quote"\nnext');
  assert.equal(expr, `__import__('runpy').run_path("/a b/it's/probe.py")['snapshot_json']({**globals(), **locals()}, exception="bad \\"quote\\"\\nnext")`);
  assert.doesNotMatch(expr, /^\s*\w+\s*=|:=/);
  assert.equal(graphExpression("/p.py", "losses['a']"), `__import__('runpy').run_path("/p.py")['graph_json']({**globals(), **locals()}, "losses['a']")`);
  assert.equal(pyString("é\u2028"), '"é\u2028"');
});

test("evaluate uses the repl context with rawString so debugpy returns the whole JSON", () => {
  assert.deepEqual(evaluateArguments("x", 7), { expression: "x", frameId: 7, context: "repl", format: { rawString: true } });
});

test("user frames are told from library frames", () => {
  assert.ok(isUserFrame("/home/me/train.py"));
  assert.ok(!isUserFrame("/venv/lib/python3.11/site-packages/torch/_tensor.py"));
  assert.ok(!isUserFrame("/usr/lib/python3.11/runpy.py"));
  assert.ok(!isUserFrame(undefined));
});

test("remote windows give frame paths as URIs; the hover compares file paths", () => {
  assert.equal(localPath("vscode-remote://127.0.0.1:39167/tmp/ws/train%20it.py"), "/tmp/ws/train it.py");
  assert.equal(localPath("/tmp/ws/train.py"), "/tmp/ws/train.py");
  assert.equal(localPath("C:\\work\\train.py"), "C:\\work\\train.py");
});
