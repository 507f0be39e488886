// The manifest is the contract with VS Code, the language server (settings of
// issue 5) and the debug inspector (its view and command ids): check what users
// and the other parts rely on.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { SERVER_KEYS } from "../src/settings";

/** The parts of package.json these tests read. */
interface Manifest {
  contributes: {
    configuration: {
      properties: Record<string, { description?: string; markdownDescription?: string; scope?: string; default?: unknown }>;
    };
    commands: { command: string; title: string; category?: string }[];
    views: { debug: { id: string; name: string }[] };
    menus: Record<string, { command: string; when: string }[]>;
    snippets: unknown;
  };
  capabilities: { untrustedWorkspaces: { description: string } };
  activationEvents: string[];
  extensionDependencies?: unknown;
}

const root = path.resolve(__dirname, "../../..");
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as Manifest;
const properties = manifest.contributes.configuration.properties;

test("every server setting and the client settings are declared with a description", () => {
  const expected = [...SERVER_KEYS.map((k) => `graphlife.${k}`), "graphlife.interpreter", "graphlife.trace.server"];
  assert.deepEqual(Object.keys(properties).sort(), expected.sort());
  for (const [key, spec] of Object.entries(properties)) {
    assert.ok((spec.description ?? spec.markdownDescription ?? "").length > 20, `${key} needs a description`);
    assert.notEqual(spec.default, undefined, `${key} needs a default`);
  }
});

test("the interpreter is machine-overridable and restricted in untrusted workspaces", () => {
  assert.equal(properties["graphlife.interpreter"].scope, "machine-overridable");
  assert.deepEqual(manifest.capabilities.untrustedWorkspaces, {
    supported: "limited",
    description: manifest.capabilities.untrustedWorkspaces.description,
    restrictedConfigurations: ["graphlife.interpreter"],
  });
});

test("activation on Python files, notebooks and Python debug sessions; never a dependency on the Python extension", () => {
  assert.deepEqual(manifest.activationEvents, [
    "onLanguage:python",
    "onNotebook:jupyter-notebook",
    "onDebugResolve:debugpy",
    "onDebugResolve:python",
  ]);
  assert.equal(manifest.extensionDependencies, undefined);
  // The debug view must cost nothing without a debug session: only a Python session's start activates.
  assert.ok(!manifest.activationEvents.some((e) => e === "*" || e === "onDebug" || e === "onStartupFinished"));
});

test("commands: restart, logs, and the debug inspector's ids", () => {
  const commands = new Map<string, string>(
    manifest.contributes.commands.map((c) => [c.command, c.category ? `${c.category}: ${c.title}` : c.title]),
  );
  assert.equal(commands.get("graphlife.restart"), "graphlife: Restart Server");
  assert.equal(commands.get("graphlife.showLogs"), "graphlife: Show Logs");
  assert.equal(commands.get("graphlife.autograd.refresh"), "graphlife: Refresh Autograd View");
  assert.equal(commands.get("graphlife.autograd.drawGraph"), "graphlife: Draw Autograd Graph");
  assert.ok(commands.has("graphlife.autograd.explainException"));
  const debugViews = manifest.contributes.views.debug;
  assert.ok(debugViews.some((v) => v.id === "graphlife.autograd" && v.name === "Autograd"));
  const itemMenu = manifest.contributes.menus["view/item/context"];
  assert.ok(itemMenu.some((m) => m.command === "graphlife.autograd.drawGraph" && m.when.includes("view == graphlife.autograd")));
});

test("the snippets file is contributed for python and exists", () => {
  assert.deepEqual(manifest.contributes.snippets, [{ language: "python", path: "./snippets/python.json" }]);
  assert.ok(fs.existsSync(path.join(root, "snippets", "python.json")));
});
