// The "Autograd" view as plain data: what each row says, its icon, its children.
// No `vscode` import, so node's test runner checks it from a recorded snapshot;
// treeProvider.ts only maps these rows to TreeItems.

import { t as tr } from "../l10n";
import { firstSentence, formatBytes, formatNorm, formatShape } from "./format";
import { stateText } from "./stateText";
import type { ContainerRecord, SavedRecord, Snapshot, TensorRecord } from "./snapshot";

export type RowIcon =
  | "error" | "warning" | "info" | "tensor" | "leaf" | "container" | "exception"
  | "saved-ok" | "saved-modified" | "saved-freed" | "saved-hooked" | "prediction-ok" | "note";

export interface Row {
  id: string;
  label: string;
  description?: string;
  /** Markdown for the hover over the row. */
  tooltip?: string;
  icon: RowIcon;
  /** `graphlife.tensor` rows can be drawn (graphlife.autograd.drawGraph). */
  contextValue?: "graphlife.tensor" | "graphlife.container" | "graphlife.exception" | "graphlife.detail";
  tensorName?: string;
  expanded?: boolean;
  children: Row[];
}

const SAVED_LISTED = 12;

function severityIcon(severity: string | null, fallback: RowIcon): RowIcon {
  if (severity === "error") return "error";
  if (severity === "warning") return "warning";
  if (severity === "information") return "info";
  return fallback;
}

function detail(id: string, label: string, description?: string, icon: RowIcon = "note", tooltip?: string): Row {
  return { id, label, description, icon, tooltip, contextValue: "graphlife.detail", children: [] };
}

export function tensorDescription(t: TensorRecord): string {
  const parts = [`${t.dtype ?? "?"}${formatShape(t.shape)}`];
  if (t.grad_fn) parts.push(t.grad_fn);
  else if (t.requires_grad) parts.push(t.is_parameter ? tr("parameter") : tr("leaf"));
  if (t.version) parts.push(`v${t.version}`);
  if (t.device && t.device !== "cpu") parts.push(t.device);
  if (t.is_inference) parts.push(tr("inference"));
  if (t.graph) parts.push(tr("{0} nodes", t.graph.nodes));
  return parts.join(" · ");
}

function savedRow(parent: string, s: SavedRecord, index: number): Row {
  const label = `${s.node}.${s.attr}`;
  const bits: string[] = [stateText(s.state)];
  if (s.shape) bits.push(formatShape(s.shape));
  if (s.owner) bits.push(`= ${s.owner}`);
  if (s.state === "modified" && s.saved_version !== null) bits.push(tr("saved at v{0}, now v{1}", s.saved_version, s.version ?? "?"));
  const icon = ({ ok: "saved-ok", modified: "saved-modified", freed: "saved-freed", hooked: "saved-hooked" } as const)[s.state];
  const tooltip = s.message ? tr("torch: {0}", `\`${firstSentence(s.message)}\``) : undefined;
  return detail(`${parent}/saved/${index}`, label, bits.join(" · "), icon, tooltip);
}

