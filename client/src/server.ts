// Starts, stops and restarts the graphlife language server (`python -m graphlife lsp`).
//
// Starts and stops are chained on one promise so that a restart triggered by a
// settings change while the server is still starting cannot leave two servers up.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";

import {
  chooseInterpreter,
  describeSource,
  type InterpreterChange,
  type InterpreterChoice,
  interpreterChange,
  parseInterpreterSetting,
  type RunningInterpreter,
} from "./interpreter";
import { isCleanExit } from "./cleanExit";
import { inspectFromFiles, type SettingsFile } from "./restrictedSettings";
import type { StatusBar } from "./languageStatus";
import { activeInterpreter, pythonApi } from "./pythonExtension";
import { defaultRunner, findWorkingInterpreter, formatVersion, MINIMUM_PYTHON } from "./pythonVersion";
import type { RulePage } from "./ruleDocumentation";
import { IMPORT_PROBE_CODE, parseImportProbe, pathLaunch, type ServerLaunch, serverLaunch } from "./serverCommand";
import {
  CLIENT_COMMANDS,
  type ClientSettings,
  clientSettings,
  configurationAnswer,
  initializationOptions,
  launchKey,
  planConfigurationChange,
  restrictedModeMessage,
  type ServerSettings,
  serverSettings,
  shouldNotify,
} from "./settings";

/** The language client, with the normal end of the server process (a restart) logged as such, not as an error. */
class GraphlifeClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    if (isCleanExit(message)) {
      this.info(vscode.l10n.t("The server process ended normally (exit code 0)."));
      return;
    }
    super.error(message, data, showNotification);
  }
}

