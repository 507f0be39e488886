// What the workspace's settings files say about the settings Restricted Mode ignores.
//
// In an untrusted workspace VS Code hides the workspace's values of an extension's
// restricted settings (graphlife.interpreter, graphlife.path) from that extension:
// `configuration.inspect()` reports no workspace value at all. To tell the user which of
// them it ignored, graphlife reads the settings files themselves (reading is safe; only
// running what they name is not). No `vscode` import (node tests).

// The ES module build: esbuild cannot bundle the UMD one (its `require`s are made at run time).
import { parse, type ParseError } from "jsonc-parser/lib/esm/main.js";

/** The settings Restricted Mode ignores in a workspace (package.json's `restrictedConfigurations`). */
export const RESTRICTED_KEYS = ["interpreter", "path"] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The values of `graphlife.<key>` for `keys` in the text of a settings file (JSON with
 * comments and trailing commas, as VS Code writes and reads them). `section` is where the
 * settings are in the file: `"settings"` in a `.code-workspace` file, the top level in
 * `.vscode/settings.json`. Both spellings VS Code accepts count: `"graphlife.path": [...]`
 * and `"graphlife": {"path": [...]}`. A file that does not parse names nothing.
 */
export function graphlifeSettingsInFile(text: string, keys: readonly string[], section?: string): Record<string, unknown> {
  const errors: ParseError[] = [];
  const parsed: unknown = parse(text, errors, { allowTrailingComma: true });
  const root = section !== undefined && isRecord(parsed) ? parsed[section] : parsed;
  const found: Record<string, unknown> = {};
  if (!isRecord(root)) return found;
  const nested = isRecord(root.graphlife) ? root.graphlife : {};
  for (const key of keys) {
    const flat = `graphlife.${key}`;
    if (flat in root) found[key] = root[flat];
    else if (key in nested) found[key] = nested[key];
  }
  return found;
}

/** The settings files of a workspace, and where in each the settings are. */
export interface SettingsFile {
  path: string;
  /** `"settings"` for a `.code-workspace` file; undefined for a folder's `.vscode/settings.json`. */
  section?: string;
  /** A workspace folder's file (`workspaceFolderValue`) rather than the workspace's. */
  folder: boolean;
}

/**
 * An `inspect` for `restrictedModeMessage` from what the settings files say, for the
 * keys the editor hides. `read` returns a file's text, or undefined when it cannot be read.
 */
export function inspectFromFiles(
  files: readonly SettingsFile[],
  read: (path: string) => string | undefined,
): (key: string) => { workspaceValue?: unknown; workspaceFolderValue?: unknown } {
  const workspace: Record<string, unknown> = {};
  const folder: Record<string, unknown> = {};
  for (const file of files) {
    const text = read(file.path);
    if (text === undefined) continue;
    const values = graphlifeSettingsInFile(text, RESTRICTED_KEYS, file.section);
    for (const [key, value] of Object.entries(values)) {
      const into = file.folder ? folder : workspace;
      if (!(key in into)) into[key] = value;
    }
  }
  return (key) => ({ workspaceValue: workspace[key], workspaceFolderValue: folder[key] });
}
