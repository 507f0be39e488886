// The probe's snapshot JSON (server/graphlife/debug/probe.py documents it; schema
// "graphlife.probe/1"). Types only, plus a parser that refuses anything else, so a
// probe/client version mismatch shows as a message instead of a broken view.

import { t } from "../l10n";

export type Severity = "error" | "warning" | "information" | null;
export type SavedState = "ok" | "modified" | "freed" | "hooked";

export interface SavedRecord {
  node: string;
  seq: number;
  attr: string;
  state: SavedState;
  shape: number[] | null;
  dtype: string | null;
  bytes: number | null;
  version: number | null;
  saved_version: number | null;
  owner: string | null;
  message: string | null;
}

export interface GraphSummary {
  nodes: number;
  nodes_truncated: boolean;
  saved_count: number;
  states: Record<SavedState, number>;
  saved: SavedRecord[];
  saved_bytes: number;
  activation_bytes: number;
}

export interface Prediction {
  ok: boolean;
  code: string | null;
  error: string | null;
  message: string | null;
  reason: string;
  node: string | null;
  blame: string | null;
  blame_all: string[];
  explanation: string;
}

export interface TensorRecord {
  name: string;
  aliases: string[];
  shape: number[] | null;
  dtype: string | null;
  device: string | null;
  requires_grad: boolean;
  is_leaf: boolean;
  grad_fn: string | null;
  version: number | null;
  /** The norm is "inf", "-inf" or "nan" when it is not finite (strict JSON has no such numbers). */
  grad: { shape: number[] | null; norm: number | string | null } | null;
  retains_grad: boolean;
  is_inference: boolean;
  is_parameter: boolean;
  bytes: number | null;
  severity: Severity;
  graph: GraphSummary | null;
  backward_prediction: Prediction | null;
}

export interface ContainerRecord {
  name: string;
  kind: string;
  items: number;
  tensors: number;
  graphs: number;
  nodes: number;
  saved_bytes: number;
  activation_bytes: number;
  leak: boolean;
  severity: Severity;
  explanation: string;
}

export interface ExceptionRecord {
  message: string;
  code: string | null;
  name: string | null;
  why: string | null;
  fix: string | null;
  blame: string | null;
}

export interface Snapshot {
  schema: string;
  torch: string | null;
  elapsed_ms: number;
  truncated: boolean;
  limits_hit: string[];
  tensors: TensorRecord[];
  containers: ContainerRecord[];
  exception: ExceptionRecord | null;
  error?: string;
}

/** The drawing data of one tensor's graph (probe.graph()). */
export interface GraphDrawing {
  name: string;
  root: number | null;
  nodes: { id: number; name: string; seq: number; state: SavedState | "leaf" | "none"; saved: { attr: string; state: SavedState; shape: number[] | null; owner: string | null }[] }[];
  edges: [number, number][];
  truncated: boolean;
  error?: string;
}

export const SCHEMA = "graphlife.probe/1";

/** Parse what the probe returned; throws with a readable message when it is not a snapshot. */
export function parseSnapshot(text: string): Snapshot {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(t("the probe did not return JSON: {0}", text.slice(0, 200)));
  }
  const snap = data as Partial<Snapshot>;
  if (!snap || typeof snap !== "object" || snap.schema !== SCHEMA) {
    throw new Error(t("unexpected probe output (schema {0})", String((snap as { schema?: unknown })?.schema)));
  }
  if (snap.error) throw new Error(t("the probe failed: {0}", snap.error));
  return {
    ...snap,
    tensors: Array.isArray(snap.tensors) ? snap.tensors : [],
    containers: Array.isArray(snap.containers) ? snap.containers : [],
    exception: snap.exception ?? null,
    limits_hit: snap.limits_hit ?? [],
  } as Snapshot;
}

export function parseGraph(text: string): GraphDrawing {
  const data = JSON.parse(text) as GraphDrawing;
  if (data.error) throw new Error(t("the probe failed: {0}", data.error));
  if (!Array.isArray(data.nodes) || !Array.isArray(data.edges)) throw new Error("unexpected graph output");
  return data;
}
