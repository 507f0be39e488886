// The Chinese extension is complete: every manifest key and every client string has a
// translation with the same placeholders, and nothing translated is left over.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { extractStrings, placeholders } from "./sourceStrings";

const root = path.resolve(__dirname, "../../../..");
const readJson = (file: string) => JSON.parse(fs.readFileSync(path.join(root, file), "utf8")) as Record<string, unknown>;

/** Every `%key%` string value in package.json. */
function manifestKeys(): string[] {
  const keys: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === "string") {
      if (value.length > 2 && value.startsWith("%") && value.endsWith("%")) keys.push(value.slice(1, -1));
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  };
  walk(readJson("package.json"));
  return keys;
}

/** The `%key%`-free manifest texts a user reads: descriptions, titles, names. */
function userTexts(): string[] {
  const manifest = readJson("package.json") as {
    contributes: {
      configuration: { properties: Record<string, { description?: string; markdownDescription?: string; enumDescriptions?: string[] }> };
      commands: { title: string; category?: string }[];
      views: Record<string, { name: string }[]>;
    };
    displayName: string;
    description: string;
  };
  const texts = [manifest.displayName, manifest.description];
  for (const spec of Object.values(manifest.contributes.configuration.properties)) {
    texts.push(...[spec.description, spec.markdownDescription, ...(spec.enumDescriptions ?? [])].filter((t): t is string => t !== undefined));
  }
  for (const command of manifest.contributes.commands) texts.push(command.title, ...(command.category ? [command.category] : []));
  for (const views of Object.values(manifest.contributes.views)) texts.push(...views.map((v) => v.name));
  return texts;
}

test("every user-visible text of package.json is a %key% found in both nls files, and no nls key is unused", () => {
  for (const text of userTexts()) assert.match(text, /^%[\w.-]+%$/, `"${text}" is not translatable`);
  const used = new Set(manifestKeys());
  for (const file of ["package.nls.json", "package.nls.zh-cn.json"]) {
    const nls = readJson(file);
    for (const key of used) assert.equal(typeof nls[key], "string", `${file} has no "${key}"`);
    for (const key of Object.keys(nls)) assert.ok(used.has(key), `${file}: "${key}" is not used by package.json`);
  }
  const english = readJson("package.nls.json") as Record<string, string>;
  const chinese = readJson("package.nls.zh-cn.json") as Record<string, string>;
  for (const key of used) {
    // Code spans (`GL1`, `auto`) are values the user types: the same in both languages.
    const spans = (text: string) => text.split("`").filter((_, i) => i % 2 === 1).sort();
    assert.deepEqual(spans(chinese[key]), spans(english[key]), `the code spans of "${key}"`);
  }
});

test("the Chinese manifest is Chinese, not a copy of the English", () => {
  const chinese = readJson("package.nls.zh-cn.json") as Record<string, string>;
  for (const key of ["description", "config.language.markdownDescription", "command.restart.title", "command.showRuleDocumentation.title"]) {
    assert.match(chinese[key], /[\u4e00-\u9fff]/, key);
  }
});

test("the manifest declares the l10n folder and its Chinese bundle exists", () => {
  assert.equal(readJson("package.json").l10n, "./l10n");
  assert.ok(fs.existsSync(path.join(root, "l10n", "bundle.l10n.zh-cn.json")));
});

test("every client string has a zh-cn translation with the same placeholders, and the bundle has no stale entry", () => {
  const { strings, dynamic } = extractStrings(path.join(root, "client", "src"));
  assert.deepEqual(dynamic, [], "a translated message must be a string literal");
  assert.ok(strings.length > 100, `found only ${strings.length} strings: the extraction is broken`);
  const bundle = readJson("l10n/bundle.l10n.zh-cn.json") as Record<string, string | undefined>;
  const messages = new Set(strings.map((s) => s.message));
  for (const s of strings) {
    const wanted = placeholders(s.message);
    assert.deepEqual(wanted, wanted.map((_, i) => i), `${s.where}: placeholders are {0}, {1}, ... in order of use`);
    assert.equal(s.argumentCount, wanted.length, `${s.where}: "${s.message}" fills ${wanted.length} placeholders with ${s.argumentCount} arguments`);
    const translated = bundle[s.message];
    assert.equal(typeof translated, "string", `${s.where}: no zh-cn translation of "${s.message}"`);
    assert.deepEqual(placeholders(translated ?? ""), wanted, `the zh-cn text of "${s.message}" has other placeholders`);
  }
  for (const key of Object.keys(bundle)) assert.ok(messages.has(key), `l10n/bundle.l10n.zh-cn.json: "${key}" is no longer in client/src`);
});

test("the extraction sees vscode.l10n.t and the imported t under another name, and only literal messages", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graphlife-l10n-"));
  fs.writeFileSync(
    path.join(dir, "a.ts"),
    [
      'import * as vscode from "vscode";',
      'import { t as tr } from "./l10n";',
      'vscode.l10n.t("one {0}", x);',
      'tr("two");',
      "vscode.l10n.t(`three ${x}`);",
      'other.t("not ours");',
    ].join("\n"),
  );
  const { strings, dynamic } = extractStrings(dir);
  assert.deepEqual(strings.map((s) => [s.message, s.argumentCount]), [["one {0}", 1], ["two", 0]]);
  assert.equal(dynamic.length, 1);
  fs.rmSync(dir, { recursive: true, force: true });
});
