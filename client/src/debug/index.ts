// Placeholder until the debug inspector lands: the extension calls this on activation.
import * as vscode from "vscode";

export function registerAutogradInspector(_context: vscode.ExtensionContext, _log: vscode.LogOutputChannel): void {
  // Intentionally empty for now; replaced by the debug inspector module.
}
