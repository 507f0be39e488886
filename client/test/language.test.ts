// Which language graphlife writes in, and the packaged rule pages it falls back to.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { effectiveLanguage, languageOfLocale } from "../src/language";
import { t, useTranslator } from "../src/l10n";
import { ruleDocumentFiles, rulePageMarkdown, ruleSection } from "../src/rulePages";
import { statusLook } from "../src/statusLook";

test("VS Code locales of Simplified Chinese are zh-cn; Traditional Chinese and other languages are English", () => {
  for (const locale of ["zh-cn", "zh-CN", "zh", "zh-Hans", "zh-hans-cn", "zh_CN", "zh_CN.UTF-8", "zh-sg"]) assert.equal(languageOfLocale(locale), "zh-cn", locale);
  for (const locale of ["en", "en-us", "zh-tw", "zh-hk", "zh-mo", "zh-Hant", "zh-Hant-TW", "ja", "", undefined]) assert.equal(languageOfLocale(locale), "en", String(locale));
});

test("graphlife.language wins over the display language; auto (or a wrong value) follows it", () => {
  assert.equal(effectiveLanguage("auto", "zh-cn"), "zh-cn");
  assert.equal(effectiveLanguage("auto", "en"), "en");
  assert.equal(effectiveLanguage("en", "zh-cn"), "en");
  assert.equal(effectiveLanguage("zh-cn", "en"), "zh-cn");
  assert.equal(effectiveLanguage("ZH-CN", "de"), "zh-cn");
  assert.equal(effectiveLanguage(42, "zh-cn"), "zh-cn");
  assert.equal(effectiveLanguage(undefined, "fr"), "en");
});

test("strings of modules without vscode go through the translator the extension installs", () => {
  assert.equal(t("{1} of {0}", "a", 2), "2 of a");
  assert.equal(statusLook("running", true).detail, "checking autograd graph lifetimes");
  const bundle = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../../l10n/bundle.l10n.zh-cn.json"), "utf8")) as Record<string, string>;
  useTranslator((message, ...args) => (bundle[message] ?? message).replace(/\{(\d+)\}/g, (_, i: string) => String(args[Number(i)])));
  try {
    assert.equal(statusLook("running", true).detail, "正在检查自动求导计算图的生命周期");
    assert.equal(statusLook("stopped", false).detail, "已停止");
  } finally {
    useTranslator((message, ...args) => message.replace(/\{(\d+)\}/g, (_, i: string) => String(args[Number(i)])));
  }
});

const RULES = [
  "# graphlife rules",
  "",
  "| code | name |",
  "",
  "## GL101 backward-through-freed-graph",
  "",
  "### What it does",
  "",
  "```python",
  "## a comment in an example, not a heading",
  "loss.backward()",
  "```",
  "",
  "## GL102 inplace-modifies-saved-tensor",
  "",
  "Text of GL102.",
].join("\n");

test("a rule's section runs from its heading to the next rule's, one heading level up, code blocks kept", () => {
  const section = ruleSection(RULES, "GL101")!;
  assert.ok(section.startsWith("# GL101 backward-through-freed-graph\n"));
  assert.match(section, /^## What it does$/m);
  assert.match(section, /^## a comment in an example, not a heading$/m, "the code block is kept as written");
  assert.ok(!section.includes("GL102"));
  assert.equal(ruleSection(RULES, "GL102"), "# GL102 inplace-modifies-saved-tensor\n\nText of GL102.\n");
  assert.equal(ruleSection(RULES, "GL999"), undefined);
  assert.equal(ruleSection(RULES, "GL10"), undefined, "a prefix is not a code");
});

test("the Chinese rule pages come from docs/rules.zh-CN.md, then docs/rules.md; English from docs/rules.md alone", () => {
  assert.deepEqual(ruleDocumentFiles("/ext", "zh-cn"), [path.join("/ext", "docs", "rules.zh-CN.md"), path.join("/ext", "docs", "rules.md")]);
  assert.deepEqual(ruleDocumentFiles("/ext", "en"), [path.join("/ext", "docs", "rules.md")]);
  const english = fs.readFileSync(path.resolve(__dirname, "../../../docs/rules.md"), "utf8");
  assert.match(ruleSection(english, "GL101") ?? "", /^# GL101 backward-through-freed-graph/);
});

test("the .vsix carries the translations and both rule documents", () => {
  const ignore = fs.readFileSync(path.resolve(__dirname, "../../../.vscodeignore"), "utf8").split("\n");
  for (const entry of ["!package.nls.json", "!package.nls.*.json", "!l10n/**", "!docs/rules.md", "!docs/rules.zh-CN.md"]) assert.ok(ignore.includes(entry), entry);
});

test("a rule page: Chinese from docs/rules.zh-CN.md first, then the server, then docs/rules.md; English from the server, then docs/rules.md", async () => {
  const chinese = "## GL101 backward-through-freed-graph\n\n### 它检查什么\n";
  const english = "## GL101 backward-through-freed-graph\n\n### What it does\n";
  const files = (present: Record<string, string>) => (file: string) => present[path.basename(file)];
  const server = (page?: string) => () => Promise.resolve(page);
  const page = (language: "en" | "zh-cn", readFile: (f: string) => string | undefined, serverPage: () => Promise<string | undefined>) =>
    rulePageMarkdown("GL101", language, "/ext", { readFile, serverPage });
  const both = files({ "rules.zh-CN.md": chinese, "rules.md": english });
  assert.match((await page("zh-cn", both, server("from the server")))!, /它检查什么/);
  assert.equal(await page("zh-cn", files({ "rules.md": english }), server("from the server")), "from the server");
  assert.match((await page("zh-cn", files({ "rules.md": english }), server()))!, /What it does/);
  assert.equal(await page("en", both, server("from the server")), "from the server");
  assert.match((await page("en", both, server()))!, /What it does/);
  assert.equal(await page("en", files({}), server()), undefined);
});
