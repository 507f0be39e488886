// Editor settings -> what the language server is told. No `vscode` import (node tests).
//
// The server reads `enable`, `select`, `ignore`, `severity`, `lintOnChange`, `debounce`
// (graphlife/config.py), `showSyntaxErrors`, `reportingScope` and `language` (graphlife/lsp/settings.py). They go out as `initializationOptions: {settings}` on start
// and as the answer to `workspace/configuration` for section `graphlife`. Values of
// the wrong shape are dropped here with a message, so the log says which setting the
// user has to fix instead of the server guessing.

import { t } from "./l10n";
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
  showSyntaxErrors: boolean;
  reportingScope: ReportingScope;
  /** The language of the server's messages and hovers: `auto` follows the `locale` VS Code sends in initialize. */
  language: LanguageSetting;
}

export const REPORTING_SCOPES = ["file", "workspace"] as const;
export type ReportingScope = (typeof REPORTING_SCOPES)[number];

export const LANGUAGE_SETTINGS = ["auto", "en", "zh-cn"] as const;
export type LanguageSetting = (typeof LANGUAGE_SETTINGS)[number];

export const DEFAULT_SETTINGS: ServerSettings = {
  enable: true,
  select: [],
  ignore: [],
  severity: {},
  lintOnChange: true,
  debounce: 300,
  showSyntaxErrors: true,
  reportingScope: "file",
  language: "auto",
};

/** The keys of `graphlife.*` that the server uses; the rest (interpreter, trace) stay in the client. */
export const SERVER_KEYS = ["enable", "select", "ignore", "severity", "lintOnChange", "debounce", "showSyntaxErrors", "reportingScope", "language"] as const;

export type SettingReader = (key: string) => unknown;

const CODE = /^GL\d{0,3}$/;

function codes(key: string, value: unknown, problems: string[]): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || !list.every((v) => typeof v === "string")) {
    problems.push(t('graphlife.{0} must be a list of rule codes or prefixes such as ["GL1", "GL203"]; ignoring {1}.', key, JSON.stringify(value)));
    return [];
  }
  const out: string[] = [];
  for (const raw of list) {
    const code = raw.trim().toUpperCase();
    if (code === "") continue;
    if (!CODE.test(code)) {
      problems.push(t('graphlife.{0}: "{1}" is not a graphlife rule code or prefix (GL, GL1, GL101, ...); ignoring it.', key, raw));
      continue;
    }
    out.push(code);
  }
  return out;
}

function bool(key: string, value: unknown, fallback: boolean, problems: string[]): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "boolean") return value;
  problems.push(t("graphlife.{0} must be true or false; using {1}.", key, fallback));
  return fallback;
}

function milliseconds(key: string, value: unknown, fallback: number, problems: string[]): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 5000) return value;
  problems.push(t("graphlife.{0} must be a number of milliseconds between 0 and 5000; using {1}.", key, fallback));
  return fallback;
}

function severity(value: unknown, problems: string[]): Record<string, SeverityLevel> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push(t('graphlife.severity must map rule codes or prefixes to {0}, e.g. {1}; ignoring it.', SEVERITY_LEVELS.join("/"), '{"GL2": "information"}'));
    return {};
  }
  const out: Record<string, SeverityLevel> = {};
  for (const [rawCode, rawLevel] of Object.entries(value as Record<string, unknown>)) {
    const code = rawCode.trim().toUpperCase();
    const level = typeof rawLevel === "string" ? rawLevel.trim().toLowerCase() : rawLevel;
    if (!CODE.test(code)) {
      problems.push(t('graphlife.severity: "{0}" is not a graphlife rule code or prefix; ignoring it.', rawCode));
      continue;
    }
    if (typeof level !== "string" || !(SEVERITY_LEVELS as readonly string[]).includes(level)) {
      problems.push(t("graphlife.severity: {0} for {1} is not one of {2}; ignoring it.", JSON.stringify(rawLevel), code, SEVERITY_LEVELS.join(", ")));
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
    showSyntaxErrors: bool("showSyntaxErrors", read("showSyntaxErrors"), DEFAULT_SETTINGS.showSyntaxErrors, problems),
    reportingScope: oneOf("reportingScope", read("reportingScope"), REPORTING_SCOPES, DEFAULT_SETTINGS.reportingScope, problems),
    language: oneOf("language", lowerCase(read("language")), LANGUAGE_SETTINGS, DEFAULT_SETTINGS.language, problems),
  };
  return { settings, problems };
}

/** `zh-CN` as written by hand is the `zh-cn` of the enum. */
function lowerCase(value: unknown): unknown {
  return typeof value === "string" ? value.trim().toLowerCase() : value;
}

function oneOf<T extends string>(key: string, value: unknown, allowed: readonly T[], fallback: T, problems: string[]): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  problems.push(t("graphlife.{0} must be one of {1}; using {2}.", key, allowed.join(", "), fallback));
  return fallback;
}

function strings(key: string, value: unknown, problems: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.map((v) => v.trim()).filter((v) => v !== "");
  problems.push(t("graphlife.{0} must be a list of strings; ignoring {1}.", key, JSON.stringify(value)));
  return [];
}

// ---- Settings the client alone reads (which graphlife runs, how loud it is) ---------

