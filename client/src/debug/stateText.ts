// A saved tensor's state in words. No `vscode` import (node tests).

import { t } from "../l10n";

/** The probe's state keys ("ok", "modified", "freed", "hooked") as the view and the picture say them. */
export function stateText(state: string): string {
  switch (state) {
    case "ok":
      return t("ok");
    case "modified":
      return t("modified");
    case "freed":
      return t("freed");
    case "hooked":
      return t("hooked");
    default:
      return state;
  }
}
