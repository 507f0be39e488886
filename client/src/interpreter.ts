// Which Python runs the language server. No `vscode` import: the node tests drive it.
//
// Order, as in the Python-tools extension template: the `graphlife.interpreter`
// setting, else the Python extension's active environment (only when that extension
// is installed), else `python3` / `python` on PATH. A tier that yields a command is
// used alone: a user who set an interpreter, or picked an environment in the Python
// extension, wants that one, and a silent fallback to another Python would hide
// their mistake.

import { t } from "./l10n";

export type InterpreterSource = "setting" | "python-extension" | "path";

export interface InterpreterCandidate {
  /** argv prefix; the server arguments (`-m graphlife lsp`) are appended. */
  command: string[];
  source: InterpreterSource;
}

export interface InterpreterInputs {
  /** The raw value of `graphlife.interpreter` (a list of strings, or a string). */
  setting: unknown;
  /** The Python extension's active interpreter, or undefined when that extension is absent or has none. */
  pythonExtensionExecutable?: string;
  /** For `${workspaceFolder}` in the setting. */
  workspaceFolder?: string;
  home?: string;
  env?: Record<string, string | undefined>;
  platform?: string;
}

export interface InterpreterChoice {
  candidates: InterpreterCandidate[];
  /** Messages about a setting that could not be used (shown in the log and the notification). */
  problems: string[];
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function expandVariables(value: string, inputs: InterpreterInputs): string {
  const env = inputs.env ?? {};
  let out = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (match, name: string, envName?: string) => {
    if (envName !== undefined) return env[envName] ?? "";
    if (name === "workspaceFolder") return inputs.workspaceFolder ?? match;
    return inputs.home ?? match;
  });
  if (inputs.home && (out === "~" || out.startsWith("~/") || out.startsWith("~\\"))) {
    out = inputs.home + out.slice(1);
  }
  return out;
}

/** The setting as an argv list, or a problem message when it has the wrong shape. */
export function parseInterpreterSetting(setting: unknown): { command: string[]; problem?: string } {
  if (setting === undefined || setting === null || setting === "") return { command: [] };
  if (typeof setting === "string") return { command: [setting.trim()].filter((s) => s !== "") };
  if (Array.isArray(setting) && setting.every((s) => typeof s === "string")) {
    return { command: setting.map((s) => s.trim()).filter((s) => s !== "") };
  }
  return {
    command: [],
    problem: t('graphlife.interpreter must be a list of strings such as ["/usr/bin/python3"]; got {0}. Ignoring it.', JSON.stringify(setting)),
  };
}

export function chooseInterpreter(inputs: InterpreterInputs): InterpreterChoice {
  const problems: string[] = [];
  const parsed = parseInterpreterSetting(inputs.setting);
  if (parsed.problem) problems.push(parsed.problem);
  if (parsed.command.length > 0) {
    const command = parsed.command.map((part) => expandVariables(part, inputs));
    if (command.some((part) => part.includes("${workspaceFolder}"))) {
      problems.push(t("graphlife.interpreter uses {0}, but no folder is open.", "${workspaceFolder}"));
    }
    return { candidates: [{ command, source: "setting" }], problems };
  }
  if (inputs.pythonExtensionExecutable) {
    return { candidates: [{ command: [inputs.pythonExtensionExecutable], source: "python-extension" }], problems };
  }
  const names = inputs.platform === "win32" ? ["python", "py"] : ["python3", "python"];
  return { candidates: names.map((name) => ({ command: [name], source: "path" as const })), problems };
}

export function describeSource(source: InterpreterSource): string {
  switch (source) {
    case "setting":
      return t("the graphlife.interpreter setting");
    case "python-extension":
      return t("the Python extension's active environment");
    case "path":
      return t("PATH");
  }
}

// ---- Restarting on a change -------------------------------------------------------
//
// A configuration event says that a section *may* have changed, not that the server
// would now run on another Python: VS Code also fires one when it re-reads settings or
// learns a setting's scope. In a remote window (code-server, SSH, WSL, containers) a
// `machine-overridable` setting such as graphlife.interpreter is ignored in the local
// User settings; VS Code applies it at first, while the extension's schema is not yet
// known, and drops it later (in the Autograd-view e2e: when a debug session starts),
// firing a change of graphlife.interpreter. So the client resolves the interpreter
// again and compares, and it does not give up a working interpreter from a better tier
// (setting > Python extension > PATH) on its own: a PATH python3 without the server's
// libraries would only crash.

/** How much a tier says about the user's wish: a restart may move up or sideways, not down. */
export const SOURCE_RANK: Readonly<Record<InterpreterSource, number>> = { path: 0, "python-extension": 1, setting: 2 };

/** What the running server was resolved from and the candidate that worked. */
export interface RunningInterpreter {
  candidates: readonly InterpreterCandidate[];
  used: InterpreterCandidate;
}

export type InterpreterChange =
  /** The fresh resolution is the one the server runs on: nothing to do. */
  | { kind: "unchanged" }
  /** Another interpreter from the same or a better tier (or nothing runs yet): restart on it. */
  | { kind: "restart"; to: InterpreterCandidate | undefined }
  /** Only a worse tier is left: keep the working server until the user restarts it. */
  | { kind: "downgrade"; from: InterpreterCandidate; to: InterpreterCandidate | undefined };

function sameCandidate(a: InterpreterCandidate, b: InterpreterCandidate): boolean {
  return a.source === b.source && a.command.length === b.command.length && a.command.every((part, i) => part === b.command[i]);
}

export function sameCandidates(a: readonly InterpreterCandidate[], b: readonly InterpreterCandidate[]): boolean {
  return a.length === b.length && a.every((candidate, i) => sameCandidate(candidate, b[i]));
}

/** Compares a fresh resolution with the running server's: restart only when the resolved command differs. */
export function interpreterChange(running: RunningInterpreter | undefined, next: InterpreterChoice): InterpreterChange {
  const to = next.candidates[0];
  if (!running) return { kind: "restart", to };
  if (sameCandidates(running.candidates, next.candidates)) return { kind: "unchanged" };
  if (to && sameCandidate(to, running.used)) return { kind: "unchanged" };
  if (!to || SOURCE_RANK[to.source] < SOURCE_RANK[running.used.source]) return { kind: "downgrade", from: running.used, to };
  return { kind: "restart", to };
}
