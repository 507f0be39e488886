// The DAP glue against a fake session: what it asks debugpy, when, and what it shows.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { probeCandidates } from "../../src/debug/probeExpression";
import type { Snapshot } from "../../src/debug/snapshot";
import { buildRows } from "../../src/debug/viewModel";
import { fake, installFakeVscode, recorded } from "./fakeVscode";
import { loadGraph, snapshotText } from "./fixtures";

installFakeVscode();

function repoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, "server", "graphlife", "debug", "probe.py"))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("repository root not found");
    dir = up;
  }
  return dir;
}

const TORCH_FRAME = { id: 1, line: 979, source: { path: "/venv/lib/python3.11/site-packages/torch/autograd/graph.py" } };
const USER_FRAME = { id: 7, line: 23, source: { path: "/work/train.py" } };

interface Request { command: string; args: Record<string, unknown> }

function fakeSession(id: string, evaluate: (args: Record<string, unknown>) => Promise<{ result: string }>) {
  const requests: Request[] = [];
  return {
    id,
    type: "debugpy",
    requests,
    customRequest(command: string, args: Record<string, unknown> = {}) {
      requests.push({ command, args });
      if (command === "threads") return Promise.resolve({ threads: [{ id: 3 }] });
      if (command === "stackTrace") return Promise.resolve({ stackFrames: [TORCH_FRAME, USER_FRAME] });
      if (command === "exceptionInfo") return Promise.resolve({ description: (JSON.parse(snapshotText()) as Snapshot).exception?.message });
      if (command === "evaluate") return evaluate(args);
      return Promise.reject(new Error(`unexpected ${command}`));
    },
  };
}

async function setup(visible = true) {
  const { AutogradInspector } = await import("../../src/debug/inspector");
  const { AutogradTreeProvider } = await import("../../src/debug/treeProvider");
  const tree = new AutogradTreeProvider();
  const view = { visible, message: undefined as string | undefined, description: undefined as string | undefined };
  const log = { warn: (m: string) => recorded.errors.push(m), info: () => undefined, debug: () => undefined };
  const inspector = new AutogradInspector(repoRoot(), log as never, tree, view as never);
  return { inspector, tree, view };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
const stopped = (reason: string, threadId?: number) => ({ type: "event", event: "stopped", body: { reason, threadId } });

test("a breakpoint stop evaluates the probe in the top user frame with repl + rawString", async () => {
  const { inspector, tree, view } = await setup();
  const session = fakeSession("s1", () => Promise.resolve({ result: snapshotText() }));
  const tracker = inspector.tracker(session as never);
  tracker.onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  const evaluate = session.requests.find((r) => r.command === "evaluate")!;
  assert.equal(evaluate.args.frameId, USER_FRAME.id);
  assert.equal(evaluate.args.context, "repl");
  assert.deepEqual(evaluate.args.format, { rawString: true });
  const probe = probeCandidates(repoRoot()).find((p) => fs.existsSync(p))!;  // bundled/ when built, else server/
  assert.equal(evaluate.args.expression, `__import__('runpy').run_path(${JSON.stringify(probe)})['snapshot_json']({**globals(), **locals()})`);
  assert.ok(!session.requests.some((r) => r.command === "exceptionInfo"));
  const rows = tree.getChildren();
  assert.deepEqual(rows.map((r) => r.id), buildRows(JSON.parse(snapshotText()) as Snapshot).map((r) => r.id));
  assert.match(view.description ?? "", /tensors · \d+ would fail/);
  const item = tree.getTreeItem(rows.find((r) => r.label === "loss")!);
  assert.equal((item.iconPath as { id: string }).id, "error");
  assert.equal(item.contextValue, "graphlife.tensor");

  tracker.onWillReceiveMessage!({ type: "request", command: "next" });
  assert.deepEqual(tree.getChildren(), []);  // cleared as soon as the program moves
});

test("the probe explains in graphlife's language: VS Code's display language, unless graphlife.language says otherwise", async () => {
  const { inspector } = await setup();
  const expressionFor = async (id: string) => {
    const session = fakeSession(id, () => Promise.resolve({ result: snapshotText() }));
    inspector.tracker(session as never).onDidSendMessage!(stopped("breakpoint", 3));
    await settle();
    return session.requests.find((r) => r.command === "evaluate")!.args.expression as string;
  };
  try {
    fake.env.language = "zh-cn";
    assert.match(await expressionFor("zh1"), /\['snapshot_json'\]\(\{\*\*globals\(\), \*\*locals\(\)\}, language="zh-cn"\)$/);
    fake.workspace.settings["graphlife.language"] = "en";
    assert.match(await expressionFor("zh2"), /\['snapshot_json'\]\(\{\*\*globals\(\), \*\*locals\(\)\}\)$/);
    fake.env.language = "en";
    fake.workspace.settings["graphlife.language"] = "zh-cn";
    assert.match(await expressionFor("zh3"), /language="zh-cn"\)$/);
  } finally {
    fake.env.language = "en";
    delete fake.workspace.settings["graphlife.language"];
  }
});

