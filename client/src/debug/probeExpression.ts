// The Python expressions the client asks debugpy to evaluate in the stopped frame.
// They load the probe with runpy.run_path and call it with the frame's names; they
// bind no name in the user's program (a dict display, no assignment).

import * as path from "node:path";

/** Where the probe lives: the bundled .vsix layout first, then the repository layout. */
export function probeCandidates(extensionPath: string): string[] {
  return [
    path.join(extensionPath, "bundled", "graphlife", "debug", "probe.py"),
    path.join(extensionPath, "server", "graphlife", "debug", "probe.py"),
  ];
}

/** A Python string literal (JSON's escapes are all valid in Python). */
export function pyString(text: string): string {
  return JSON.stringify(text);
}

const NAMESPACE = "{**globals(), **locals()}";

export function snapshotExpression(probePath: string, exception?: string): string {
  const extra = exception ? `, exception=${pyString(exception)}` : "";
  return `__import__('runpy').run_path(${pyString(probePath)})['snapshot_json'](${NAMESPACE}${extra})`;
}

export function graphExpression(probePath: string, tensorName: string): string {
  return `__import__('runpy').run_path(${pyString(probePath)})['graph_json'](${NAMESPACE}, ${pyString(tensorName)})`;
}

/** The DAP evaluate arguments that return the whole string unquoted (see shared notes). */
export function evaluateArguments(expression: string, frameId: number) {
  return { expression, frameId, context: "repl", format: { rawString: true } };
}

/** A frame in the user's code rather than in torch or the standard library. */
export function isUserFrame(sourcePath: string | undefined): boolean {
  if (!sourcePath) return false;
  return !/[\\/](site-packages|dist-packages)[\\/]|[\\/]lib[\\/]python\d|^<frozen/.test(sourcePath);
}

/**
 * A frame's source path as a file path. In a remote window (code-server, SSH, WSL)
 * VS Code hands DAP paths to extensions as URIs (`vscode-remote://host/tmp/train.py`);
 * documents there are `file:` URIs, so compare paths.
 */
export function localPath(sourcePath: string): string {
  if (!/^[a-z][\w+.-]*:\/\//i.test(sourcePath)) return sourcePath;
  try {
    return decodeURIComponent(new URL(sourcePath).pathname);
  } catch {
    return sourcePath;
  }
}
