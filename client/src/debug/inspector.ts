// The DAP glue: when a debugpy/python session stops, evaluate the probe in the top
// user frame and show the result; clear on continue. Nothing here runs while no
// debug session exists: it is driven by a debug adapter tracker, and a stop is
// only probed while the Autograd view is visible (or the stop is an exception).

import * as fs from "node:fs";
import * as vscode from "vscode";

import { currentLanguage } from "../currentLanguage";

import { firstSentence } from "./format";
import { exceptionHtml, graphHtml, staleHtml } from "./panelHtml";
import {
  evaluateArguments, graphExpression, inlineGraphExpression, inlineSnapshotExpression, isUserFrame, localPath,
  probeCandidates, probeMissing, snapshotExpression,
} from "./probeExpression";
import { parseGraph, parseSnapshot, type Snapshot } from "./snapshot";
import type { AutogradTreeProvider } from "./treeProvider";
import { buildRows, exceptionMarkdown, summary, type Row } from "./viewModel";

export const DEBUG_TYPES = ["debugpy", "python"];
/** Requests after which the frame's objects are no longer what the view shows. */
const RESUMING = new Set(["continue", "next", "stepIn", "stepOut", "goto", "reverseContinue", "stepBack", "restartFrame", "restart", "disconnect", "terminate"]);

interface Stop {
  session: vscode.DebugSession;
  threadId: number;
  reason: string;
  frameId?: number;
  framePath?: string;
  frameLine?: number;
  exception?: string;
}

interface StackFrame {
  id: number;
  line: number;
  source?: { path?: string };
}

export class AutogradInspector implements vscode.Disposable {
  private stop?: Stop;
  private snapshot?: Snapshot;
  private generation = 0;
  private stale = false;
  /** The tensor whose graph the picture panel shows (redrawn at each stop), and the panel's HTML. */
  private drawn: string | undefined;
  private pictureHtml: string | undefined;
  private hover?: vscode.Disposable;
  private panel?: vscode.WebviewPanel;
  private probePathCache?: string | null;
  /** Sessions with a tracker; others (started before activation) are followed through the active stack item. */
  private readonly tracked = new Set<string>();
  /** Sessions whose debuggee cannot read the probe file: the source is sent inline. */
  private readonly inline = new Set<string>();

  constructor(
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
    private readonly tree: AutogradTreeProvider,
    private readonly view: vscode.TreeView<Row>,
  ) {}

  /** Debug adapter tracker callbacks for one session. */
  tracker(session: vscode.DebugSession): vscode.DebugAdapterTracker {
    this.tracked.add(session.id);
    return {
      onDidSendMessage: (m: { type?: string; event?: string; body?: { threadId?: number; reason?: string } }) => {
        if (m.type !== "event") return;
        if (m.event === "stopped") void this.onStopped(session, m.body?.threadId, m.body?.reason ?? "");
        else if (m.event === "continued" || m.event === "terminated" || m.event === "exited") this.clear(session);
      },
      onWillReceiveMessage: (m: { type?: string; command?: string }) => {
        if (m.type === "request" && m.command && RESUMING.has(m.command)) this.clear(session);
      },
      onWillStopSession: () => {
        this.tracked.delete(session.id);
        this.clear(session);
      },
    };
  }

  private probePath(): string | undefined {
    if (this.probePathCache === undefined) {
      this.probePathCache = probeCandidates(this.extensionPath).find((p) => fs.existsSync(p)) ?? null;
    }
    return this.probePathCache ?? undefined;
  }

  private async onStopped(session: vscode.DebugSession, threadId: number | undefined, reason: string): Promise<void> {
    const generation = ++this.generation;
    try {
      if (threadId === undefined) {
        const threads = (await session.customRequest("threads")) as { threads: { id: number }[] };
        threadId = threads.threads[0]?.id;
        if (threadId === undefined) return;
      }
      const stop: Stop = { session, threadId, reason };
      if (reason === "exception") {
        const info = (await session.customRequest("exceptionInfo", { threadId })) as { description?: string; exceptionId?: string };
        stop.exception = info.description || info.exceptionId;
      }
      const trace = (await session.customRequest("stackTrace", { threadId, startFrame: 0, levels: 30 })) as { stackFrames: StackFrame[] };
      const frame = trace.stackFrames.find((f) => isUserFrame(f.source?.path)) ?? trace.stackFrames[0];
      if (!frame || generation !== this.generation) return;
      Object.assign(stop, { frameId: frame.id, framePath: frame.source?.path, frameLine: frame.line });
      this.stop = stop;
      if (this.view.visible || stop.exception) await this.probe(generation);
      else this.stale = true;
    } catch (err) {
      this.log.warn(vscode.l10n.t("autograd view: {0}", String(err)));
    }
  }

