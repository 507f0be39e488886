// What the real-VS-Code tests (run.mjs in English, run_chinese.mjs in Chinese) share:
// starting code-server and waiting until it listens, installing an extension, a clean
// environment for the server, the graphlife log the extension host wrote, the command
// palette, and the steps that report every failure with a screenshot and the log.
//
// Why one module: the two tests drive the same VS Code the same way; a fix to how one
// waits for code-server (or for a command to be registered) must reach the other.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

/** A TCP port free on 127.0.0.1 at the moment of asking. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** PATH without this repository's .venv: the server must run on the system Python + bundled libraries. */
export function cleanEnv() {
  const env = { ...process.env };
  delete env.VIRTUAL_ENV;
  delete env.PYTHONPATH;
  env.PATH = (env.PATH || "")
    .split(path.delimiter)
    .filter((p) => !p.includes(`${path.sep}.venv${path.sep}`) && !p.endsWith(`${path.sep}.venv`) && !p.includes("node_modules"))
    .join(path.delimiter);
  return env;
}

/** The graphlife output channel of the VS Code whose user data folder is `user` (each file's last `tail` characters). */
export function logsUnder(user, tail = 6000) {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/graphlife\.log$/.test(entry.name)) found.push(full);
    }
  };
  walk(path.join(user, "logs"));
  return found.map((f) => `--- ${f}\n${fs.readFileSync(f, "utf8").slice(-tail)}`).join("\n") || "(no graphlife log was written: the extension did not activate)";
}

/** `code-server --install-extension file` into the test's own folders; throws with code-server's output when it fails. */
export function installExtension(entry, dirs, file) {
  const r = spawnSync(process.execPath, [entry, "--extensions-dir", dirs.ext, "--user-data-dir", dirs.user, "--install-extension", file], { encoding: "utf8" });
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0 || !/successfully installed/i.test(out)) throw new Error(`code-server could not install ${file}:\n${out}`);
}

/**
 * Starts code-server (its own process group, so that killing it takes the extension host and
 * the language server along) and resolves with the child once it says it listens.
 */
export async function startCodeServer(entry, { port, user, ext, folder, extraArgs = [] }) {
  const child = spawn(
    process.execPath,
    [
      entry,
      "--bind-addr", `127.0.0.1:${port}`,
      "--auth", "none",
      "--disable-telemetry",
      "--disable-update-check",
      ...extraArgs,
      "--extensions-dir", ext,
      "--user-data-dir", user,
      folder,
    ],
    { env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not start:\n${output}`)), 60_000);
    const onData = (chunk) => {
      output += chunk;
      if (output.includes("HTTP server listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => reject(new Error(`code-server exited (${code}):\n${output}`)));
  });
  return child;
}

/** Stops a code-server started by `startCodeServer` (and everything it started). */
export function stopCodeServer(child) {
  if (!child?.pid) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // already gone
  }
}

/**
 * Runs a command from the palette. The palette lists the commands registered when it opens,
 * so it is opened again until the command is there (an extension still activating registers
 * its commands a moment later).
 */
export async function runCommand(page, title, timeout = 30_000) {
  for (const deadline = Date.now() + timeout; ;) {
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill(`>${title}`);
    const item = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
    if (await item.waitFor({ state: "visible", timeout: 3_000 }).then(() => true, () => false)) {
      await item.click();
      return;
    }
    await page.keyboard.press("Escape");
    if (Date.now() > deadline) throw new Error(`the command palette has no "${title}"`);
  }
}

/**
 * The test's steps. `step(name, fn)` runs one user-visible step; a failed step fails the test
 * (the exit status), leaves a screenshot and the graphlife log, and stops the test unless
 * `fatal: false` (a step independent of what follows: the rest still run, so one report
 * shows every problem). `page()` gives the page of the moment (none before the browser opens).
 */
export function stepRunner({ prefix, work, page, log }) {
  const failures = [];
  async function step(name, fn, { fatal = true } = {}) {
    console.log(`${prefix}: ${name}`);
    try {
      return await fn();
    } catch (error) {
      console.error(`\n${prefix}: FAIL in step "${name}": ${error instanceof Error ? error.message : error}`);
      const current = page();
      if (current) {
        const shot = path.join(work, `failure-${failures.length + 1}.png`);
        await current.screenshot({ path: shot }).catch(() => undefined);
        console.error(`${prefix}: failure screenshot: ${shot}`);
        console.error(`${prefix}: graphlife output channel:\n${log()}`);
      }
      failures.push(name);
      process.exitCode = 1;
      if (fatal) throw error;
      await current?.keyboard.press("Escape").catch(() => undefined);
    }
  }
  return { step, failures };
}
