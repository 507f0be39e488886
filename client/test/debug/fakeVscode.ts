// A small stand-in for the `vscode` module, enough for the debug inspector's glue
// (client/src/debug/inspector.ts, treeProvider.ts) to run under node's test runner.
// Installed with installFakeVscode() before the inspector is imported dynamically.

import Module from "node:module";

import { t as english } from "../../src/l10n";

export interface Recorded {
  info: string[];
  errors: string[];
  commands: string[];
  hovers: { provider: { provideHover(doc: unknown, pos: unknown): unknown }; disposed: boolean }[];
  panels: { title: string; webview: { html: string }; revealed: number; disposed: boolean }[];
  quickPick?: string;
}

export const recorded: Recorded = { info: [], errors: [], commands: [], hovers: [], panels: [] };

class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (listener: (e: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T) {
    for (const l of this.listeners) l(e);
  }
  dispose() {
    this.listeners = [];
  }
}

class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  constructor(public label: string, public collapsibleState: number) {}
}

export const fake = {
  EventEmitter,
  TreeItem,
  TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
  ThemeIcon: class { constructor(public id: string, public color?: unknown) {} },
  ThemeColor: class { constructor(public id: string) {} },
  MarkdownString: class { constructor(public value: string) {} },
  Hover: class { constructor(public contents: unknown) {} },
  ViewColumn: { Beside: -2 },
  window: {
    showInformationMessage: (m: string) => { recorded.info.push(m); return Promise.resolve(undefined); },
    showErrorMessage: (m: string) => { recorded.errors.push(m); return Promise.resolve(undefined); },
    showQuickPick: (items: string[]) => Promise.resolve(recorded.quickPick ?? items[0]),
    createWebviewPanel: (_type: string, title: string) => {
      const panel = { title, webview: { html: "" }, revealed: 0, disposed: false,
        reveal() { panel.revealed++; }, onDidDispose() { return { dispose() {} }; }, dispose() { panel.disposed = true; } };
      recorded.panels.push(panel);
      return panel;
    },
  },
  languages: {
    registerHoverProvider: (_selector: unknown, provider: Recorded["hovers"][number]["provider"]) => {
      const entry = { provider, disposed: false };
      recorded.hovers.push(entry);
      return { dispose: () => (entry.disposed = true) };
    },
  },
  workspace: {
    textDocuments: [] as { uri: { fsPath: string }; lineCount: number; lineAt(n: number): { text: string } }[],
    /** `graphlife.*` settings the code under test reads (graphlife.language). */
    settings: {} as Record<string, unknown>,
    getConfiguration: (section: string) => ({ get: (key: string) => fake.workspace.settings[`${section}.${key}`] }),
  },
  /** VS Code's display language (`vscode.env.language`). */
  env: { language: "en" },
  /** English, as VS Code formats a message without a bundle. */
  l10n: { t: english },
  commands: { executeCommand: (c: string) => { recorded.commands.push(c); return Promise.resolve(undefined); } },
  debug: { activeDebugSession: undefined as unknown },
};

let installed = false;

export function installFakeVscode(): void {
  if (installed) return;
  installed = true;
  const mod = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const original = mod._load;
  mod._load = function (request: string, parent: unknown, isMain: boolean) {
    if (request === "vscode") return fake;
    return original.call(this, request, parent, isMain);
  };
}