  /** Evaluate the probe in the stop's frame and show it. */
  async probe(generation = this.generation): Promise<void> {
    const stop = this.stop;
    if (!stop || stop.frameId === undefined) return;
    const probePath = this.probePath();
    if (!probePath) {
      this.show(undefined, vscode.l10n.t("graphlife: probe.py not found in the extension"));
      return;
    }
    this.stale = false;
    this.view.message = vscode.l10n.t("Reading the autograd graph…");
    // The probe writes its explanations in graphlife's language (graphlife.language, else VS Code's);
    // English is its default, so an English expression stays the short one.
    const chosen = currentLanguage();
    const language = chosen === "en" ? undefined : chosen;
    try {
      const started = Date.now();
      const reply = await this.evaluateProbe(stop, probePath,
        () => snapshotExpression(probePath, stop.exception, language),
        (source) => inlineSnapshotExpression(source, probePath, stop.exception, language));
      if (generation !== this.generation) return;
      const snap = parseSnapshot(reply.result);
      this.log.debug(`autograd probe: ${snap.tensors.length} tensors in ${snap.elapsed_ms} ms (round trip ${Date.now() - started} ms)`);
      this.snapshot = snap;
      this.show(snap);
      this.installHover(stop, snap);
      this.redrawPicture(snap);
      if (snap.exception?.code) void vscode.commands.executeCommand("graphlife.autograd.focus");
    } catch (err) {
      if (generation !== this.generation) return;
      this.log.warn(vscode.l10n.t("autograd probe failed: {0}", String(err)));
      this.show(undefined, vscode.l10n.t("Could not read the autograd graph: {0}", String(err).slice(0, 200)));
    }
  }

  /** Evaluate in the stop's frame by path; where the debuggee cannot see the file, inline. */
  private async evaluateProbe(stop: Stop, probePath: string, byPath: () => string, inline: (source: string) => string): Promise<{ result: string }> {
    const evaluate = (expression: string) =>
      stop.session.customRequest("evaluate", evaluateArguments(expression, stop.frameId!)) as Thenable<{ result: string }>;
    if (!this.inline.has(stop.session.id)) {
      try {
        return await evaluate(byPath());
      } catch (err) {
        if (!probeMissing(err)) throw err;
        this.log.info(vscode.l10n.t("autograd view: the debuggee cannot read probe.py; sending it inline"));
        this.inline.add(stop.session.id);
      }
    }
    return evaluate(inline(fs.readFileSync(probePath, "utf8")));
  }

