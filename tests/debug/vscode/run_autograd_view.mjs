// The Autograd view in a real VS Code (code-server 4.100.3 + headless Chromium):
// debug tests/debug/scripts/inplace_after_sigmoid.py with debugpy's own adapter,
// stop before the faulty backward, and check what the view shows; continue into
// the error and check the view leads with the GL102 explanation.
//
//   node tests/debug/vscode/run_autograd_view.mjs      (after `node client/build.mjs`)
//
// Uses the code-server that tests/e2e/install-code-server.sh caches. Screenshots go
// to $GRAPHLIFE_AUTOGRAD_SHOTS (default: a temp folder). Exit 0 on success.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const python = process.env.GRAPHLIFE_PYTHON || path.join(root, ".venv", "bin", "python");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "graphlife-autograd-"));
const shots = process.env.GRAPHLIFE_AUTOGRAD_SHOTS || work;
const dirs = { ext: path.join(work, "ext"), user: path.join(work, "user"), ws: path.join(work, "ws") };
const log = (m) => console.log(`autograd-e2e: ${m}`);

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function until(what, fn, timeout = 120_000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

function installExtensions() {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const ours = path.join(dirs.ext, `${manifest.publisher}.${manifest.name}-${manifest.version}`);
  fs.mkdirSync(path.join(ours, "client", "out"), { recursive: true });
  fs.copyFileSync(path.join(root, "package.json"), path.join(ours, "package.json"));
  // The manifest's texts (`%key%` in package.json) and the client's translations.
  for (const file of fs.readdirSync(root).filter((f) => /^package\.nls(\..+)?\.json$/.test(f))) fs.copyFileSync(path.join(root, file), path.join(ours, file));
  fs.cpSync(path.join(root, "l10n"), path.join(ours, "l10n"), { recursive: true });
  fs.copyFileSync(path.join(root, "client", "out", "extension.js"), path.join(ours, "client", "out", "extension.js"));
  fs.cpSync(path.join(root, "server", "graphlife"), path.join(ours, "server", "graphlife"), { recursive: true });
  if (fs.existsSync(path.join(root, "snippets"))) fs.cpSync(path.join(root, "snippets"), path.join(ours, "snippets"), { recursive: true });
  fs.cpSync(path.join(root, "tests", "debug", "vscode", "debugpy-adapter"), path.join(dirs.ext, "graphlife-test.debugpy-adapter-0.0.1"), { recursive: true });
}

/** The graphlife output channel as the extension host wrote it (a graphlife.log under <user-data-dir>/logs). */
function graphlifeLog() {
  const logs = path.join(dirs.user, "logs");
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === "graphlife.log") found.push(full);
    }
  };
  if (fs.existsSync(logs)) walk(logs);
  if (found.length === 0) throw new Error(`no graphlife.log under ${logs}`);
  return found.map((f) => fs.readFileSync(f, "utf8")).join("\n");
}