function predictionRow(id: string, t: TensorRecord): Row | undefined {
  const p = t.backward_prediction;
  if (!p) return undefined;
  if (p.ok && !t.graph) return undefined;
  if (p.reason === "non_scalar") {
    // Not a bug: backward() of a tensor with several elements takes the gradient to start from.
    return detail(`${id}/prediction`, tr("backward() needs a gradient argument"), tr("{0} is not a scalar", formatShape(t.shape)), "info", p.explanation);
  }
  const label = p.ok ? tr("backward() would run") : tr("backward() would raise {0}", p.code ?? p.error ?? tr("an error"));
  const where = p.node ? tr(" at {0}", p.node) : "";
  const blame = p.blame && !p.ok ? tr(" — blame {0}", p.blame) : "";
  const tooltip = [p.explanation, p.message ? `\n\n${tr("torch will say: {0}", `\`${firstSentence(p.message)}\``)}` : ""].join("");
  return detail(`${id}/prediction`, label + where, (p.ok ? "" : p.reason) + blame, p.ok ? "prediction-ok" : "error", tooltip);
}

export function tensorRow(t: TensorRecord, onCurrentLine = false): Row {
  const id = `tensor/${t.name}`;
  const children: Row[] = [];
  const prediction = predictionRow(id, t);
  if (prediction) children.push(prediction);
  if (t.graph) {
    const g = t.graph;
    const counts = Object.entries<number>(g.states).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${stateText(k)}`);
    children.push(
      detail(`${id}/graph`, tr("graph: {0} nodes, {1} saved", `${g.nodes}${g.nodes_truncated ? "+" : ""}`, g.saved_count),
        tr("{0} · keeps {1}", counts.join(", ") || tr("none"), formatBytes(g.activation_bytes))),
    );
    g.saved.slice(0, SAVED_LISTED).forEach((s, i) => children.push(savedRow(id, s, i)));
    if (g.saved_count > SAVED_LISTED) children.push(detail(`${id}/more`, tr("… {0} more saved tensors", g.saved_count - SAVED_LISTED)));
  }
  if (t.grad) {
    const norm = formatNorm(t.grad.norm);
    children.push(detail(`${id}/grad`, `.grad${norm}`, formatShape(t.grad.shape)));
  }
  if (t.aliases.length) children.push(detail(`${id}/aliases`, tr("also named"), t.aliases.join(", ")));
  const tooltip = [
    `**${t.name}**: ${tensorDescription(t)}`,
    `requires_grad=${t.requires_grad}, is_leaf=${t.is_leaf}, retains_grad=${t.retains_grad}, version=${t.version ?? "n/a"}`,
    t.backward_prediction && !t.backward_prediction.ok ? t.backward_prediction.explanation : "",
  ].filter(Boolean).join("\n\n");
  return {
    id,
    label: t.name,
    description: (onCurrentLine ? tr("this line · ") : "") + tensorDescription(t),
    tooltip,
    icon: severityIcon(t.severity, t.grad_fn ? "tensor" : "leaf"),
    contextValue: "graphlife.tensor",
    tensorName: t.name,
    expanded: t.severity === "error",
    children,
  };
}

export function containerRow(c: ContainerRecord): Row {
  const id = `container/${c.name}`;
  return {
    id,
    label: c.name,
    description: [
      c.kind,
      c.graphs === 1 ? tr("1 graph") : tr("{0} graphs", c.graphs),
      tr("{0} nodes", c.nodes),
      tr("keeps {0}", formatBytes(c.activation_bytes)),
    ].join(" · "),
    tooltip: c.explanation,
    icon: severityIcon(c.severity, "container"),
    contextValue: "graphlife.container",
    expanded: false,
    children: [detail(`${id}/why`, c.explanation), detail(`${id}/count`, tr("{0} graph-carrying tensors", c.tensors), tr("{0} items", c.items))],
  };
}

export function exceptionRow(snap: Snapshot): Row | undefined {
  const e = snap.exception;
  if (!e) return undefined;
  const title = e.code ? `${e.code} ${e.name}` : tr("exception (not an autograd error graphlife knows)");
  const children = [detail("exception/torch", tr("torch said"), firstSentence(e.message), "note", e.message)];
  if (e.why) children.push(detail("exception/why", tr("why"), e.why, "note", e.why));
  if (e.fix) children.push(detail("exception/fix", tr("fix"), e.fix, "note", e.fix));
  if (e.blame) children.push(detail("exception/blame", tr("the live objects point at"), e.blame, "error"));
  return {
    id: "exception",
    label: title,
    description: firstSentence(e.message),
    tooltip: exceptionMarkdown(snap) ?? undefined,
    icon: "exception",
    contextValue: "graphlife.exception",
    expanded: true,
    children,
  };
}

