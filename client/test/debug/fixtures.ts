// Loads the recorded probe output (tests/debug/record_client_fixtures.py writes it).
import fs from "node:fs";
import path from "node:path";

import { parseGraph, parseSnapshot, type GraphDrawing, type Snapshot } from "../../src/debug/snapshot";

function fixturesDir(): string {
  // Compiled tests run from client/out/test/debug; the sources live in client/test/debug.
  const candidates = [path.resolve(__dirname, "fixtures"), path.resolve(__dirname, "../../../test/debug/fixtures"), path.resolve(process.cwd(), "client/test/debug/fixtures")];
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, "snapshot.json")));
  if (!found) throw new Error(`fixtures not found in ${candidates.join(", ")}`);
  return found;
}

export function snapshotText(): string {
  return fs.readFileSync(path.join(fixturesDir(), "snapshot.json"), "utf8");
}

export function loadSnapshot(): Snapshot {
  return parseSnapshot(snapshotText());
}

export function loadGraph(): GraphDrawing {
  return parseGraph(fs.readFileSync(path.join(fixturesDir(), "graph.json"), "utf8"));
}