export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  { notebook: "jupyter-notebook", language: "python" },
];

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly reportedProblems = new Set<string>();
  private lastNotified: string | undefined;
  private crashes: number[] = [];
  /** What the running server was resolved from; undefined while no server runs. */
  private running: RunningInterpreter | undefined;
  /** What the server runs on, for the status bar and the log. */
  interpreterDescription = "";
  /** `launchKey` of the client settings the server was last started with. */
  private startedWith: string | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly status: StatusBar,
  ) {}

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  /** `userAsked`: an explicit restart shows the interpreter notification again even if it was shown before. */
  restart(reason: string, userAsked = false): Promise<void> {
    if (userAsked) this.lastNotified = undefined;
    return this.enqueue(async () => {
      this.log.info(vscode.l10n.t("Restarting the server: {0}", reason));
      await this.doStop();
      await this.doStart();
    });
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  /**
   * A configuration event (`affects` is `event.affectsConfiguration`). Touching
   * graphlife.interpreter restarts the server only when the interpreter resolved now
   * differs from the running one (see `interpreterChange`); server settings are pushed.
   */
  configurationChanged(affects: (section: string) => boolean): Promise<void> {
    return this.enqueue(async () => {
      const plan = await planConfigurationChange(
        affects,
        this.running,
        () => this.resolveChoice(this.defaultResource()),
        () => launchKey(this.clientSettings(this.defaultResource())) !== this.startedWith,
      );
      if (plan.relaunch) {
        this.log.info(vscode.l10n.t("Restarting the server: graphlife.importStrategy, graphlife.path or graphlife.args changed"));
        await this.doStop();
        await this.doStart();
        return;
      }
      if (plan.change) await this.follow(vscode.l10n.t("graphlife.interpreter changed"), plan.change);
      if (plan.push) await this.pushSettings();
    });
  }

  /** Something the interpreter is resolved from changed (the Python extension's environment): restart if the result differs. */
  interpreterInputsChanged(reason: string): Promise<void> {
    return this.enqueue(async () => {
      await this.follow(reason, interpreterChange(this.running, await this.resolveChoice(this.defaultResource())));
    });
  }

  /** Runs inside the queue. */
  private async follow(reason: string, change: InterpreterChange): Promise<void> {
    if (change.kind === "unchanged") {
      this.log.debug(`${reason}, but the server already runs on that interpreter; not restarting.`);
      return;
    }
    if (change.kind === "restart") {
      this.log.info(vscode.l10n.t("Restarting the server: {0}", reason));
      await this.doStop();
      await this.doStart();
      return;
    }
    const to = change.to ? vscode.l10n.t("{0} from {1}", change.to.command.join(" "), describeSource(change.to.source)) : vscode.l10n.t("another Python");
    let message = vscode.l10n.t(
      "{0}: {1} no longer names an interpreter, and graphlife does not switch to {2} on its own. The server keeps running on {3}; run 'graphlife: Restart Server' to switch.",
      reason,
      describeSource(change.from.source),
      to,
      this.interpreterDescription,
    );
    if (change.from.source === "setting" && vscode.env.remoteName) {
      message +=
        " " +
        vscode.l10n.t(
          "In a remote window (code-server, SSH, WSL, a container) VS Code ignores graphlife.interpreter in the local User settings (it is a machine setting): set it in the Remote settings.",
        );
    }
    this.log.warn(message);
    if (this.reportedProblems.has(message)) return;
    this.reportedProblems.add(message);
    if (!shouldNotify(this.clientSettings(undefined).showNotifications, "warning")) return;
    const restartServer = vscode.l10n.t("Restart Server");
    const showLogs = vscode.l10n.t("Show Logs");
    void vscode.window.showWarningMessage(message, restartServer, showLogs).then((choice) => {
      if (choice === restartServer) void this.restart(vscode.l10n.t("asked by the user"), true);
      if (choice === showLogs) this.log.show();
    });
  }

  /** Tells a running server that `graphlife.*` settings changed (the server pulls per-folder settings too). */
  async pushSettings(): Promise<void> {
    const client = this.client;
    if (!client || !client.isRunning()) return;
    // VS Code supports the pull model, so the server re-asks per folder; the payload is for servers that do not.
    const settings = this.settingsFor(this.defaultResource());
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { graphlife: settings } });
  }

  dispose(): void {
    void this.stop();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step, step).catch((error) => {
      this.log.error(`graphlife server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      this.status.set("failed", String(error));
    });
    return this.queue;
  }

  private defaultResource(): vscode.Uri | undefined {
    return vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
  }

  settingsFor(resource: vscode.Uri | undefined): ServerSettings {
    const config = vscode.workspace.getConfiguration("graphlife", resource);
    const { settings, problems } = serverSettings((key) => config.get(key));
    for (const problem of problems) {
      if (this.reportedProblems.has(problem)) continue;
      this.reportedProblems.add(problem);
      this.log.warn(problem);
    }
    return settings;
  }

  /** The client's own settings (which graphlife runs, notifications), problems logged once. */
  clientSettings(resource: vscode.Uri | undefined): ClientSettings {
    const config = vscode.workspace.getConfiguration("graphlife", resource);
    const { settings, problems } = clientSettings((key) => config.get(key));
    for (const problem of problems) {
      if (this.reportedProblems.has(problem)) continue;
      this.reportedProblems.add(problem);
      this.log.warn(problem);
    }
    return settings;
  }

  /** A rule's page from the running server (`graphlife/ruleDocumentation`). */
  async ruleDocumentation(code: string, language: string): Promise<RulePage | undefined> {
    const client = this.client;
    if (!client || !client.isRunning()) return undefined;
    try {
      // `language`: a server that writes pages in several languages may use it; others ignore it.
      return (await client.sendRequest<RulePage | null>("graphlife/ruleDocumentation", { code, language })) ?? undefined;
    } catch (error) {
      this.log.warn(vscode.l10n.t("The rule page of {0} could not be loaded: {1}", code, String(error)));
      return undefined;
    }
  }

  /**
   * In Restricted Mode VS Code ignores graphlife.interpreter from the workspace's settings
   * (it names a program to run); say so once, or the user wonders why it has no effect.
   */
  private sayWhenRestricted(): void {
    const config = vscode.workspace.getConfiguration("graphlife");
    // VS Code hides the workspace's values of restricted settings in Restricted Mode: read the files.
    const fromFiles = vscode.workspace.isTrusted ? undefined : inspectFromFiles(workspaceSettingsFiles(), readTextFile);
    const message = restrictedModeMessage(vscode.workspace.isTrusted, (key) => {
      const inspected = config.inspect(key);
      const files = fromFiles?.(key);
      return {
        workspaceValue: inspected?.workspaceValue ?? files?.workspaceValue,
        workspaceFolderValue: inspected?.workspaceFolderValue ?? files?.workspaceFolderValue,
      };
    });
    if (!message) return;
    this.log.warn(message);
    if (this.reportedProblems.has(message)) return;
    this.reportedProblems.add(message);
    if (!shouldNotify(this.clientSettings(undefined).showNotifications, "warning")) return;
    const manageTrust = vscode.l10n.t("Manage Workspace Trust");
    void vscode.window.showWarningMessage(message, manageTrust).then((choice) => {
      if (choice === manageTrust) void vscode.commands.executeCommand("workbench.trust.manage");
    });
  }

  /** The interpreter candidates for `resource`, in order (no probing). */
  private async resolveChoice(resource: vscode.Uri | undefined): Promise<InterpreterChoice> {
    const config = vscode.workspace.getConfiguration("graphlife", resource);
    const setting = config.get<unknown>("interpreter");
    // Ask the Python extension only when the setting does not decide (asking activates that extension).
    const pinned = parseInterpreterSetting(setting).command.length > 0;
    const fromPython = pinned ? undefined : await activeInterpreter(await pythonApi(this.log), resource, this.log);
    const folder = (resource && vscode.workspace.getWorkspaceFolder(resource)) ?? vscode.workspace.workspaceFolders?.[0];
    return chooseInterpreter({
      setting,
      pythonExtensionExecutable: fromPython,
      workspaceFolder: folder?.uri.fsPath,
      home: os.homedir(),
      env: process.env,
      platform: process.platform,
    });
  }

  private async resolveInterpreter(resource: vscode.Uri | undefined) {
    const choice = await this.resolveChoice(resource);
    for (const problem of choice.problems) this.log.warn(problem);
    const probe = await findWorkingInterpreter(choice.candidates);
    for (const failure of probe.failures) this.log.warn(vscode.l10n.t("Interpreter from {0}: {1}", describeSource(failure.candidate.source), failure.message));
    return { choice, probe };
  }

  private async doStart(): Promise<void> {
    this.status.set("starting");
    const resource = this.defaultResource();
    const chosen = this.clientSettings(resource);
    this.startedWith = launchKey(chosen);
    this.sayWhenRestricted();
    if (chosen.path.length > 0) {
      // graphlife.path: the user's own graphlife executable; no interpreter to resolve.
      const launch = pathLaunch(chosen.path, chosen.args, process.env);
      this.interpreterDescription = vscode.l10n.t("{0} (graphlife.path)", chosen.path.join(" "));
      await this.launch(launch, resource, undefined);
      return;
    }
    const { choice, probe } = await this.resolveInterpreter(resource);
    if (!probe.found) {
      const source = choice.candidates[0]?.source ?? "path";
      const detail = probe.failures.map((f) => f.message).join(" ");
      const tooOld = probe.failures.some((f) => f.reason === "too-old");
      const headline = tooOld
        ? vscode.l10n.t("graphlife needs Python {0}+ to run its language server.", formatVersion(MINIMUM_PYTHON))
        : vscode.l10n.t("graphlife could not find Python {0}+ to run its language server.", formatVersion(MINIMUM_PYTHON));
      const message = vscode.l10n.t("{0} Tried {1}: {2}", headline, describeSource(source), detail);
      this.log.error(message);
      this.status.set("no-interpreter", message);
      void this.notifyInterpreterProblem(message);
      return;
    }
    const { candidate, info } = probe.found;
    const fromEnvironment = chosen.importStrategy === "fromEnvironment" && (await this.environmentHasGraphlife(candidate.command, info.executable));
    const launch = serverLaunch(this.context.extensionPath, candidate.command, info, process.env, (p) => fs.existsSync(p), undefined, {
      fromEnvironment,
      extraArgs: chosen.args,
    });
    if (launch.warning) this.log.warn(launch.warning);
    this.interpreterDescription = vscode.l10n.t("Python {0} at {1} (from {2})", formatVersion(info.version), info.executable, describeSource(candidate.source));
    await this.launch(launch, resource, { candidates: choice.candidates, used: candidate });
  }

  /** importStrategy fromEnvironment: whether the interpreter imports its own graphlife (else the bundled one runs, said once). */
  private async environmentHasGraphlife(command: string[], executable: string): Promise<boolean> {
    const result = await defaultRunner(command, ["-c", IMPORT_PROBE_CODE]);
    const version = parseImportProbe(result.stdout);
    if (version) {
      this.log.info(vscode.l10n.t("graphlife.importStrategy is fromEnvironment: running graphlife {0} from {1}'s environment.", version, executable));
      return true;
    }
    const message = vscode.l10n.t(
      "graphlife.importStrategy is fromEnvironment, but {0} cannot import graphlife; running the graphlife bundled with the extension. Install graphlife in that environment (pip install graphlife) to use its version.",
      executable,
    );
    this.log.warn(message);
    if (!this.reportedProblems.has(message) && shouldNotify(this.clientSettings(undefined).showNotifications, "warning")) {
      void vscode.window.showWarningMessage(message);
    }
    this.reportedProblems.add(message);
    return false;
  }

  private async launch(launch: ServerLaunch, resource: vscode.Uri | undefined, running: RunningInterpreter | undefined): Promise<void> {
    this.log.info(vscode.l10n.t("Starting the server with {0}; {1} server; {2}", this.interpreterDescription, launch.layout, `${launch.command} ${launch.args.join(" ")}`));
    this.log.debug(`PYTHONPATH=${launch.env.PYTHONPATH ?? ""}`);

    const folder = vscode.workspace.workspaceFolders?.[0];
    // No `transport`: plain stdio without the `--stdio` argument the client would append.
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { env: launch.env, cwd: folder?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(this.settingsFor(resource)),
      // Hover links open a rule's page with this command (markdown from the server is not trusted otherwise).
      markdown: { isTrusted: { enabledCommands: [CLIENT_COMMANDS.ruleDocumentationCommand] } },
      middleware: {
        workspace: {
          // The server asks for section `graphlife`; it gets the same mapped shape as initializationOptions.settings.
          configuration: async (params, token, next) => {
            const ours = params.items.map((item) => item.section === "graphlife" || item.section?.startsWith("graphlife."));
            const theirs = ours.every(Boolean) ? [] : await next(params, token);
            if (theirs instanceof Error) return theirs;
            return params.items.map((item, i) => {
              if (!ours[i]) return (theirs as unknown[])[i];
              const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
              return configurationAnswer(item.section, this.settingsFor(scope)) ?? null;
            });
          },
        },
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          // Like the default handler: restart a crashed server up to 3 times in 3 minutes,
          // then stop and say so once instead of looping.
          const now = Date.now();
          this.crashes = this.crashes.filter((t) => now - t < 180_000);
          this.crashes.push(now);
          if (this.crashes.length <= 3) {
            this.log.warn(vscode.l10n.t("The graphlife server stopped unexpectedly; restarting it ({0}/3).", this.crashes.length));
            return { action: CloseAction.Restart };
          }
          this.running = undefined;
          this.status.set("failed", vscode.l10n.t("The server stopped. See the logs."));
          this.log.error(vscode.l10n.t("The graphlife server stopped unexpectedly; see the lines above. Run 'graphlife: Restart Server' to try again."));
          if (!shouldNotify(this.clientSettings(undefined).showNotifications, "error")) return { action: CloseAction.DoNotRestart };
          const showLogs = vscode.l10n.t("Show Logs");
          const restartServer = vscode.l10n.t("Restart Server");
          void vscode.window
            .showErrorMessage(vscode.l10n.t("The graphlife language server stopped. The log says why."), showLogs, restartServer)
            .then((choice) => {
              if (choice === showLogs) this.log.show();
              if (choice === restartServer) void this.restart(vscode.l10n.t("asked after a crash"), true);
            });
          return { action: CloseAction.DoNotRestart };
        },
      },
    };
    const client = new GraphlifeClient("graphlife", "graphlife", serverOptions, clientOptions);
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) this.status.set("running", this.interpreterDescription);
      else if (event.newState === State.Starting) this.status.set("starting", this.interpreterDescription);
      else if (this.status.state !== "failed") this.status.set("stopped", this.interpreterDescription);
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      this.status.set("failed", String(error));
      this.log.error(vscode.l10n.t("The server did not start: {0}", String(error)));
      return;
    }
    this.lastNotified = undefined;
    this.running = running;
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.running = undefined;
    if (!client) return;
    try {
      if (client.needsStop()) await client.stop(5000);
    } catch (error) {
      this.log.warn(vscode.l10n.t("Stopping the server: {0}", String(error)));
    }
    await client.dispose().catch(() => undefined);
    this.status.set("stopped");
  }

  private async notifyInterpreterProblem(message: string): Promise<void> {
    // One notification per distinct problem: automatic restarts must not repeat it.
    if (this.lastNotified === message) return;
    this.lastNotified = message;
    if (!shouldNotify(this.clientSettings(undefined).showNotifications, "error")) return;
    const selectInterpreter = vscode.l10n.t("Select Interpreter");
    const showLogs = vscode.l10n.t("Show Logs");
    const choice = await vscode.window.showErrorMessage(message, selectInterpreter, showLogs);
    if (choice === selectInterpreter) await vscode.commands.executeCommand("graphlife.selectInterpreter");
    if (choice === showLogs) this.log.show();
  }
}

/** The settings files of the open workspace: the .code-workspace file's, then each folder's .vscode/settings.json. */
function workspaceSettingsFiles(): SettingsFile[] {
  const files: SettingsFile[] = [];
  const workspaceFile = vscode.workspace.workspaceFile;
  if (workspaceFile?.scheme === "file") files.push({ path: workspaceFile.fsPath, section: "settings", folder: false });
  const folders = vscode.workspace.workspaceFolders ?? [];
  for (const folder of folders) {
    if (folder.uri.scheme !== "file") continue;
    // A single folder's .vscode/settings.json is the workspace's settings; in a multi-root workspace, the folder's.
    files.push({ path: path.join(folder.uri.fsPath, ".vscode", "settings.json"), folder: workspaceFile !== undefined });
  }
  return files;
}

function readTextFile(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
