// The debug inspector: an "Autograd" view in Run and Debug that shows, at each stop
// of a Python debug session, what the probe (server/graphlife/debug/probe.py) reads
// from the live tensors: saved tensors ok/modified/freed, what backward() would do,
// containers keeping graphs alive; a graph picture; the explanation of an autograd
// exception. Registration only: nothing runs until a debug session stops.

import * as vscode from "vscode";

import { AutogradInspector, DEBUG_TYPES } from "./inspector";
import { AutogradTreeProvider } from "./treeProvider";
import type { Row } from "./viewModel";

export function registerAutogradInspector(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
  const tree = new AutogradTreeProvider();
  const view = vscode.window.createTreeView<Row>("graphlife.autograd", { treeDataProvider: tree, showCollapseAll: true });
  const inspector = new AutogradInspector(context.extensionPath, log, tree, view);
  context.subscriptions.push(
    tree,
    view,
    inspector,
    ...DEBUG_TYPES.map((type) =>
      vscode.debug.registerDebugAdapterTrackerFactory(type, { createDebugAdapterTracker: (session) => inspector.tracker(session) }),
    ),
    view.onDidChangeVisibility((e) => e.visible && inspector.onVisible()),
    vscode.debug.onDidChangeActiveStackItem((item) => inspector.onActiveStackItem(item)),
    vscode.debug.onDidTerminateDebugSession((session) => inspector.clear(session)),
    vscode.commands.registerCommand("graphlife.autograd.refresh", () => inspector.refresh()),
    vscode.commands.registerCommand("graphlife.autograd.drawGraph", (row?: Row) => inspector.drawGraph(row)),
    vscode.commands.registerCommand("graphlife.autograd.explainException", () => inspector.explainException()),
  );
  // Activated while a program is already stopped (a debug session started first).
  if (vscode.debug.activeStackItem) inspector.onActiveStackItem(vscode.debug.activeStackItem);
}