/** The explanation of the exception the program stopped on, as markdown (hover and panel). */
export function exceptionMarkdown(snap: Snapshot): string | undefined {
  const e = snap.exception;
  if (!e) return undefined;
  const lines = [
    e.code ? tr("**{0} {1}** (error)", e.code, e.name ?? "") : `**${tr("Not an autograd error graphlife knows")}**`,
    "",
    `## ${tr("What torch says")}`,
    "`" + firstSentence(e.message) + "`",
  ];
  if (e.why) lines.push("", `## ${tr("Why")}`, e.why);
  if (e.fix) lines.push("", `## ${tr("Fix")}`, e.fix);
  if (e.blame) lines.push("", tr("The live objects point at {0}.", `\`${e.blame}\``));
  return lines.join("\n");
}

/** The name a tensor's path starts with: `hidden[0]` -> `hidden`, `d['k']` -> `d`, `self.h` -> `self.h`. */
export function rootName(name: string): string {
  const match = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/.exec(name);
  return match ? match[0] : name;
}

/** Whether the source line names the tensor (its root name as a whole word, not inside a longer name). */
export function namedOnLine(name: string, line: string | undefined): boolean {
  if (!line) return false;
  const code = line.split("#", 1)[0];
  const root = rootName(name).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![A-Za-z0-9_.])${root}(?![A-Za-z0-9_])`).test(code);
}

/**
 * All rows of the view: the exception first, then the tensors that would fail, the
 * tensors the stopped line names (what the user is looking at), other problems,
 * leaking containers, the rest. `currentLine`: the source text of the stopped line.
 */
export function buildRows(snap: Snapshot | undefined, status?: string, currentLine?: string): Row[] {
  if (!snap) return status ? [detail("status", status)] : [];
  if (snap.torch === null) return [detail("status", tr("torch is not imported in this program"))];
  const rows: Row[] = [];
  const exc = exceptionRow(snap);
  if (exc) rows.push(exc);
  const here = (t: TensorRecord) => namedOnLine(t.name, currentLine);
  const failing = snap.tensors.filter((t) => t.severity === "error");
  const onLine = snap.tensors.filter((t) => t.severity !== "error" && here(t));
  const flagged = snap.tensors.filter((t) => t.severity !== null && t.severity !== "error" && !here(t));
  const withGraph = snap.tensors.filter((t) => t.severity === null && t.graph !== null && !here(t));
  const rest = snap.tensors.filter((t) => t.severity === null && t.graph === null && !here(t));
  rows.push(...failing.map((t) => tensorRow(t, here(t))));
  rows.push(...onLine.map((t) => tensorRow(t, true)));
  rows.push(...flagged.map((t) => tensorRow(t)));
  const leaking = snap.containers.filter((c) => c.leak);
  rows.push(...leaking.map(containerRow));
  rows.push(...withGraph.map((t) => tensorRow(t)));
  const quiet = snap.containers.filter((c) => !c.leak);
  if (quiet.length) {
    rows.push({ id: "group/containers", label: tr("Other containers with graphs ({0})", quiet.length), icon: "container", children: quiet.map(containerRow) });
  }
  if (rest.length) {
    rows.push({ id: "group/plain", label: tr("Tensors without a graph ({0})", rest.length), icon: "leaf", children: rest.map((t) => tensorRow(t)) });
  }
  if (snap.truncated) rows.push(detail("truncated", tr("stopped early"), tr("{0} limit; the view is partial", snap.limits_hit.join(", ")), "warning"));
  if (rows.length === 0) rows.push(detail("empty", tr("no tensors in this frame")));
  return rows;
}

/** One line for the view's description (the status under its title). */
export function summary(snap: Snapshot | undefined): string {
  if (!snap) return "";
  const errors = snap.tensors.filter((t) => t.severity === "error").length;
  const leaks = snap.containers.filter((c) => c.leak).length;
  const parts = [tr("{0} tensors", snap.tensors.length)];
  if (errors) parts.push(tr("{0} would fail", errors));
  if (leaks) parts.push(leaks === 1 ? tr("1 leaking container") : tr("{0} leaking containers", leaks));
  return parts.join(" · ");
}
