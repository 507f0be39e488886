// How the server process is started. No `vscode` import (node tests).
//
// The .vsix carries the server and its libraries (tools/bundle_python.py):
//   bundled/graphlife/          the server package
//   bundled/libs/common/        pure-Python dependencies (pygls, lsprotocol, cattrs, attrs, ...)
//   bundled/libs/cp3XX/         compiled ones for one Python minor (libcst, pyyaml)
// They go first on PYTHONPATH so that whatever the user's environment holds (an older
// pygls, say) cannot shadow them, and nothing is pip-installed into that environment.
// Run from a source checkout (no bundled/), the repository's server/ folder is used.

import * as path from "node:path";

import type { PythonInfo } from "./pythonVersion";
import { t } from "./l10n";

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the server came from, for the log. */
  layout: "bundled" | "source" | "environment" | "path";
  /** Said in the log when the libraries compiled for this Python are not in the .vsix. */
  warning?: string;
}

export function pythonTag(version: readonly number[]): string {
  return `cp${version[0]}${version[1]}`;
}

/** Which graphlife runs (`graphlife.importStrategy`) and extra arguments after `lsp` (`graphlife.args`). */
export interface LaunchOptions {
  /** `fromEnvironment` only once the interpreter was seen to import graphlife (see `IMPORT_PROBE_CODE`). */
  fromEnvironment?: boolean;
  extraArgs?: readonly string[];
}

/** Prints graphlife's version when the interpreter's own environment has graphlife. */
export const IMPORT_PROBE_CODE = "import graphlife; print('GRAPHLIFE-VERSION ' + graphlife.__version__)";

/** The version the import probe printed, or undefined when graphlife is not importable. */
export function parseImportProbe(stdout: string): string | undefined {
  const line = stdout.split(/\r?\n/).find((l) => l.startsWith("GRAPHLIFE-VERSION "));
  return line?.slice("GRAPHLIFE-VERSION ".length).trim() || undefined;
}

function cleanEnv(baseEnv: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  // Unbuffered, UTF-8 stdio: the LSP stream must not wait in a buffer or trip on a locale.
  env.PYTHONUNBUFFERED = "1";
  env.PYTHONIOENCODING = "utf-8";
  return env;
}

/**
 * `graphlife.path`: a graphlife executable the user chose (the one CI runs, say), started
 * as `<path...> lsp <args>`; no interpreter and none of the extension's libraries.
 */
export function pathLaunch(pathSetting: readonly string[], extraArgs: readonly string[], baseEnv: Record<string, string | undefined>): ServerLaunch {
  return { command: pathSetting[0], args: [...pathSetting.slice(1), "lsp", ...extraArgs], env: cleanEnv(baseEnv), layout: "path" };
}

export function serverLaunch(
  extensionRoot: string,
  interpreter: string[],
  info: PythonInfo,
  baseEnv: Record<string, string | undefined>,
  exists: (p: string) => boolean,
  platformPathDelimiter: string = path.delimiter,
  options: LaunchOptions = {},
): ServerLaunch {
  const extraArgs = options.extraArgs ?? [];
  if (options.fromEnvironment) {
    // The environment's own graphlife, as CI runs it: nothing of the extension's on PYTHONPATH.
    return { command: interpreter[0], args: [...interpreter.slice(1), "-m", "graphlife", "lsp", ...extraArgs], env: cleanEnv(baseEnv), layout: "environment" };
  }
  const bundled = path.join(extensionRoot, "bundled");
  const entries: string[] = [];
  let layout: ServerLaunch["layout"] = "source";
  let warning: string | undefined;
  if (exists(path.join(bundled, "graphlife", "__init__.py"))) {
    layout = "bundled";
    const tag = pythonTag(info.version);
    const compiled = path.join(bundled, "libs", tag);
    if (exists(compiled)) {
      entries.push(compiled);
    } else {
      warning = t(
        "This build of graphlife has no compiled libraries for Python {0} ({1}); diagnostics work, quick fixes need libcst importable from the interpreter.",
        `${info.version[0]}.${info.version[1]}`,
        tag,
      );
    }
    entries.push(path.join(bundled, "libs", "common"), bundled);
  } else {
    entries.push(path.join(extensionRoot, "server"));
  }
  const inherited = baseEnv.PYTHONPATH;
  const env = cleanEnv(baseEnv);
  env.PYTHONPATH = [...entries, ...(inherited ? [inherited] : [])].join(platformPathDelimiter);
  return {
    command: interpreter[0],
    args: [...interpreter.slice(1), "-m", "graphlife", "lsp", ...extraArgs],
    env,
    layout,
    warning,
  };
}
