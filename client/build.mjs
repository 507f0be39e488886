// Bundles the extension client with esbuild: one CommonJS file, `vscode` left external
// (the editor provides it). `--production` minifies and drops the source map.
import * as esbuild from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Options shared with the node test build (client/test/run.mjs). */
export const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  logLevel: "warning",
};

export async function buildExtension({ production = false } = {}) {
  await esbuild.build({
    ...common,
    entryPoints: [path.join(root, "client/src/extension.ts")],
    outfile: path.join(root, "client/out/extension.js"),
    minify: production,
    sourcemap: !production,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const production = process.argv.includes("--production");
  await buildExtension({ production });
  console.log(`built client/out/extension.js${production ? " (production)" : ""}`);
}
