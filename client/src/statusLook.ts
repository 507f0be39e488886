// What the language status item says in each state. No `vscode` import (node tests).

import { t } from "./l10n";

export type ServerState = "starting" | "running" | "stopped" | "failed" | "no-interpreter";

export interface StatusLook {
  text: string;
  detail: string;
  error: boolean;
}

/** A function, not a table: the texts are translated when shown, after the extension set the translator. */
function look(state: ServerState): StatusLook {
  switch (state) {
    case "starting":
      return { text: "$(sync~spin) graphlife", detail: t("starting"), error: false };
    case "running":
      return { text: "$(pulse) graphlife", detail: t("checking autograd graph lifetimes"), error: false };
    case "stopped":
      return { text: "$(debug-stop) graphlife", detail: t("stopped"), error: false };
    case "failed":
      return { text: "$(error) graphlife", detail: t("the server failed; see the logs"), error: true };
    case "no-interpreter":
      return { text: "$(warning) graphlife", detail: t("no Python 3.10+ found"), error: true };
  }
}

/** The look of `state`; `enabled: false` (graphlife.enable off for the file) wins over a running server. */
export function statusLook(state: ServerState, enabled: boolean): StatusLook {
  if (!enabled && (state === "running" || state === "starting")) {
    return { text: "$(circle-slash) graphlife", detail: t("off (graphlife.enable is false)"), error: false };
  }
  return look(state);
}
