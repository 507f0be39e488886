import assert from "node:assert/strict";
import { test } from "node:test";

import { parseSnapshot, type TensorRecord } from "../../src/debug/snapshot";
import { buildRows, exceptionMarkdown, namedOnLine, rootName, summary, type Row } from "../../src/debug/viewModel";
import { loadSnapshot, snapshotText } from "./fixtures";

function find(rows: Row[], id: string): Row | undefined {
  for (const row of rows) {
    if (row.id === id) return row;
    const inner = find(row.children, id);
    if (inner) return inner;
  }
  return undefined;
}

test("the exception explanation leads the view, with torch's words, why, fix and the blamed tensor", () => {
  const rows = buildRows(loadSnapshot());
  const first = rows[0];
  assert.equal(first.id, "exception");
  assert.equal(first.label, "GL102 inplace-modifies-saved-tensor");
  assert.equal(first.expanded, true);
  assert.match(first.description ?? "", /^one of the variables needed for gradient computation has been modified by an inplace operation/);
  assert.doesNotMatch(first.description ?? "", /Hint:/);
  const labels = first.children.map((c) => c.label);
  assert.deepEqual(labels, ["torch said", "why", "fix", "the live objects point at"]);
  assert.equal(first.children[3].description, "gate");
});

test("tensors that would fail come before containers and quiet tensors, as errors", () => {
  const rows = buildRows(loadSnapshot());
  const tensorRows = rows.filter((r) => r.contextValue === "graphlife.tensor");
  assert.ok(tensorRows.length >= 5);
  assert.ok(tensorRows.every((r) => r.icon === "error"));
  const groupIndex = rows.findIndex((r) => r.id === "group/plain");
  const lastError = rows.map((r) => r.icon).lastIndexOf("error");
  assert.ok(groupIndex === -1 || groupIndex > lastError);
  assert.ok(rows.findIndex((r) => r.label === "loss") > 0);
});

test("a carried-state error names the carried tensor and the failing node", () => {
  const loss = find(buildRows(loadSnapshot()), "tensor/loss")!;
  assert.equal(loss.tensorName, "loss");
  assert.match(loss.description ?? "", /^float32\[\] · MeanBackward0 · \d+ nodes$/);
  const prediction = loss.children[0];
  assert.equal(prediction.label, "backward() would raise GL101 at MkldnnRnnLayerBackward0");
  assert.equal(prediction.description, "carried — blame hidden[0]");
  assert.match(prediction.tooltip ?? "", /Trying to backward through the graph a second time/);
  const saved = loss.children.filter((c) => c.id.includes("/saved/"));
  assert.ok(saved.length > 0);
  assert.equal(saved[0].icon, "saved-freed");  // problems first
  assert.ok(saved.some((s) => s.icon === "saved-ok"));
});

test("a modified saved tensor shows its versions and owner", () => {
  const snap = loadSnapshot();
  const rows = buildRows(snap);
  const modified: Row[] = [];
  const walk = (list: Row[]) => list.forEach((r) => { if (r.icon === "saved-modified") modified.push(r); walk(r.children); });
  walk(rows);
  assert.ok(modified.length > 0);
  assert.match(modified[0].label, /^SigmoidBackward0\.result$/);
  assert.match(modified[0].description ?? "", /modified · \[5, 2, 1\] · = gate · saved at v0, now v1/);
});

test("row ids are unique (VS Code keeps expansion state by id)", () => {
  const ids: string[] = [];
  const walk = (list: Row[]) => list.forEach((r) => { ids.push(r.id); walk(r.children); });
  walk(buildRows(loadSnapshot()));
  assert.equal(new Set(ids).size, ids.length);
});

test("containers, summary, empty and torch-less states", () => {
  const snap = loadSnapshot();
  const rows = buildRows(snap);
  const containers = find(rows, "group/containers");
  assert.ok(containers && containers.children.some((c) => c.label === "losses"));
  assert.match(summary(snap), /^\d+ tensors · \d+ would fail$/);
  assert.deepEqual(buildRows(undefined), []);
  assert.equal(buildRows(undefined, "Running")[0].label, "Running");
  const noTorch = parseSnapshot(JSON.stringify({ ...JSON.parse(snapshotText()), torch: null, tensors: [], containers: [] }));
  assert.equal(buildRows(noTorch)[0].label, "torch is not imported in this program");
  const leaking = parseSnapshot(JSON.stringify({
    ...JSON.parse(snapshotText()), exception: null,
    containers: [{ name: "history", kind: "list", items: 6, tensors: 6, graphs: 6, nodes: 40, saved_bytes: 4096, activation_bytes: 2048, leak: true, severity: "warning", explanation: "keeps 6 graphs" }],
  }));
  const leakRow = buildRows(leaking).find((r) => r.id === "container/history")!;
  assert.equal(leakRow.icon, "warning");
  assert.equal(leakRow.description, "list · 6 graphs · 40 nodes · keeps 2.0 KiB");
  assert.match(summary(leaking), /1 leaking container$/);
});

