// The real-VS-Code test once more, with VS Code's display language Simplified Chinese:
// code-server 4.100.3 (VS Code 1.100.3) in Debian's headless Chromium, the built .vsix
// installed, as in tests/e2e/run.mjs.
//
// How VS Code gets a Chinese display language offline: VS Code shows a display language
// only when a language pack for it is installed, and the Chinese pack comes from the
// Marketplace, which the test machines cannot reach (`--locale zh-cn` alone leaves VS
// Code in English and tells extensions "en"). So a stand-in pack
// (stand-in-language-pack-zh-cn/) declares zh-cn without translating VS Code itself, and
// the test registers it in VS Code's language-pack cache (`languagepacks.json` in the user
// data folder, which VS Code writes when a pack is installed from the Extensions view; the
// command-line install does not write it). code-server then runs with `--locale zh-cn`:
// VS Code's own menus stay English (the stand-in has no translations), and everything
// VS Code hands to extensions is zh-cn. What the test checks is what a Chinese user sees
// of graphlife: the command titles from package.nls.zh-cn.json, the language status from
// the l10n bundle, the log, the server's Chinese diagnostics and hover (the language
// client sends the display language as `locale` in initialize), and the rule page from
// docs/rules.zh-CN.md; and that `graphlife.language: "en"` turns the diagnostics English
// without a restart.
//
// A picture for the README (docs/screenshots/e2e-zh-hover.png) is written only when
// GRAPHLIFE_E2E_SCREENSHOTS=1 asks for it. Without Chromium the test says SKIP and exits 0.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { freePort, installExtension, logsUnder, runCommand as runPaletteCommand, startCodeServer, stepRunner, stopCodeServer } from "./harness.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const chromiumPath = process.env.GRAPHLIFE_E2E_CHROMIUM || "/usr/bin/chromium";
const shots = path.join(root, "docs", "screenshots");
const wantScreenshots = process.env.GRAPHLIFE_E2E_SCREENSHOTS === "1";
const TIMEOUT = Number(process.env.GRAPHLIFE_E2E_TIMEOUT_MS || 120_000);
const LOCALE = "zh-cn";
/** The GL101 line of tests/e2e/workspace/train.py. */
const GL101_LINE = 19;
const CHINESE = /[\u4e00-\u9fff]/;

if (!fs.existsSync(chromiumPath)) {
  const bar = "!".repeat(78);
  console.log(`${bar}\n!! SKIP: the Chinese real-VS-Code test needs Chromium at ${chromiumPath} (apt-get install chromium).\n${bar}`);
  process.exit(0);
}

const { chromium } = await import("playwright-core");

const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const nlsChinese = JSON.parse(fs.readFileSync(path.join(root, "package.nls.zh-cn.json"), "utf8"));
const bundle = JSON.parse(fs.readFileSync(path.join(root, "l10n", "bundle.l10n.zh-cn.json"), "utf8"));
const vsix = path.join(root, "dist", `graphlife-${manifest.version}.vsix`);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "graphlife-e2e-zh-"));
const dirs = { ext: path.join(work, "ext"), user: path.join(work, "user"), ws: path.join(work, "workspace") };
let codeServer;
let browser;
let page;

function log(message) {
  console.log(`e2e-zh: ${message}`);
}

function fail(message) {
  throw new Error(message);
}

/** The graphlife output channel as the extension host wrote it. */
function graphlifeLog(tail = Infinity) {
  return logsUnder(dirs.user, tail);
}

const { step, failures } = stepRunner({ prefix: "e2e-zh", work, page: () => page, log: () => graphlifeLog(4000) });

function install(entry, file) {
  installExtension(entry, dirs, file);
}

/**
 * The entry VS Code's language-pack cache gets when a pack is installed from the Extensions
 * view (vs/platform/languagePacks/node/languagePacks.ts of VS Code 1.100: the hash is the MD5
 * of each pack's id and version; `translations.vscode` is the pack's file for VS Code itself).
 */
function registerLanguagePack(packManifest) {
  const id = `${packManifest.publisher}.${packManifest.name}`;
  const folder = fs.readdirSync(dirs.ext).find((d) => d.toLowerCase().startsWith(`${id}-`.toLowerCase()));
  if (!folder) fail(`the stand-in language pack is not in ${dirs.ext}`);
  const [localization] = packManifest.contributes.localizations;
  const hash = crypto.createHash("md5").update(id).update(packManifest.version).digest("hex");
  const cache = {
    [localization.languageId]: {
      hash,
      extensions: [{ extensionIdentifier: { id }, version: packManifest.version }],
      translations: { vscode: path.join(dirs.ext, folder, localization.translations[0].path) },
      label: localization.localizedLanguageName,
    },
  };
  fs.writeFileSync(path.join(dirs.user, "languagepacks.json"), JSON.stringify(cache));
}

