// The client's translated strings, for modules that must not import `vscode` (the node
// tests load them). Every user-visible string goes through `t` here or `vscode.l10n.t`
// in the modules that import `vscode`; both end in `vscode.l10n.t` once the extension
// has called `useTranslator` at activation, so one bundle (l10n/bundle.l10n.<lang>.json,
// English is the source) serves both. Before that (node tests) `t` formats the English.

/** `{0}`, `{1}`... in `message` replaced by `args`, as `vscode.l10n.t` does. */
export type Translator = (message: string, ...args: Array<string | number | boolean>) => string;

function english(message: string, ...args: Array<string | number | boolean>): string {
  return message.replace(/\{(\d+)\}/g, (whole, index: string) => {
    const value = args[Number(index)];
    return value === undefined ? whole : String(value);
  });
}

let translator: Translator = english;

/** Called once by the extension with `vscode.l10n.t`. */
export function useTranslator(next: Translator): void {
  translator = next;
}

/** `message` (the English source, also the bundle's key) in VS Code's display language. */
export function t(message: string, ...args: Array<string | number | boolean>): string {
  return translator(message, ...args);
}
