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

/** The keyword arguments after the namespace: the exception's message, the language of the explanations. */
function snapshotKeywords(exception?: string, language?: string): string {
  return (exception ? `, exception=${pyString(exception)}` : "") + (language ? `, language=${pyString(language)}` : "");
}

export function snapshotExpression(probePath: string, exception?: string, language?: string): string {
  const extra = snapshotKeywords(exception, language);
  return `__import__('runpy').run_path(${pyString(probePath)})['snapshot_json'](${NAMESPACE}${extra})`;
}

export function graphExpression(probePath: string, tensorName: string): string {
  return `__import__('runpy').run_path(${pyString(probePath)})['graph_json'](${NAMESPACE}, ${pyString(tensorName)})`;
}

/**
 * The same calls with the probe's source inline, for a debuggee that cannot see the
 * extension's files (attached over SSH, in a container): the probe runs in a fresh
 * dict, like run_path, and still binds no name in the frame.
 */
export function inlineProbe(source: string, probePath: string): string {
  return `(lambda g: (exec(compile(${pyString(source)}, ${pyString(probePath)}, 'exec'), g), g)[1])({'__name__': '<graphlife-probe>'})`;
}

export function inlineSnapshotExpression(source: string, probePath: string, exception?: string, language?: string): string {
  const extra = snapshotKeywords(exception, language);
  return `${inlineProbe(source, probePath)}['snapshot_json'](${NAMESPACE}${extra})`;
}

export function inlineGraphExpression(source: string, probePath: string, tensorName: string): string {
  return `${inlineProbe(source, probePath)}['graph_json'](${NAMESPACE}, ${pyString(tensorName)})`;
}

/** What debugpy says when run_path cannot find the probe on the debuggee's side. */
export function probeMissing(error: unknown): boolean {
  return /FileNotFoundError|No such file or directory|can't find '__main__'/.test(String(error));
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
