// The Python extension's active environment, when that extension is installed.
//
// graphlife never declares `extensionDependencies` on ms-python.python: offline, an
// unknown dependency blocks activation for good. So the API is looked up at run time
// and everything here copes with the extension being absent or failing.

import { PythonExtension } from "@vscode/python-extension";
import * as vscode from "vscode";

export const PYTHON_EXTENSION_ID = "ms-python.python";

export function isPythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

export async function pythonApi(log: vscode.LogOutputChannel): Promise<PythonExtension | undefined> {
  if (!isPythonExtensionInstalled()) return undefined;
  try {
    return await PythonExtension.api();
  } catch (error) {
    log.warn(vscode.l10n.t("The Python extension is installed but its API is not available: {0}", String(error)));
    return undefined;
  }
}

/** The executable of the active environment for `resource`, or undefined. */
export async function activeInterpreter(api: PythonExtension | undefined, resource: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<string | undefined> {
  if (!api) return undefined;
  try {
    const envPath = api.environments.getActiveEnvironmentPath(resource);
    const resolved = await api.environments.resolveEnvironment(envPath);
    const executable = resolved?.executable.uri?.fsPath;
    if (executable) return executable;
    log.warn(vscode.l10n.t("The Python extension's active environment ({0}) has no Python executable.", envPath.path));
  } catch (error) {
    log.warn(vscode.l10n.t("Could not read the Python extension's active environment: {0}", String(error)));
  }
  return undefined;
}
