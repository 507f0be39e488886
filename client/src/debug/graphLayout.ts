// The autograd graph as a picture, without Graphviz: a layered layout (each node
// one layer below its deepest parent, so the root is on top and edges run down),
// one barycenter sweep to reduce crossings, then plain SVG. Pure, for node tests.

import { t } from "../l10n";
import { escapeHtml, formatShape } from "./format";
import { stateText } from "./stateText";
import type { GraphDrawing } from "./snapshot";

export interface PlacedNode {
  id: number;
  layer: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Layout {
  nodes: Map<number, PlacedNode>;
  width: number;
  height: number;
}

const NODE_HEIGHT = 30;
const LAYER_GAP = 56;
const NODE_GAP = 18;
const MARGIN = 20;
const CHAR_WIDTH = 7.2;

/** The drawn width of a label: a CJK character (U+2E80 and up, as in the Chinese legend) is about twice a Latin one. */
function textWidth(text: string): number {
  let width = 0;
  for (const char of text) width += (char.codePointAt(0) ?? 0) >= 0x2e80 ? 2 * CHAR_WIDTH : CHAR_WIDTH;
  return width;
}

export function layout(g: GraphDrawing): Layout {
  const ids = g.nodes.map((n) => n.id);
  const children = new Map<number, number[]>(ids.map((id) => [id, []]));
  const parents = new Map<number, number[]>(ids.map((id) => [id, []]));
  for (const [a, b] of g.edges) {
    if (!children.has(a) || !children.has(b) || a === b) continue;
    children.get(a)!.push(b);
    parents.get(b)!.push(a);
  }
  // Longest path from the roots, in topological order (Kahn); a cycle (never in autograd) is cut.
  const indegree = new Map(ids.map((id) => [id, parents.get(id)!.length]));
  const layer = new Map<number, number>();
  const queue = ids.filter((id) => indegree.get(id) === 0);
  for (const id of queue) layer.set(id, 0);
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    for (const c of children.get(id)!) {
      layer.set(c, Math.max(layer.get(c) ?? 0, layer.get(id)! + 1));
      indegree.set(c, indegree.get(c)! - 1);
      if (indegree.get(c) === 0) queue.push(c);
    }
  }
  for (const id of ids) if (!layer.has(id)) layer.set(id, 0);

  const layers: number[][] = [];
  for (const id of ids) (layers[layer.get(id)!] ??= []).push(id);
  const order = new Map<number, number>();
  layers.forEach((row, depth) => {
    if (depth > 0) {
      const bary = (id: number) => {
        const ps = parents.get(id)!.filter((p) => order.has(p));
        return ps.length ? ps.reduce((s, p) => s + order.get(p)!, 0) / ps.length : Number.MAX_SAFE_INTEGER;
      };
      row.sort((a, b) => bary(a) - bary(b) || a - b);
    }
    row.forEach((id, i) => order.set(id, i));
  });

  const label = new Map(g.nodes.map((n) => [n.id, n.name]));
  const widthOf = (id: number) => Math.max(80, Math.ceil((label.get(id) ?? "").length * CHAR_WIDTH) + 20);
  const rowWidths = layers.map((row) => row.reduce((s, id) => s + widthOf(id), 0) + NODE_GAP * Math.max(0, row.length - 1));
  const width = Math.max(200, ...rowWidths) + 2 * MARGIN;
  const placed = new Map<number, PlacedNode>();
  layers.forEach((row, depth) => {
    let x = MARGIN + (width - 2 * MARGIN - rowWidths[depth]) / 2;
    for (const id of row) {
      const w = widthOf(id);
      placed.set(id, { id, layer: depth, x, y: MARGIN + depth * (NODE_HEIGHT + LAYER_GAP), width: w, height: NODE_HEIGHT });
      x += w + NODE_GAP;
    }
  });
  const height = 2 * MARGIN + layers.length * NODE_HEIGHT + Math.max(0, layers.length - 1) * LAYER_GAP;
  return { nodes: placed, width, height };
}

export const STATE_STYLE: Record<string, { fill: string; stroke: string; dash?: string }> = {
  ok: { fill: "#e8f5e9", stroke: "#2e7d32" },
  modified: { fill: "#ffebee", stroke: "#c62828" },
  freed: { fill: "#eeeeee", stroke: "#757575", dash: "5 3" },
  hooked: { fill: "#f3e5f5", stroke: "#6a1b9a" },
  leaf: { fill: "#e3f2fd", stroke: "#1565c0" },
  none: { fill: "#fafafa", stroke: "#9e9e9e" },
};

/** The SVG picture: nodes coloured by the state of what they saved (legend included). */
export function renderSvg(g: GraphDrawing): string {
  const placed = layout(g);
  const legendHeight = 28;
  const out: string[] = [];
  const w = Math.max(placed.width, 720);
  const h = placed.height + legendHeight;
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="monospace" font-size="12">`);
  out.push(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#888"/></marker></defs>`);
  let lx = 10;
  for (const state of ["ok", "modified", "freed", "hooked", "leaf"]) {
    const s = STATE_STYLE[state];
    const words = state === "leaf" ? t("leaf (AccumulateGrad)") : t("saved {0}", stateText(state));
    const text = escapeHtml(words);
    out.push(`<rect x="${lx}" y="6" width="14" height="14" fill="${s.fill}" stroke="${s.stroke}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`);
    out.push(`<text x="${lx + 18}" y="17" fill="currentColor">${text}</text>`);
    lx += 18 + Math.ceil(textWidth(words)) + 16;
  }
  out.push(`<g transform="translate(0 ${legendHeight})">`);
  for (const [a, b] of g.edges) {
    const p = placed.nodes.get(a);
    const c = placed.nodes.get(b);
    if (!p || !c) continue;
    out.push(`<line class="edge" x1="${(p.x + p.width / 2).toFixed(1)}" y1="${p.y + p.height}" x2="${(c.x + c.width / 2).toFixed(1)}" y2="${c.y}" stroke="#888" marker-end="url(#arrow)"/>`);
  }
  for (const n of g.nodes) {
    const p = placed.nodes.get(n.id)!;
    const s = STATE_STYLE[n.state] ?? STATE_STYLE.none;
    const saved = n.saved.map((x) => `${x.attr}: ${x.state} ${formatShape(x.shape)}${x.owner ? ` = ${x.owner}` : ""}`).join("\n");
    out.push(`<g class="node" data-state="${n.state}"><title>${escapeHtml(`${n.name}${saved ? `\n${saved}` : ""}`)}</title>`);
    out.push(`<rect x="${p.x.toFixed(1)}" y="${p.y}" width="${p.width}" height="${p.height}" rx="5" fill="${s.fill}" stroke="${s.stroke}" stroke-width="${n.state === "modified" ? 2.5 : 1.2}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`);
    out.push(`<text x="${(p.x + p.width / 2).toFixed(1)}" y="${p.y + 19}" text-anchor="middle" fill="#222">${escapeHtml(n.name)}</text></g>`);
  }
  out.push("</g></svg>");
  return out.join("\n");
}
