// Editor settings -> what the language server is told. No `vscode` import (node tests).
//
// The server reads `enable`, `select`, `ignore`, `severity`, `lintOnChange`, `debounce`
// (graphlife/config.py). They go out as `initializationOptions: {settings}` on start
// and as the answer to `workspace/configuration` for section `graphlife`. Values of
// the wrong shape are dropped here with a message, so the log says which setting the
// user has to fix instead of the server guessing.

import { type InterpreterChange, type InterpreterChoice, interpreterChange, type RunningInterpreter } from "./interpreter";

export const SEVERITY_LEVELS = ["error", "warning", "information", "hint", "off"] as const;
export type SeverityLevel = (typeof SEVERITY_LEVELS)[number];

export interface ServerSettings {
  enable: boolean;
  select: string[];
  ignore: string[];
  severity: Record<string, SeverityLevel>;
  lintOnChange: boolean;
  debounce: number; // ms after the last change before the server analyzes again
}

export const DEFAULT_SETTINGS: ServerSettings = {
  enable: true,
  select: [],
  ignore: [],
  severity: {},
  lintOnChange: true,
  debounce: 300,
};

/** The keys of `graphlife.*` that the server uses; the rest (interpreter, trace) stay in the client. */
export const SERVER_KEYS = ["enable", "select", "ignore", "severity", "lintOnChange", "debounce"] as const;

export type SettingReader = (key: string) => unknown;

const CODE = /^GL\d{0,3}$/;

function codes(key: string, value: unknown, problems: string[]): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || !list.every((v) => typeof v === "string")) {
    problems.push(`graphlife.${key} must be a list of rule codes or prefixes such as ["GL1", "GL203"]; ignoring ${JSON.stringify(value)}.`);
    return [];
  }
  const out: string[] = [];
  for (const raw of list) {
    const code = raw.trim().toUpperCase();
    if (code === "") continue;
    if (!CODE.test(code)) {
      problems.push(`graphlife.${key}: "${raw}" is not a graphlife rule code or prefix (GL, GL1, GL101, ...); ignoring it.`);
      continue;
    }
    out.push(code);
  }
  return out;
}

function bool(key: string, value: unknown, fallback: boolean, problems: string[]): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "boolean") return value;
  problems.push(`graphlife.${key} must be true or false; using ${fallback}.`);
  return fallback;
}

function milliseconds(key: string, value: unknown, fallback: number, problems: string[]): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 5000) return value;
  problems.push(`graphlife.${key} must be a number of milliseconds between 0 and 5000; using ${fallback}.`);
  return fallback;
}

function severity(value: unknown, problems: string[]): Record<string, SeverityLevel> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push(`graphlife.severity must map rule codes or prefixes to ${SEVERITY_LEVELS.join("/")}, e.g. {"GL2": "information"}; ignoring it.`);
    return {};
  }
  const out: Record<string, SeverityLevel> = {};
  for (const [rawCode, rawLevel] of Object.entries(value as Record<string, unknown>)) {
    const code = rawCode.trim().toUpperCase();
    const level = typeof rawLevel === "string" ? rawLevel.trim().toLowerCase() : rawLevel;
    if (!CODE.test(code)) {
      problems.push(`graphlife.severity: "${rawCode}" is not a graphlife rule code or prefix; ignoring it.`);
      continue;
    }
    if (typeof level !== "string" || !(SEVERITY_LEVELS as readonly string[]).includes(level)) {
      problems.push(`graphlife.severity: ${JSON.stringify(rawLevel)} for ${code} is not one of ${SEVERITY_LEVELS.join(", ")}; ignoring it.`);
      continue;
    }
    out[code] = level as SeverityLevel;
  }
  return out;
}

/** Reads the server's settings through `read` (e.g. `workspace.getConfiguration("graphlife", uri).get`). */
export function serverSettings(read: SettingReader): { settings: ServerSettings; problems: string[] } {
  const problems: string[] = [];
  const settings: ServerSettings = {
    enable: bool("enable", read("enable"), DEFAULT_SETTINGS.enable, problems),
    select: codes("select", read("select"), problems),
    ignore: codes("ignore", read("ignore"), problems),
    severity: severity(read("severity"), problems),
    lintOnChange: bool("lintOnChange", read("lintOnChange"), DEFAULT_SETTINGS.lintOnChange, problems),
    debounce: milliseconds("debounce", read("debounce"), DEFAULT_SETTINGS.debounce, problems),
  };
  return { settings, problems };
}

export function initializationOptions(settings: ServerSettings): { settings: ServerSettings } {
  return { settings };
}

/**
 * The answer to one `workspace/configuration` item. `section` is `graphlife`
 * (the whole object) or `graphlife.<key>` (one value); anything else is not ours
 * and returns `undefined` so the caller can defer to the default handler.
 */
export function configurationAnswer(section: string | undefined, settings: ServerSettings): unknown {
  if (section === "graphlife") return settings;
  if (section?.startsWith("graphlife.")) {
    const key = section.slice("graphlife.".length);
    if ((SERVER_KEYS as readonly string[]).includes(key)) return settings[key as keyof ServerSettings];
  }
  return undefined;
}

/** What a configuration event may have changed, asked through `affects` (`event.affectsConfiguration`). */
export interface SettingsChange {
  /** graphlife.interpreter may have changed: resolve the interpreter again and compare (`interpreterChange`). */
  interpreter: boolean;
  /** A setting the server reads may have changed: push the settings to it. */
  server: boolean;
}

/**
 * Which of our settings a configuration event touches. Only the exact keys count:
 * `python.*`, `debugpy.*`, `launch` or `graphlife.trace.server` are not ours to act on.
 * Even `interpreter: true` is no reason to restart by itself (see `planConfigurationChange`).
 */
export function changeKind(affects: (section: string) => boolean): SettingsChange {
  return {
    interpreter: affects("graphlife.interpreter"),
    server: SERVER_KEYS.some((key) => affects(`graphlife.${key}`)),
  };
}

export interface ConfigurationPlan {
  /** Restart the server on the freshly resolved interpreter. */
  restart: boolean;
  /** Push the server settings to the running server (not needed after a restart). */
  push: boolean;
  /** The comparison with the running interpreter, when graphlife.interpreter was touched. */
  change?: InterpreterChange;
}

/**
 * What to do on a configuration event: the server restarts only when the interpreter
 * resolved now (`resolve`, called only when graphlife.interpreter was touched) differs
 * from the one it runs on, and never moves down to a worse tier on its own.
 */
export async function planConfigurationChange(
  affects: (section: string) => boolean,
  running: RunningInterpreter | undefined,
  resolve: () => Promise<InterpreterChoice>,
): Promise<ConfigurationPlan> {
  const kind = changeKind(affects);
  const change = kind.interpreter ? interpreterChange(running, await resolve()) : undefined;
  const restart = change?.kind === "restart";
  return { restart, push: kind.server && !restart, change };
}
