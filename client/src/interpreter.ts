// Which Python runs the language server. No `vscode` import: the node tests drive it.
//
// Order, as in the Python-tools extension template: the `graphlife.interpreter`
// setting, else the Python extension's active environment (only when that extension
// is installed), else `python3` / `python` on PATH. A tier that yields a command is
// used alone: a user who set an interpreter, or picked an environment in the Python
// extension, wants that one, and a silent fallback to another Python would hide
// their mistake.

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
    return { command: (setting as string[]).map((s) => s.trim()).filter((s) => s !== "") };
  }
  return {
    command: [],
    problem: `graphlife.interpreter must be a list of strings such as ["/usr/bin/python3"]; got ${JSON.stringify(setting)}. Ignoring it.`,
  };
}

export function chooseInterpreter(inputs: InterpreterInputs): InterpreterChoice {
  const problems: string[] = [];
  const parsed = parseInterpreterSetting(inputs.setting);
  if (parsed.problem) problems.push(parsed.problem);
  if (parsed.command.length > 0) {
    const command = parsed.command.map((part) => expandVariables(part, inputs));
    if (command.some((part) => part.includes("${workspaceFolder}"))) {
      problems.push("graphlife.interpreter uses ${workspaceFolder}, but no folder is open.");
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
      return "the graphlife.interpreter setting";
    case "python-extension":
      return "the Python extension's active environment";
    case "path":
      return "PATH";
  }
}
