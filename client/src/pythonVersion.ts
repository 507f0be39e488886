// Is this command a Python the server can run on? No `vscode` import (node tests).
//
// The server needs 3.10+; an older or missing Python must give the user one clear
// message instead of a server that dies on start with a traceback in the log.

import { execFile } from "node:child_process";

import type { InterpreterCandidate } from "./interpreter";
import { t } from "./l10n";

export const MINIMUM_PYTHON: readonly [number, number] = [3, 10];

/** Printed by the probe; one JSON line so that banners or warnings before it do not confuse the parser. */
export const PROBE_CODE =
  "import json, sys; print('GRAPHLIFE-PROBE ' + json.dumps({'version': list(sys.version_info[:3]), 'executable': sys.executable}))";

export interface PythonInfo {
  version: [number, number, number];
  executable: string;
}

export type ProbeResult =
  | { ok: true; candidate: InterpreterCandidate; info: PythonInfo }
  | { ok: false; candidate: InterpreterCandidate; reason: "missing" | "too-old" | "broken"; message: string; info?: PythonInfo };

function isVersion(v: unknown): v is [number, number, number] {
  return Array.isArray(v) && v.length === 3 && v.every((n: unknown) => Number.isInteger(n));
}

/** Reads the probe's line out of the interpreter's stdout. */
export function parseProbeOutput(stdout: string): PythonInfo | undefined {
  for (const line of stdout.split(/\r?\n/)) {
    if (!line.startsWith("GRAPHLIFE-PROBE ")) continue;
    try {
      const data = JSON.parse(line.slice("GRAPHLIFE-PROBE ".length)) as { version?: unknown; executable?: unknown };
      const v = data.version;
      if (isVersion(v) && typeof data.executable === "string") {
        return { version: [v[0], v[1], v[2]], executable: data.executable };
      }
    } catch {
      // fall through: not our line after all
    }
  }
  return undefined;
}

/** Parses "Python 3.11.2" (the output of `python --version`) for messages and tests. */
export function parseVersionString(text: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

export function isSupported(version: readonly number[], minimum: readonly number[] = MINIMUM_PYTHON): boolean {
  for (let i = 0; i < minimum.length; i++) {
    const have = version[i] ?? 0;
    if (have !== minimum[i]) return have > minimum[i];
  }
  return true;
}

export function formatVersion(version: readonly number[]): string {
  return version.join(".");
}

export interface RunResult {
  stdout: string;
  stderr: string;
  /** errno-style code when the command could not be started (ENOENT), else undefined. */
  spawnError?: string;
  exitCode: number | null;
}

export type Runner = (command: string[], args: string[]) => Promise<RunResult>;

export const defaultRunner: Runner = (command, args) =>
  new Promise((resolve) => {
    execFile(command[0], [...command.slice(1), ...args], { timeout: 15000, windowsHide: true }, (error, stdout, stderr) => {
      const err = error as (NodeJS.ErrnoException & { code?: string | number }) | null;
      const spawnError = err && typeof err.code === "string" ? err.code : undefined;
      const exitCode = err ? (typeof err.code === "number" ? err.code : spawnError ? null : 1) : 0;
      resolve({ stdout: String(stdout ?? ""), stderr: String(stderr ?? ""), spawnError, exitCode });
    });
  });

export async function probeInterpreter(candidate: InterpreterCandidate, runner: Runner = defaultRunner): Promise<ProbeResult> {
  const shown = candidate.command.join(" ");
  const result = await runner(candidate.command, ["-I", "-c", PROBE_CODE]);
  if (result.spawnError === "ENOENT" || result.spawnError === "EACCES") {
    return { ok: false, candidate, reason: "missing", message: t("`{0}` was not found ({1}).", shown, result.spawnError) };
  }
  const info = parseProbeOutput(result.stdout);
  if (!info) {
    const detail = (result.stderr || result.stdout || result.spawnError || t("no output")).trim().split(/\r?\n/).slice(-3).join(" ");
    // A Python 2 or a very old 3 fails on the probe itself; say what it is when we can tell.
    const version = parseVersionString(result.stderr);
    if (/SyntaxError|invalid syntax/.test(result.stderr) && version === undefined) {
      return { ok: false, candidate, reason: "too-old", message: t("`{0}` is too old to run the probe (Python {1}+ is needed): {2}", shown, formatVersion(MINIMUM_PYTHON), detail) };
    }
    return { ok: false, candidate, reason: "broken", message: t("`{0}` did not run as Python: {1}", shown, detail) };
  }
  if (!isSupported(info.version)) {
    return {
      ok: false,
      candidate,
      reason: "too-old",
      info,
      message: t("`{0}` is Python {1}; graphlife needs Python {2} or newer.", shown, formatVersion(info.version), formatVersion(MINIMUM_PYTHON)),
    };
  }
  return { ok: true, candidate, info };
}

/** The first candidate that is a supported Python, or every failure in order. */
export async function findWorkingInterpreter(
  candidates: InterpreterCandidate[],
  runner: Runner = defaultRunner,
): Promise<{ found?: Extract<ProbeResult, { ok: true }>; failures: Extract<ProbeResult, { ok: false }>[] }> {
  const failures: Extract<ProbeResult, { ok: false }>[] = [];
  for (const candidate of candidates) {
    const result = await probeInterpreter(candidate, runner);
    if (result.ok) return { found: result, failures };
    failures.push(result);
  }
  return { failures };
}
