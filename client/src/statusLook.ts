// What the language status item says in each state. No `vscode` import (node tests).

export type ServerState = "starting" | "running" | "stopped" | "failed" | "no-interpreter";

export interface StatusLook {
  text: string;
  detail: string;
  error: boolean;
}

const LOOK: Record<ServerState, StatusLook> = {
  starting: { text: "$(sync~spin) graphlife", detail: "starting", error: false },
  running: { text: "$(pulse) graphlife", detail: "checking autograd graph lifetimes", error: false },
  stopped: { text: "$(debug-stop) graphlife", detail: "stopped", error: false },
  failed: { text: "$(error) graphlife", detail: "the server failed; see the logs", error: true },
  "no-interpreter": { text: "$(warning) graphlife", detail: "no Python 3.10+ found", error: true },
};

/** The look of `state`; `enabled: false` (graphlife.enable off for the file) wins over a running server. */
export function statusLook(state: ServerState, enabled: boolean): StatusLook {
  if (!enabled && (state === "running" || state === "starting")) {
    return { text: "$(circle-slash) graphlife", detail: "off (graphlife.enable is false)", error: false };
  }
  return LOOK[state];
}