  /** The source text of the line the program stopped on (its tensors are listed first). */
  private currentLine(): string | undefined {
    const stop = this.stop;
    if (!stop?.framePath || !stop.frameLine) return undefined;
    const file = localPath(stop.framePath);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === file);
    if (open) return stop.frameLine <= open.lineCount ? open.lineAt(stop.frameLine - 1).text : undefined;
    try {
      if (fs.statSync(file).size > 5_000_000) return undefined;
      return fs.readFileSync(file, "utf8").split(/\r?\n/)[stop.frameLine - 1];
    } catch {
      return undefined;
    }
  }

  private show(snap: Snapshot | undefined, status?: string): void {
    this.tree.setRows(buildRows(snap, status, snap ? this.currentLine() : undefined));
    this.view.description = summary(snap);
    this.view.message = snap ? undefined : status;
  }

  /** The faulting line gets the rule's explanation on hover while stopped there. */
  private installHover(stop: Stop, snap: Snapshot): void {
    this.hover?.dispose();
    this.hover = undefined;
    const markdown = exceptionMarkdown(snap);
    if (!markdown || !snap.exception?.code || !stop.framePath || !stop.frameLine) return;
    const path = localPath(stop.framePath);
    const line = stop.frameLine - 1;
    this.hover = vscode.languages.registerHoverProvider({ scheme: "file", language: "python" }, {
      provideHover(document, position) {
        if (document.uri.fsPath !== path || position.line !== line) return undefined;
        return new vscode.Hover(new vscode.MarkdownString(markdown));
      },
    });
  }

  /** Forget the stop (the program runs again, or the session ended). */
  clear(session?: vscode.DebugSession): void {
    if (session && this.stop && this.stop.session.id !== session.id) return;
    this.generation++;
    this.stop = undefined;
    this.snapshot = undefined;
    this.stale = false;
    this.hover?.dispose();
    this.hover = undefined;
    if (this.panel && this.pictureHtml) {
      this.panel.webview.html = staleHtml(this.pictureHtml, vscode.l10n.t("The program ran on: this picture is from the last stop. It is redrawn at the next stop."));
    }
    this.show(undefined, vscode.debug.activeDebugSession ? vscode.l10n.t("Running — the view fills when the program stops.") : undefined);
  }

  /** The view became visible: probe a stop that happened while it was hidden. */
  onVisible(): void {
    if (this.stale) void this.probe();
  }

  /**
   * The focused frame changed: the user picked another frame of a stop we follow, or
   * a session without a tracker (started before this extension activated) stopped.
   */
  onActiveStackItem(item: vscode.DebugThread | vscode.DebugStackFrame | undefined): void {
    const session = item?.session;
    if (!session || !DEBUG_TYPES.includes(session.type)) return;
    if (!this.tracked.has(session.id)) {
      if (item && "frameId" in item) void this.onUntrackedStop(item);
      else this.clear(session);  // running again
      return;
    }
    if (!item || !("frameId" in item) || !this.stop || session.id !== this.stop.session.id) return;
    if (item.frameId === this.stop.frameId) return;
    this.stop = { ...this.stop, frameId: item.frameId, framePath: undefined, frameLine: undefined };
    if (this.view.visible) void this.probe(++this.generation);
    else this.stale = true;
  }

  private async onUntrackedStop(frame: vscode.DebugStackFrame): Promise<void> {
    if (this.stop?.session.id === frame.session.id && this.stop.frameId === frame.frameId) return;
    const generation = ++this.generation;
    // The stop reason is unknown here, and exceptionInfo at a breakpoint makes debugpy
    // print a traceback into the Debug Console, so an untracked stop gets no exception
    // explanation (sessions started after activation have a tracker and get it).
    const stop: Stop = { session: frame.session, threadId: frame.threadId, reason: "unknown", frameId: frame.frameId };
    try {
      const trace = (await frame.session.customRequest("stackTrace", { threadId: frame.threadId, startFrame: 0, levels: 30 })) as { stackFrames: StackFrame[] };
      const found = trace.stackFrames.find((f) => f.id === frame.frameId);
      if (found) Object.assign(stop, { framePath: found.source?.path, frameLine: found.line });
    } catch {
      // the frame stays anonymous: no hover
    }
    if (generation !== this.generation) return;
    this.stop = stop;
    if (this.view.visible || stop.exception) await this.probe(generation);
    else this.stale = true;
  }

  async refresh(): Promise<void> {
    if (!this.stop) {
      void vscode.window.showInformationMessage(vscode.l10n.t("graphlife: the Autograd view fills when a Python debug session stops."));
      return;
    }
    await this.probe(++this.generation);
  }

  /** A new stop: the open picture shows the graph as it is now, or says it is gone. */
  private redrawPicture(snap: Snapshot): void {
    const name = this.drawn;
    if (!this.panel || !name || !this.pictureHtml) return;
    if (snap.tensors.some((t) => t.name === name)) {
      void this.drawGraph(undefined, name);
      return;
    }
    this.panel.webview.html = staleHtml(this.pictureHtml, vscode.l10n.t("{0} is not in the frame of this stop: this picture is from an earlier stop.", `\`${name}\``));
  }

  async drawGraph(row?: Row, tensorName?: string): Promise<void> {
    const stop = this.stop;
    const probePath = this.probePath();
    if (!stop || stop.frameId === undefined || !probePath) {
      void vscode.window.showInformationMessage(vscode.l10n.t("graphlife: stop a Python debug session to draw an autograd graph."));
      return;
    }
    let name = row?.tensorName ?? tensorName;
    if (!name) {
      const candidates = (this.snapshot?.tensors ?? []).filter((t) => t.graph).map((t) => t.name);
      name = candidates.length <= 1 ? candidates[0] : await vscode.window.showQuickPick(candidates, { placeHolder: vscode.l10n.t("Tensor whose graph to draw") });
      if (!name) return;
    }
    try {
      const tensor = name;
      const reply = await this.evaluateProbe(stop, probePath, () => graphExpression(probePath, tensor), (source) => inlineGraphExpression(source, probePath, tensor));
      this.showPanel(vscode.l10n.t("Autograd: {0}", name), graphHtml(parseGraph(reply.result)));
      this.drawn = tensor;
    } catch (err) {
      void vscode.window.showErrorMessage(vscode.l10n.t("graphlife: could not draw the graph of {0}: {1}", name, String(err).slice(0, 200)));
    }
  }

  explainException(): void {
    const snap = this.snapshot;
    if (!snap?.exception) {
      void vscode.window.showInformationMessage(vscode.l10n.t("graphlife: the program is not stopped on an exception."));
      return;
    }
    this.showPanel(snap.exception.code ? `${snap.exception.code}: ${firstSentence(snap.exception.message).slice(0, 40)}` : vscode.l10n.t("Exception"), exceptionHtml(snap));
    this.drawn = undefined;
  }

  private showPanel(title: string, html: string): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("graphlife.autogradPicture", title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { enableScripts: false });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.drawn = undefined;
      });
    }
    this.panel.title = title;
    this.panel.webview.html = html;
    this.pictureHtml = html;
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    this.hover?.dispose();
    this.panel?.dispose();
  }
}
