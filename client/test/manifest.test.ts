// The manifest is the contract with VS Code, the language server (settings of
// issue 5) and the debug inspector (its view and command ids): check what users
// and the other parts rely on.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { DEFAULT_CLIENT_SETTINGS, SERVER_KEYS } from "../src/settings";

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
  displayName: string;
  icon?: string;
  categories: string[];
  keywords: string[];
  repository?: { url: string };
}

const root = path.resolve(__dirname, "../../..");
/** package.json as an English user reads it: its `%key%` strings replaced from package.nls.json. */
const english = JSON.parse(fs.readFileSync(path.join(root, "package.nls.json"), "utf8")) as Record<string, string>;
const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"), (_key, value: unknown) =>
  typeof value === "string" && /^%[\w.-]+%$/.test(value) ? (english[value.slice(1, -1)] ?? value) : value,
) as Manifest;
const properties = manifest.contributes.configuration.properties;

test("every server setting and the client settings are declared with a description", () => {
  const client = Object.keys(DEFAULT_CLIENT_SETTINGS).map((k) => `graphlife.${k}`);
  const expected = [...SERVER_KEYS.map((k) => `graphlife.${k}`), ...client, "graphlife.interpreter", "graphlife.trace.server"];
  assert.deepEqual(Object.keys(properties).sort(), expected.sort());
  for (const [key, spec] of Object.entries(properties)) {
    assert.ok((spec.description ?? spec.markdownDescription ?? "").length > 20, `${key} needs a description`);
    assert.notEqual(spec.default, undefined, `${key} needs a default`);
  }
});

test("the interpreter and the graphlife path are machine-overridable and restricted in untrusted workspaces", () => {
  assert.equal(properties["graphlife.interpreter"].scope, "machine-overridable");
  assert.equal(properties["graphlife.path"].scope, "machine-overridable");
  assert.deepEqual(manifest.capabilities.untrustedWorkspaces, {
    supported: "limited",
    description: manifest.capabilities.untrustedWorkspaces.description,
    restrictedConfigurations: ["graphlife.interpreter", "graphlife.path"],
  });
});

test("the Marketplace page: a short name, an icon that is a PNG, categories, keywords, its own README and CHANGELOG", () => {
  assert.ok(manifest.displayName.length <= 40, `"${manifest.displayName}" is cut off in the Extensions view`);
  assert.ok(manifest.icon, "an icon");
  const icon = fs.readFileSync(path.join(root, manifest.icon));
  assert.deepEqual([...icon.subarray(1, 4)], [0x50, 0x4e, 0x47], "the icon is a PNG");
  assert.ok(icon.readUInt32BE(16) >= 128 && icon.readUInt32BE(20) >= 128, "the Marketplace wants 128x128 or larger");
  for (const category of ["Linters", "Debuggers", "Notebooks", "Machine Learning"]) assert.ok(manifest.categories.includes(category), category);
  for (const keyword of ["pytorch", "autograd"]) assert.ok(manifest.keywords.includes(keyword), keyword);
  assert.equal(manifest.repository, undefined, "no link to a repository that does not exist");
  const readme = fs.readFileSync(path.join(root, "client", "README.md"), "utf8");
  assert.ok(!/\bmake\b/.test(readme.split("\n").slice(0, 10).join("\n")), "the page opens with what it finds, not build commands");
  assert.match(readme, /## Setting the Python interpreter/);
  assert.ok(!/!\[[^\]]*\]\((?!https:)/.test(readme), "images on the Marketplace must be https URLs");
  assert.ok(fs.existsSync(path.join(root, "client", "CHANGELOG.md")));
  const packaging = fs.readFileSync(path.join(root, "client", "package.mjs"), "utf8");
  assert.match(packaging, /--readme-path/);
  const ignore = fs.readFileSync(path.join(root, ".vscodeignore"), "utf8");
  for (const file of ["client/README.md", "client/CHANGELOG.md", manifest.icon]) assert.ok(ignore.includes(`!${file}`), `${file} goes into the .vsix`);
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

test("commands: restart, logs, rule pages, and the debug inspector's ids", () => {
  const commands = new Map<string, string>(
    manifest.contributes.commands.map((c) => [c.command, c.category ? `${c.category}: ${c.title}` : c.title]),
  );
  assert.equal(commands.get("graphlife.restart"), "graphlife: Restart Server");
  assert.equal(commands.get("graphlife.showLogs"), "graphlife: Show Logs");
  assert.equal(commands.get("graphlife.showRuleDocumentation"), "graphlife: Show Rule Documentation");
  assert.ok(commands.has("graphlife.turnOffRule"));
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
