import assert from "node:assert/strict";
import { test } from "node:test";

import { layout, renderSvg } from "../../src/debug/graphLayout";
import { exceptionHtml, graphHtml } from "../../src/debug/panelHtml";
import type { GraphDrawing } from "../../src/debug/snapshot";
import { loadGraph, loadSnapshot } from "./fixtures";

test("every edge runs down from a node to a deeper layer, nodes do not overlap", () => {
  const g = loadGraph();
  const placed = layout(g);
  assert.equal(placed.nodes.size, g.nodes.length);
  for (const [a, b] of g.edges) assert.ok(placed.nodes.get(a)!.layer < placed.nodes.get(b)!.layer, `${a}->${b}`);
  const byLayer = new Map<number, { x: number; width: number }[]>();
  for (const p of placed.nodes.values()) (byLayer.get(p.layer) ?? byLayer.set(p.layer, []).get(p.layer)!).push(p);
  for (const row of byLayer.values()) {
    row.sort((p, q) => p.x - q.x);
    for (let i = 1; i < row.length; i++) assert.ok(row[i - 1].x + row[i - 1].width <= row[i].x);
  }
  for (const p of placed.nodes.values()) assert.ok(p.x >= 0 && p.x + p.width <= placed.width);
  assert.equal(placed.nodes.get(g.root!)!.layer, 0);
});

test("the picture marks freed and ok nodes and names the leaves", () => {
  const svg = renderSvg(loadGraph());
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.includes('data-state="freed"'));
  assert.ok(svg.includes('data-state="ok"'));
  assert.ok(svg.includes("AccumulateGrad (lstm.weight_ih_l0)"));
  assert.equal((svg.match(/<g class="node"/g) ?? []).length, loadGraph().nodes.length);
  assert.equal((svg.match(/<line class="edge"/g) ?? []).length, loadGraph().edges.length);
});

test("labels are escaped and a diamond is laid out in three layers", () => {
  const g: GraphDrawing = {
    name: "<x>", root: 0, truncated: false,
    nodes: [
      { id: 0, name: "Add<&>", seq: 3, state: "none", saved: [] },
      { id: 1, name: "Mul", seq: 2, state: "modified", saved: [{ attr: "self", state: "modified", shape: [2], owner: "a<b" }] },
      { id: 2, name: "Exp", seq: 1, state: "ok", saved: [] },
      { id: 3, name: "AccumulateGrad (w)", seq: -1, state: "leaf", saved: [] },
    ],
    edges: [[0, 1], [0, 2], [1, 3], [2, 3], [0, 3]],
  };
  const placed = layout(g);
  assert.deepEqual([0, 1, 2, 3].map((i) => placed.nodes.get(i)!.layer), [0, 1, 1, 2]);
  const svg = renderSvg(g);
  assert.ok(svg.includes("Add&lt;&amp;&gt;") && !svg.includes("Add<&>"));
  assert.ok(svg.includes("= a&lt;b"));
  const html = graphHtml(g);
  assert.ok(html.includes("Content-Security-Policy") && html.includes("&lt;x&gt;") && !html.includes("<script"));
});

test("the exception panel shows torch's words, why, fix and what a backward would do now", () => {
  const html = exceptionHtml(loadSnapshot());
  assert.ok(html.includes("<h1>GL102 inplace-modifies-saved-tensor</h1>"));
  assert.ok(html.includes("<h2>Fix</h2>"));
  assert.ok(html.includes("<code>gate</code>"));
  assert.ok(html.includes("<code>loss</code>: GL101"));
});