async function runCommand(title) {
  await runPaletteCommand(page, title);
}

async function main() {
  const entry = await step("install code-server 4.100.3 (cached)", () => {
    const r = spawnSync("bash", [path.join(root, "tests/e2e/install-code-server.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    if (r.status !== 0) fail("tests/e2e/install-code-server.sh failed");
    return r.stdout.trim().split("\n").pop();
  });

  await step("install graphlife and the stand-in zh-cn language pack", () => {
    if (!fs.existsSync(vsix)) fail(`${path.relative(root, vsix)} is missing: run \`npm run package\` first.`);
    fs.mkdirSync(path.join(dirs.user, "User"), { recursive: true });
    fs.mkdirSync(dirs.ext, { recursive: true });
    fs.cpSync(path.join(root, "tests/e2e/workspace"), dirs.ws, { recursive: true });
    fs.writeFileSync(
      path.join(dirs.user, "User", "settings.json"),
      JSON.stringify({
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.colorTheme": "Default Light Modern",
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "editor.minimap.enabled": false,
        "editor.hover.delay": 200,
        "chat.commandCenter.enabled": false,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "window.restoreWindows": "none",
      }),
    );
    const packFolder = path.join(root, "tests/e2e/stand-in-language-pack-zh-cn");
    const packVsix = path.join(work, "stand-in-language-pack-zh-cn.vsix");
    const vsce = path.join(root, "node_modules", "@vscode", "vsce", "vsce");
    const packed = spawnSync(process.execPath, [vsce, "package", "--no-dependencies", "--skip-license", "--allow-missing-repository", "--out", packVsix], { cwd: packFolder, encoding: "utf8" });
    if (packed.status !== 0) fail(`could not package the stand-in language pack:\n${packed.stdout}${packed.stderr}`);
    install(entry, packVsix);
    registerLanguagePack(JSON.parse(fs.readFileSync(path.join(packFolder, "package.json"), "utf8")));
    install(entry, vsix);
  });

  const port = await freePort();
  await step(`start code-server with --locale ${LOCALE} on 127.0.0.1:${port}`, async () => {
    codeServer = await startCodeServer(entry, {
      port, user: dirs.user, ext: dirs.ext, folder: dirs.ws, extraArgs: ["--disable-workspace-trust", "--locale", LOCALE],
    });
  });

  await step("VS Code runs with the zh-cn display language", async () => {
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    // The language of the NLS messages the workbench loaded (VS Code's `_VSCODE_NLS_LANGUAGE`,
    // what it reports to extensions as `vscode.env.language`); English when no pack matched.
    const language = await page.evaluate(() => globalThis._VSCODE_NLS_LANGUAGE ?? "en");
    if (language !== LOCALE) fail(`VS Code's display language is "${language}", not ${LOCALE}: the stand-in language pack was not used`);
  });

  await step("open train.py; the squiggles come", async () => {
    const row = page.locator(".explorer-folders-view .monaco-list-row", { hasText: "train.py" });
    await row.waitFor({ timeout: 60_000 });
    await row.click();
    await page.waitForFunction(() => document.querySelectorAll(".monaco-editor .squiggly-error").length >= 2, null, { timeout: TIMEOUT });
  });

  await step("the language status item says, in Chinese, that graphlife is checking", async () => {
    const running = bundle["checking autograd graph lifetimes"];
    if (!running || !CHINESE.test(running)) fail("the bundle has no Chinese status text");
    const languageStatus = page.locator('[id="status.languageStatus"]');
    await languageStatus.waitFor({ state: "visible", timeout: 30_000 });
    await languageStatus.hover();
    await page.locator(".monaco-hover:not(.hidden)", { hasText: running }).first().waitFor({ state: "visible", timeout: 30_000 });
    await page.keyboard.press("Escape");
    await page.mouse.move(5, 790);
  }, { fatal: false });

  await step("the commands have their Chinese titles; 显示日志 shows the log written in Chinese", async () => {
    const title = `${nlsChinese["command.category"]}: ${nlsChinese["command.showLogs.title"]}`;
    if (!CHINESE.test(title)) fail(`"${title}" is not Chinese`);
    await runCommand(title);
    // "正在用 Python 3.x，位于 ... 启动服务器" (the English log says "Starting the server with Python").
    const starting = bundle["Starting the server with {0}; {1} server; {2}"].split("{0}")[0];
    await page.waitForFunction(
      (text) => [...document.querySelectorAll(".part.panel .monaco-editor .view-lines")].some((e) => e.textContent.replace(/\s+/g, " ").includes(text)),
      starting.trim(),
      { timeout: 30_000 },
    );
  }, { fatal: false });

  await step("the Problems panel and the hover speak Chinese; the hover's link opens the Chinese rule page", async () => {
    await runCommand("View: Focus Problems");
    await page.waitForFunction(
      () => [...document.querySelectorAll(".markers-panel .monaco-list-row")].some((r) => r.textContent.includes("GL101") && /[\u4e00-\u9fff]/.test(r.textContent)),
      null,
      { timeout: 30_000 },
    );
    const number = page.locator(".monaco-editor .line-numbers", { hasText: new RegExp(`^${GL101_LINE}$`) }).first();
    const lineBox = await number.boundingBox();
    if (!lineBox) fail(`line ${GL101_LINE} is not on screen`);
    let target;
    for (const squiggle of await page.locator(".monaco-editor .squiggly-error").all()) {
      const box = await squiggle.boundingBox();
      if (box && Math.abs(box.y + box.height / 2 - (lineBox.y + lineBox.height / 2)) < lineBox.height / 2) target = box;
    }
    if (!target) fail(`no squiggle on line ${GL101_LINE}`);
    await page.mouse.move(target.x + Math.min(30, target.width / 2), target.y + target.height / 2);
    // graphlife's part of the hover ends with the link to the rule's page: "GL101 规则文档".
    const hover = page.locator(".monaco-hover:not(.hidden)").filter({ hasText: "GL101 规则文档" });
    await hover.first().waitFor({ state: "visible", timeout: 30_000 });
    const text = await hover.first().innerText();
    if (!/backward through the graph a second time/i.test(text)) fail(`the hover does not quote torch's own (English) message:\n${text}`);
    if (wantScreenshots) {
      await page.waitForFunction(() => [...document.querySelectorAll(".monaco-hover:not(.hidden)")].every((e) => getComputedStyle(e).opacity === "1"), null, { timeout: 5_000 }).catch(() => undefined);
      fs.mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, "e2e-zh-hover.png") });
    }
    await hover.first().locator("a", { hasText: "GL101 规则文档" }).click();
    await page.locator(".tab", { hasText: "GL101" }).first().waitFor({ state: "visible", timeout: 20_000 });
    // The page is a markdown preview (a webview: frames in frames); its headings are docs/rules.zh-CN.md's.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const texts = await Promise.all(page.frames().map((f) => f.evaluate(() => document.body?.innerText ?? "").catch(() => "")));
      if (texts.some((t) => t.includes("GL101") && t.includes("它检查什么"))) break;
      if (Date.now() > deadline) fail("the rule page is not the Chinese one (no 它检查什么 heading)");
      await page.waitForTimeout(250);
    }
  }, { fatal: false });

  await step("graphlife.language: en in the workspace settings turns the diagnostics English without a restart", async () => {
    const startsBefore = graphlifeLog().split(bundle["Starting the server with {0}; {1} server; {2}"].split("{0}")[0].trim()).length;
    fs.mkdirSync(path.join(dirs.ws, ".vscode"), { recursive: true });
    fs.writeFileSync(path.join(dirs.ws, ".vscode", "settings.json"), JSON.stringify({ "graphlife.language": "en" }));
    await runCommand("View: Focus Problems");
    await page.waitForFunction(
      () => [...document.querySelectorAll(".markers-panel .monaco-list-row")].some((r) => r.textContent.includes("GL101") && /backpropagates/.test(r.textContent) && !/[\u4e00-\u9fff]/.test(r.textContent)),
      null,
      { timeout: 30_000 },
    );
    const startsAfter = graphlifeLog().split(bundle["Starting the server with {0}; {1} server; {2}"].split("{0}")[0].trim()).length;
    if (startsAfter !== startsBefore) fail("changing graphlife.language restarted the server");
  }, { fatal: false });
}

try {
  await main();
  if (failures.length > 0) throw new Error(`${failures.length} step(s) failed`);
  log(wantScreenshots ? `PASS (screenshot in ${path.relative(root, shots)}/)` : "PASS (no screenshot: GRAPHLIFE_E2E_SCREENSHOTS=1 writes it)");
} catch {
  process.exitCode = 1;
  console.error(`\ne2e-zh: FAILED: ${failures.join("; ") || "see above"}`);
} finally {
  await browser?.close().catch(() => undefined);
  stopCodeServer(codeServer); // its own process group: the extension host and the server go too
  if (process.exitCode !== 1) fs.rmSync(work, { recursive: true, force: true });
  else console.error(`e2e-zh: kept ${work} for inspection`);
}