test("markdown for the faulting line's hover", () => {
  const md = exceptionMarkdown(loadSnapshot())!;
  assert.match(md, /^\*\*GL102 inplace-modifies-saved-tensor\*\* \(error\)/);
  assert.match(md, /## Fix\nUse the out-of-place form/);
  assert.match(md, /point at `gate`/);
});

test("the parser refuses what is not a probe snapshot", () => {
  assert.throws(() => parseSnapshot("'quoted repr'"), /did not return JSON/);
  assert.throws(() => parseSnapshot(JSON.stringify({ schema: "other" })), /unexpected probe output/);
  assert.throws(() => parseSnapshot(JSON.stringify({ schema: "graphlife.probe/1", error: "KeyError: x" })), /the probe failed: KeyError/);
});

function tensor(name: string, extra: Partial<TensorRecord> = {}): TensorRecord {
  const record: TensorRecord = {
    name, aliases: [], shape: [4, 3], dtype: "float32", device: "cpu", requires_grad: true, is_leaf: false,
    grad_fn: "MulBackward0", version: 0, grad: null, retains_grad: false, is_inference: false, is_parameter: false,
    bytes: 48, severity: null, graph: null, backward_prediction: null, ...extra,
  };
  return record;
}

const NON_SCALAR = {
  ok: false, code: null, error: "RuntimeError", message: "grad can be implicitly created only for scalar outputs",
  reason: "non_scalar" as const, node: null, blame: null, blame_all: [],
  explanation: "`act` has 12 elements; backward() needs a gradient argument.",
};

test("a non-scalar activation is neutral information, not a red 'would raise'", () => {
  const rows = buildRows({ ...loadSnapshot(), exception: null, tensors: [tensor("act", { backward_prediction: NON_SCALAR })], containers: [] });
  const act = find(rows, "tensor/act")!;
  assert.notEqual(act.icon, "error");
  const prediction = find(rows, "tensor/act/prediction")!;
  assert.equal(prediction.icon, "info");
  assert.equal(prediction.label, "backward() needs a gradient argument");
  assert.doesNotMatch(JSON.stringify(rows), /would raise|non_scalar/);
});

test("the tensors the stopped line names come first after the failing ones, marked 'this line'", () => {
  const snap = { ...loadSnapshot(), exception: null, containers: [],
    tensors: [tensor("a_graph"), tensor("broken", { severity: "error" }), tensor("x", { graph: null, grad_fn: null }), tensor("self.h"), tensor("xs[1]")] };
  const ids = (line?: string) => buildRows(snap, undefined, line).filter((r) => r.contextValue === "graphlife.tensor").map((r) => r.id);
  const order = ids("    out = self.h.relu() + xs[1]  # a_graph");
  assert.deepEqual(order.slice(0, 3), ["tensor/broken", "tensor/self.h", "tensor/xs[1]"]);
  assert.match(find(buildRows(snap, undefined, "out = self.h"), "tensor/self.h")!.description ?? "", /^this line · /);
  assert.ok(!namedOnLine("x", "y = xx + a.x"), "a longer name or an attribute of another object is not `x`");
  assert.ok(namedOnLine("x", "y = x + 1"));
  assert.equal(rootName("d['k'][0]"), "d");
});

test("a gradient whose norm is infinite or NaN (sent as a string: strict JSON) shows it", () => {
  const snap = parseSnapshot(snapshotText());
  const [first, second] = snap.tensors;
  first.grad = { shape: [2], norm: "inf" };
  second.grad = { shape: [2], norm: "nan" };
  const rows = buildRows(snap);
  assert.equal(find(rows, `tensor/${first.name}/grad`)?.label, ".grad |inf|");
  assert.equal(find(rows, `tensor/${second.name}/grad`)?.label, ".grad |nan|");
});
