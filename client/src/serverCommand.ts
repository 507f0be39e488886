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

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the server came from, for the log. */
  layout: "bundled" | "source";
  /** Said in the log when the libraries compiled for this Python are not in the .vsix. */
  warning?: string;
}

export function pythonTag(version: readonly number[]): string {
  return `cp${version[0]}${version[1]}`;
}

export function serverLaunch(
  extensionRoot: string,
  interpreter: string[],
  info: PythonInfo,
  baseEnv: Record<string, string | undefined>,
  exists: (p: string) => boolean,
  platformPathDelimiter: string = path.delimiter,
): ServerLaunch {
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
      warning =
        `This build of graphlife has no compiled libraries for Python ${info.version[0]}.${info.version[1]} (${tag}); ` +
        "diagnostics work, quick fixes need libcst importable from the interpreter.";
    }
    entries.push(path.join(bundled, "libs", "common"), bundled);
  } else {
    entries.push(path.join(extensionRoot, "server"));
  }
  const inherited = baseEnv.PYTHONPATH;
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  env.PYTHONPATH = [...entries, ...(inherited ? [inherited] : [])].join(platformPathDelimiter);
  // Unbuffered, UTF-8 stdio: the LSP stream must not wait in a buffer or trip on a locale.
  env.PYTHONUNBUFFERED = "1";
  env.PYTHONIOENCODING = "utf-8";
  return {
    command: interpreter[0],
    args: [...interpreter.slice(1), "-m", "graphlife", "lsp"],
    env,
    layout,
    warning,
  };
}