async function main() {
  const install = spawnSync("bash", [path.join(root, "tests/e2e/install-code-server.sh")], { encoding: "utf8" });
  if (install.status !== 0) throw new Error(`code-server install failed: ${install.stderr}`);
  const entry = install.stdout.trim().split("\n").pop();
  fs.mkdirSync(path.join(dirs.user, "User"), { recursive: true });
  fs.mkdirSync(dirs.ws, { recursive: true });
  fs.copyFileSync(path.join(root, "tests/debug/scripts/inplace_after_sigmoid.py"), path.join(dirs.ws, "train_debug.py"));
  fs.writeFileSync(path.join(dirs.user, "User", "settings.json"), JSON.stringify({
    "workbench.startupEditor": "none", "workbench.tips.enabled": false, "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": false, "extensions.autoUpdate": false, "window.restoreWindows": "none",
    "workbench.colorTheme": "Default Light Modern", "chat.commandCenter.enabled": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "graphlifeTest.python": python, "graphlife.interpreter": [python],
  }, null, 2));
  // code-server is a remote window: VS Code ignores a machine-overridable setting such as
  // graphlife.interpreter in the local User settings once it knows the setting's scope (it
  // dropped it when the debug session started, and the server restarted on PATH's python3,
  // which lacks the server's libraries in this repo-layout run). The Remote settings
  // (<user-data-dir>/Machine/settings.json) are where it applies. It stays in User too: VS
  // Code still drops it from there, and the server must not restart for that.
  fs.mkdirSync(path.join(dirs.user, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(dirs.user, "Machine", "settings.json"), JSON.stringify({ "graphlife.interpreter": [python] }, null, 2));
  installExtensions();
  const port = await freePort();
  const cs = spawn(process.execPath, [entry, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry",
    "--disable-update-check", "--disable-workspace-trust", "--extensions-dir", dirs.ext, "--user-data-dir", dirs.user, dirs.ws],
  { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  cs.stdout.on("data", (c) => (out += c));
  cs.stderr.on("data", (c) => (out += c));
  const { chromium } = await import(path.join(root, "node_modules", "playwright-core", "index.mjs"));
  let browser;
  let page;
  try {
    await until("code-server", () => out.includes("HTTP server listening on"), 60_000);
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws)}`);
    await until("the workbench", () => page.locator(".monaco-workbench").count(), 60_000);
    await page.waitForTimeout(4000);
    log("open train_debug.py (activates graphlife, so the session gets a tracker)");
    await page.locator(".explorer-viewlet .monaco-list-row", { hasText: "train_debug.py" }).first().click();
    // graphlife's status is a language status item (inside the Python one), so its log says it is up.
    await until("graphlife to activate", () => graphlifeLog().includes("language server ready"), 60_000);
    log("start debugging to '# stop here'");
    await until("the debug session to start", async () => {
      await page.keyboard.press("Escape");
      await page.keyboard.press("F1");
      await page.keyboard.type("graphlife test: Debug to");
      const item = page.locator(".quick-input-list .monaco-list-row", { hasText: "Debug to" });
      await item.first().waitFor({ timeout: 5000 });
      await page.keyboard.press("Enter");
      return until("the call stack", async () => /CALL STACK/.test(await page.locator(".sidebar").innerText()), 30_000);
    }, 150_000);
    const sidebar = page.locator(".sidebar");
    const header = page.locator(".pane-header", { hasText: "Autograd" }).first();
    if ((await header.getAttribute("aria-expanded")) !== "true") await header.click();
    const text = await until("the Autograd view to show the stop", async () => {
      const t = await sidebar.innerText();
      return /would raise GL102/.test(t) ? t : false;
    }, 180_000);
    await page.screenshot({ path: path.join(shots, "autograd-view-breakpoint.png") });
    log(`view at the breakpoint:\n${text.slice(text.indexOf("AUTOGRAD"), text.indexOf("AUTOGRAD") + 600)}`);
    for (const want of ["tensors · 2 would fail", "gate", "saved at v0, now v1"]) if (!text.includes(want)) throw new Error(`the view does not mention ${want}`);

    log("draw the graph of `loss`");
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    await page.keyboard.type("graphlife: Draw Autograd Graph");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Draw Autograd Graph" }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press("Enter");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "loss" }).first().waitFor({ timeout: 20_000 });
    await page.keyboard.type("loss");
    await page.keyboard.press("Enter");
    const svg = await until("the graph picture", async () => {
      for (const frame of page.frames()) {
        const html = await frame.content().catch(() => "");
        if (html.includes("<svg") && html.includes("SigmoidBackward0")) return html;
      }
      return false;
    }, 60_000);
    if (!/data-state="modified"/.test(svg) || !svg.includes("AccumulateGrad (model.proj.weight)")) throw new Error("the picture lacks the modified node or the named leaf");
    await page.screenshot({ path: path.join(shots, "autograd-graph.png") });

    log("continue into the error");
    await page.keyboard.press("F5");
    const after = await until("the exception explanation", async () => {
      const t = await sidebar.innerText();
      return /GL102 inplace-modifies-saved-tensor/.test(t) ? t : false;
    }, 120_000);
    await page.screenshot({ path: path.join(shots, "autograd-view-exception.png") });
    log("hover on the faulting line (Show Hover: the editor's hover, not the debugger's)");
    const word = page.locator(".monaco-editor .view-line", { hasText: "loss.backward()" }).first().locator("span span").first();
    await until("the hover with the rule", async () => {
      await word.click();
      await page.keyboard.press("F1");
      await page.keyboard.type("Show or Focus Hover");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Show or Focus Hover" }).first().waitFor({ timeout: 10_000 });
      await page.keyboard.press("Enter");
      await page.waitForTimeout(2000);
      return (await page.locator(".monaco-hover").allInnerTexts()).join("\n").includes("GL102 inplace-modifies-saved-tensor");
    }, 60_000);
    await page.screenshot({ path: path.join(shots, "autograd-hover.png") });
    log(`view on the exception:\n${after.slice(after.indexOf("AUTOGRAD"), after.indexOf("AUTOGRAD") + 600)}`);
    const serverLog = graphlifeLog();
    const starts = serverLog.match(/Starting the server with [^\n]*/g) ?? [];
    log(`server starts:\n${starts.join("\n")}`);
    const onPython = starts.length === 1 && [python, fs.realpathSync(python)].some((p) => starts[0].includes(`at ${p} `));
    if (!onPython) {
      throw new Error(`the server should start once, on ${python}; it started ${starts.length} time(s)`);
    }
    for (const bad of ["Restarting the server", "stopped unexpectedly", "no longer names an interpreter"]) {
      if (serverLog.includes(bad)) throw new Error(`the graphlife log says "${bad}":\n${serverLog.slice(0, 4000)}`);
    }
    log(`PASS (screenshots in ${shots})`);
  } catch (e) {
    if (page) {
      await page.screenshot({ path: path.join(shots, "failure.png") }).catch(() => undefined);
      log(`failure screenshot: ${path.join(shots, "failure.png")}`);
      log(`side bar text:\n${await page.locator(".sidebar").innerText().catch(() => "?")}`);
    }
    throw e;
  } finally {
    await browser?.close();
    try { process.kill(-cs.pid, "SIGTERM"); } catch { /* already gone */ }
  }
}

main().catch((e) => { console.error(`autograd-e2e: FAIL: ${e.stack || e}`); process.exitCode = 1; });
