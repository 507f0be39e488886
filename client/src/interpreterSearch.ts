// Where to look for Pythons that can run the server, for the interpreter picker.
// No `vscode` import (node tests): the file system is passed in.
//
// The picker lists what a user would otherwise have to type: the Python extension's
// environments, the Pythons on PATH, the virtual environments in the workspace's
// folders (.venv, venv, env) and the usual per-user installs (pyenv, conda).
// Each is probed later (`probeInterpreter`); only Python 3.10+ is offered.

import * as path from "node:path";

export interface SearchInputs {
  /** Executables of the Python extension's known environments. */
  known: readonly string[];
  pathEnv: string | undefined;
  platform: string;
  workspaceFolders: readonly string[];
  home: string | undefined;
  /** Names in a folder ([] when it does not exist). */
  listDir: (folder: string) => string[];
  /** Whether a file exists. */
  exists: (file: string) => boolean;
}

export interface FoundPython {
  executable: string;
  /** Where it was found, for the picker's description. */
  where: "Python extension" | "PATH" | "workspace" | "pyenv" | "conda";
}

const VENV_FOLDERS = [".venv", "venv", "env", ".env"];

function pythonNames(names: readonly string[], platform: string): string[] {
  if (platform === "win32") return names.filter((n) => /^python(3(\.\d+)?)?\.exe$/i.test(n));
  return names.filter((n) => /^python3(\.\d+)?$/.test(n));
}

function inEnv(folder: string, platform: string): string {
  return platform === "win32" ? path.join(folder, "Scripts", "python.exe") : path.join(folder, "bin", "python");
}

/** Every Python executable found, the Python extension's first, without duplicates. */
export function findPythons(inputs: SearchInputs): FoundPython[] {
  const found: FoundPython[] = [];
  const seen = new Set<string>();
  const add = (executable: string, where: FoundPython["where"]) => {
    if (seen.has(executable)) return;
    seen.add(executable);
    found.push({ executable, where });
  };
  for (const executable of inputs.known) add(executable, "Python extension");
  for (const folder of inputs.workspaceFolders) {
    for (const name of VENV_FOLDERS) {
      const executable = inEnv(path.join(folder, name), inputs.platform);
      if (inputs.exists(executable)) add(executable, "workspace");
    }
  }
  const delimiter = inputs.platform === "win32" ? ";" : ":";
  for (const folder of (inputs.pathEnv ?? "").split(delimiter).filter(Boolean)) {
    for (const name of pythonNames(inputs.listDir(folder), inputs.platform)) add(path.join(folder, name), "PATH");
  }
  if (inputs.home) {
    const pyenv = path.join(inputs.home, ".pyenv", "versions");
    for (const version of inputs.listDir(pyenv)) {
      const executable = inEnv(path.join(pyenv, version), inputs.platform);
      if (inputs.exists(executable)) add(executable, "pyenv");
    }
    for (const conda of ["miniconda3", "anaconda3", "miniforge3"]) {
      const base = path.join(inputs.home, conda);
      const executable = inEnv(base, inputs.platform);
      if (inputs.exists(executable)) add(executable, "conda");
      for (const env of inputs.listDir(path.join(base, "envs"))) {
        const inside = inEnv(path.join(base, "envs", env), inputs.platform);
        if (inputs.exists(inside)) add(inside, "conda");
      }
    }
  }
  return found;
}