export const IMPORT_STRATEGIES = ["useBundled", "fromEnvironment"] as const;
export type ImportStrategy = (typeof IMPORT_STRATEGIES)[number];
export const NOTIFICATION_LEVELS = ["off", "onError", "onWarning", "always"] as const;
export type NotificationLevel = (typeof NOTIFICATION_LEVELS)[number];

export interface ClientSettings {
  /** Run the graphlife shipped in the extension, or the one installed in the interpreter's environment. */
  importStrategy: ImportStrategy;
  /** A `graphlife` executable (argv prefix) to run as `<path> lsp`; wins over the interpreter. */
  path: string[];
  /** Extra arguments after `graphlife lsp`. */
  args: string[];
  showNotifications: NotificationLevel;
}

export const DEFAULT_CLIENT_SETTINGS: ClientSettings = { importStrategy: "useBundled", path: [], args: [], showNotifications: "onError" };

export function clientSettings(read: SettingReader): { settings: ClientSettings; problems: string[] } {
  const problems: string[] = [];
  const settings: ClientSettings = {
    importStrategy: oneOf("importStrategy", read("importStrategy"), IMPORT_STRATEGIES, DEFAULT_CLIENT_SETTINGS.importStrategy, problems),
    path: strings("path", read("path"), problems),
    args: strings("args", read("args"), problems),
    showNotifications: oneOf("showNotifications", read("showNotifications"), NOTIFICATION_LEVELS, DEFAULT_CLIENT_SETTINGS.showNotifications, problems),
  };
  return { settings, problems };
}

/** Whether a notification of `kind` is shown under `level` (errors show unless "off"). */
export function shouldNotify(level: NotificationLevel, kind: "error" | "warning" | "info"): boolean {
  if (level === "off") return false;
  if (level === "always") return true;
  if (level === "onWarning") return kind !== "info";
  return kind === "error";
}

/** The client settings whose change needs a new server process. */
export const RESTART_KEYS = ["importStrategy", "path", "args"] as const;

/** What of the client settings decides how the server is started (compared on a configuration event). */
export function launchKey(settings: ClientSettings): string {
  return JSON.stringify([settings.importStrategy, settings.path, settings.args]);
}

/** The client's commands the server may put in hovers and light-bulb menus. */
export const CLIENT_COMMANDS = {
  ruleDocumentationCommand: "graphlife.showRuleDocumentation",
  turnOffRuleCommand: "graphlife.turnOffRule",
} as const;

export function initializationOptions(settings: ServerSettings): { settings: ServerSettings } & typeof CLIENT_COMMANDS {
  return { settings, ...CLIENT_COMMANDS };
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
  /** importStrategy, path or args changed: another graphlife (or other arguments) runs the server. */
  launch: boolean;
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
    launch: RESTART_KEYS.some((key) => affects(`graphlife.${key}`)),
    server: SERVER_KEYS.some((key) => affects(`graphlife.${key}`)),
  };
}

export interface ConfigurationPlan {
  /** Restart the server on the freshly resolved interpreter. */
  restart: boolean;
  /** importStrategy, path or args changed: restart whatever the interpreter does. */
  relaunch: boolean;
  /** Push the server settings to the running server (not needed after a restart). */
  push: boolean;
  /** The comparison with the running interpreter, when graphlife.interpreter was touched. */
  change?: InterpreterChange;
}

/**
 * What to do on a configuration event: the server restarts only when the interpreter
 * resolved now (`resolve`, called only when graphlife.interpreter was touched) differs
 * from the one it runs on, and never moves down to a worse tier on its own; or when
 * importStrategy/path/args were touched and `launchDiffers` (the values now differ from
 * those the server was started with).
 */
export async function planConfigurationChange(
  affects: (section: string) => boolean,
  running: RunningInterpreter | undefined,
  resolve: () => Promise<InterpreterChoice>,
  launchDiffers: () => boolean = () => false,
): Promise<ConfigurationPlan> {
  const kind = changeKind(affects);
  const change = kind.interpreter ? interpreterChange(running, await resolve()) : undefined;
  // As for the interpreter, an event is no proof of a change: compare with what the server was started with.
  const relaunch = kind.launch && launchDiffers();
  const restart = change?.kind === "restart" || relaunch;
  return { restart, relaunch, push: kind.server && !restart, change };
}

/**
 * What to say in Restricted Mode when the workspace's settings name a program to run
 * (graphlife.interpreter, graphlife.path) that VS Code therefore ignores; undefined when
 * the workspace is trusted or names none. `inspect` is `config.inspect(key)`.
 */
export function restrictedModeMessage(
  trusted: boolean,
  inspect: (key: string) => { workspaceValue?: unknown; workspaceFolderValue?: unknown } | undefined,
): string | undefined {
  if (trusted) return undefined;
  const named = (value: unknown) => (Array.isArray(value) ? value.length > 0 : value !== undefined && value !== null && value !== "");
  const ignored: string[] = [];
  for (const key of ["interpreter", "path"]) {
    const inspected = inspect(key);
    const value = named(inspected?.workspaceValue) ? inspected?.workspaceValue : inspected?.workspaceFolderValue;
    if (named(value)) ignored.push(`graphlife.${key} (${JSON.stringify(value)})`);
  }
  if (ignored.length === 0) return undefined;
  return t(
    "Restricted Mode: graphlife ignored {0} from this workspace's settings and runs the server another way. Trust the workspace to use them, or set them in your user settings.",
    ignored.join(t(" and ")),
  );
}
