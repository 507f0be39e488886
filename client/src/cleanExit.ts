// The language client logs every end of the server process as an error, even the normal
// end of a restart (exit code 0). No `vscode` import (node tests).

/** Whether a message of the language client reports the server ending normally. */
export function isCleanExit(message: string): boolean {
  return message.trim() === "Server process exited with code 0.";
}
