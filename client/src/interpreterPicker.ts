// `graphlife.selectInterpreter`: a list of the Python 3.10+ interpreters found (each probed),
// plus "Enter interpreter path..." for anything else. The choice goes to graphlife.interpreter
// in the user settings (a machine setting: it names a file on this machine).

import * as fs from "node:fs";
import * as os from "node:os";

import * as vscode from "vscode";

import { findPythons, type FoundPython } from "./interpreterSearch";
import { pythonApi } from "./pythonExtension";
import { formatVersion, MINIMUM_PYTHON, probeInterpreter } from "./pythonVersion";

interface PythonItem extends vscode.QuickPickItem {
  executable?: string;
}

function listDir(folder: string): string[] {
  try {
    return fs.readdirSync(folder);
  } catch {
    return [];
  }
}

async function knownEnvironments(log: vscode.LogOutputChannel): Promise<string[]> {
  const api = await pythonApi(log);
  if (!api) return [];
  const out: string[] = [];
  let known: readonly unknown[];
  try {
    known = [...(api.environments.known ?? [])];
  } catch (error) {
    // An older or broken Python extension: the other places are still searched.
    log.warn(vscode.l10n.t("Could not list the Python extension's environments: {0}", String(error)));
    return [];
  }
  for (const env of known as typeof api.environments.known) {
    try {
      const resolved = await api.environments.resolveEnvironment(env);
      const executable = resolved?.executable.uri?.fsPath;
      if (executable) out.push(executable);
    } catch {
      // an environment that does not resolve is simply not listed
    }
  }
  return out;
}

/** Where a Python was found, as the picker's detail line says it. */
function whereText(where: FoundPython["where"]): string {
  switch (where) {
    case "Python extension":
      return vscode.l10n.t("Python extension");
    case "PATH":
      return "PATH";
    case "workspace":
      return vscode.l10n.t("workspace");
    case "pyenv":
      return "pyenv";
    case "conda":
      return "conda";
  }
}

async function probeAll(found: FoundPython[]): Promise<PythonItem[]> {
  const probed = await Promise.all(found.map(async (python) => ({ python, result: await probeInterpreter({ command: [python.executable], source: "setting" }) })));
  const items: PythonItem[] = [];
  const seenReal = new Set<string>();
  for (const { python, result } of probed) {
    if (!result.ok) continue;
    // python3 and python3.12 on PATH are often one interpreter: list it once.
    const real = (() => {
      try {
        return fs.realpathSync(python.executable);
      } catch {
        return python.executable;
      }
    })();
    if (seenReal.has(real) && python.where === "PATH") continue;
    seenReal.add(real);
    items.push({ label: `Python ${formatVersion(result.info.version)}`, description: python.executable, detail: whereText(python.where), executable: python.executable });
  }
  return items;
}

export async function selectInterpreter(log: vscode.LogOutputChannel): Promise<void> {
  const pick = vscode.window.createQuickPick<PythonItem>();
  pick.title = vscode.l10n.t("Python {0}+ for the graphlife language server", formatVersion(MINIMUM_PYTHON));
  pick.placeholder = vscode.l10n.t("Looking for Python interpreters...");
  pick.busy = true;
  // Typing a path (or a part of one: `.venv`) finds the interpreter, not only its version.
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  const enter: PythonItem = { label: `$(folder-opened) ${vscode.l10n.t("Enter interpreter path...")}`, alwaysShow: true };
  pick.items = [enter];
  pick.show();
  const chosen = new Promise<PythonItem | undefined>((resolve) => {
    pick.onDidAccept(() => resolve(pick.selectedItems[0]));
    pick.onDidHide(() => resolve(undefined));
  });
  void (async () => {
    const found = findPythons({
      known: await knownEnvironments(log),
      pathEnv: process.env.PATH,
      platform: process.platform,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      home: os.homedir(),
      listDir,
      exists: (file) => fs.existsSync(file),
    });
    const items = await probeAll(found);
    pick.items = [...items, enter];
    pick.busy = false;
    pick.placeholder = items.length ? vscode.l10n.t("Select an interpreter") : vscode.l10n.t("No Python {0}+ found; enter a path", formatVersion(MINIMUM_PYTHON));
  })().catch((error: unknown) => {
    // The picker must never stay "Looking for Python interpreters..." for ever: the path can still be entered.
    log.error(vscode.l10n.t("The search for Python interpreters failed: {0}", String(error)));
    pick.busy = false;
    pick.placeholder = vscode.l10n.t("The search for interpreters failed (see graphlife: Show Logs); enter a path");
  });
  const item = await chosen;
  pick.dispose();
  if (!item) return;
  let executable = item.executable;
  if (!executable) {
    const picked = await vscode.window.showOpenDialog({ title: pick.title, openLabel: vscode.l10n.t("Use this Python"), canSelectFiles: true, canSelectFolders: false, canSelectMany: false });
    executable = picked?.[0]?.fsPath;
  }
  if (!executable) return;
  await vscode.workspace.getConfiguration("graphlife").update("interpreter", [executable], vscode.ConfigurationTarget.Global);
}