test("an exception stop passes the message, leads with the explanation and adds the hover", async () => {
  recorded.hovers.length = 0;
  recorded.commands.length = 0;
  const { inspector, tree } = await setup();
  const session = fakeSession("s2", () => Promise.resolve({ result: snapshotText() }));
  const tracker = inspector.tracker(session as never);
  tracker.onDidSendMessage!(stopped("exception"));  // no threadId: asks for threads
  await settle();
  assert.deepEqual(session.requests.slice(0, 3).map((r) => r.command), ["threads", "exceptionInfo", "stackTrace"]);
  const evaluate = session.requests.find((r) => r.command === "evaluate")!;
  assert.match(String(evaluate.args.expression), /, exception="one of the variables needed for gradient computation/);
  assert.equal(tree.getChildren()[0].id, "exception");
  assert.deepEqual(recorded.commands, ["graphlife.autograd.focus"]);
  const hover = recorded.hovers[0];
  const doc = { uri: { fsPath: USER_FRAME.source.path } };
  const shown = hover.provider.provideHover(doc, { line: USER_FRAME.line - 1 }) as { contents: { value: string } };
  assert.match(shown.contents.value, /^\*\*GL102 inplace-modifies-saved-tensor\*\*/);
  assert.equal(hover.provider.provideHover(doc, { line: USER_FRAME.line }), undefined);
  assert.equal(hover.provider.provideHover({ uri: { fsPath: "/other.py" } }, { line: USER_FRAME.line - 1 }), undefined);

  inspector.explainException();
  assert.match(recorded.panels.at(-1)!.webview.html, /<h1>GL102 inplace-modifies-saved-tensor<\/h1>/);

  tracker.onDidSendMessage!({ type: "event", event: "continued", body: {} });
  assert.equal(hover.disposed, true);
  assert.deepEqual(tree.getChildren(), []);
});

test("nothing is evaluated while the view is hidden; it catches up when shown", async () => {
  const { inspector, tree } = await setup(false);
  const session = fakeSession("s3", () => Promise.resolve({ result: snapshotText() }));
  inspector.tracker(session as never).onDidSendMessage!(stopped("step", 3));
  await settle();
  assert.ok(!session.requests.some((r) => r.command === "evaluate"));
  inspector.onVisible();
  await settle();
  assert.equal(session.requests.filter((r) => r.command === "evaluate").length, 1);
  assert.ok(tree.getChildren().length > 0);
});

test("a result that arrives after the program moved on is dropped", async () => {
  const { inspector, tree } = await setup();
  let release!: (v: { result: string }) => void;
  const session = fakeSession("s4", () => new Promise((resolve) => (release = resolve)));
  const tracker = inspector.tracker(session as never);
  tracker.onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  tracker.onWillReceiveMessage!({ type: "request", command: "continue" });
  release({ result: snapshotText() });
  await settle();
  assert.deepEqual(tree.getChildren(), []);
});

test("another session's continue does not clear this stop; a probe error is shown, not thrown", async () => {
  const { inspector, tree, view } = await setup();
  const session = fakeSession("s5", () => Promise.resolve({ result: snapshotText() }));
  inspector.tracker(session as never).onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  const other = fakeSession("other", () => Promise.resolve({ result: "" }));
  inspector.tracker(other as never).onWillReceiveMessage!({ type: "request", command: "continue" });
  assert.ok(tree.getChildren().length > 0);

  const broken = fakeSession("s6", () => Promise.resolve({ result: "'Traceback ... NameError'" }));
  inspector.tracker(broken as never).onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  assert.match(view.message ?? "", /Could not read the autograd graph: Error: the probe did not return JSON/);
  assert.equal(tree.getChildren()[0].id, "status");
});

test("draw graph evaluates graph_json for the row's tensor and shows an SVG", async () => {
  const { inspector } = await setup();
  const graph = JSON.stringify(loadGraph());
  const session = fakeSession("s7", (args) =>
    Promise.resolve({ result: String(args.expression).includes("graph_json") ? graph : snapshotText() }));
  inspector.tracker(session as never).onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  await inspector.drawGraph({ id: "tensor/loss", label: "loss", icon: "error", children: [], tensorName: "loss" });
  const call = session.requests.filter((r) => r.command === "evaluate").at(-1)!;
  assert.match(String(call.args.expression), /\['graph_json'\]\(\{\*\*globals\(\), \*\*locals\(\)\}, "loss"\)$/);
  const panel = recorded.panels.at(-1)!;
  assert.equal(panel.title, "Autograd: loss");
  assert.match(panel.webview.html, /<svg xmlns=/);
  assert.ok(fake.window);
});

test("a session started before activation is followed through the focused frame", async () => {
  const { inspector, tree } = await setup();
  const session = fakeSession("early", () => Promise.resolve({ result: snapshotText() }));
  inspector.onActiveStackItem({ session, threadId: 3, frameId: USER_FRAME.id } as never);
  await settle();
  const evaluate = session.requests.find((r) => r.command === "evaluate")!;
  assert.equal(evaluate.args.frameId, USER_FRAME.id);
  assert.ok(!session.requests.some((r) => r.command === "exceptionInfo"));  // debugpy would log a traceback
  assert.ok(tree.getChildren().length > 1);
  inspector.onActiveStackItem({ session, threadId: 3 } as never);  // a thread, no frame: running again
  assert.deepEqual(tree.getChildren(), []);
  const node = fakeSession("node", () => Promise.resolve({ result: snapshotText() }));
  inspector.onActiveStackItem({ session: { ...node, type: "node" }, threadId: 1, frameId: 1 } as never);
  await settle();
  assert.equal(node.requests.length, 0);  // other debuggers are left alone
});

test("picking another frame of a tracked stop probes that frame", async () => {
  const { inspector } = await setup();
  const session = fakeSession("s8", () => Promise.resolve({ result: snapshotText() }));
  inspector.tracker(session as never).onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  inspector.onActiveStackItem({ session, threadId: 3, frameId: USER_FRAME.id } as never);  // the same frame: nothing
  inspector.onActiveStackItem({ session, threadId: 3, frameId: 42 } as never);
  await settle();
  const frames = session.requests.filter((r) => r.command === "evaluate").map((r) => r.args.frameId);
  assert.deepEqual(frames, [USER_FRAME.id, 42]);
});

test("a debuggee that cannot read probe.py gets the source inline, from then on", async () => {
  const { inspector, tree } = await setup();
  const session = fakeSession("remote", (args) => {
    const expression = String(args.expression);
    if (expression.startsWith("__import__('runpy')")) {
      return Promise.reject(new Error("FileNotFoundError: [Errno 2] No such file or directory: '/ext/probe.py'"));
    }
    return Promise.resolve({ result: snapshotText() });
  });
  const tracker = inspector.tracker(session as never);
  tracker.onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  assert.ok(tree.getChildren().length > 1, JSON.stringify(tree.getChildren()).slice(0, 300) + recorded.errors.slice(-2).join(" | "));
  tracker.onWillReceiveMessage!({ type: "request", command: "next" });
  tracker.onDidSendMessage!(stopped("step", 3));
  await settle();
  const kinds = session.requests.filter((r) => r.command === "evaluate").map((r) => String(r.args.expression).startsWith("(lambda g:") ? "inline" : "path");
  assert.deepEqual(kinds, ["path", "inline", "inline"]);
  const inline = String(session.requests.filter((r) => r.command === "evaluate")[1].args.expression);
  assert.match(inline, /^\(lambda g: \(exec\(compile\(".*", ".*probe\.py", 'exec'\), g\), g\)\[1\]\)\(\{'__name__': '<graphlife-probe>'\}\)\['snapshot_json'\]\(\{\*\*globals\(\), \*\*locals\(\)\}\)$/s);
  assert.ok(inline.includes("def snapshot_json("));
});

test("the drawn graph is marked stale when the program runs on and redrawn at the next stop", async () => {
  const { inspector } = await setup();
  const graph = JSON.stringify(loadGraph());
  const session = fakeSession("s9", (args) =>
    Promise.resolve({ result: String(args.expression).includes("graph_json") ? graph : snapshotText() }));
  const tracker = inspector.tracker(session as never);
  tracker.onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  await inspector.drawGraph({ id: "tensor/loss", label: "loss", icon: "error", children: [], tensorName: "loss" });
  const panel = recorded.panels.at(-1)!;
  assert.doesNotMatch(panel.webview.html, /from the last stop/);

  tracker.onDidSendMessage!({ type: "event", event: "continued", body: {} });
  assert.match(panel.webview.html, /The program ran on: this picture is from the last stop/);
  assert.match(panel.webview.html, /<svg xmlns=/, "the old picture stays visible under the note");

  const draws = () => session.requests.filter((r) => typeof r.args.expression === "string" && r.args.expression.includes("graph_json")).length;
  const before = draws();
  tracker.onDidSendMessage!(stopped("breakpoint", 3));
  await settle();
  assert.equal(draws(), before + 1, "redrawn at the next stop");
  assert.doesNotMatch(panel.webview.html, /from the last stop/);
});
