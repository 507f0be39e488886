// Draws the extension's icon (client/images/icon.png, 256x256): a small autograd graph -
// two inputs through one operation into the loss (PyTorch's orange) - on a dark tile.
// Run `node tools/make_icon.mjs` after changing it; the PNG is committed.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";

const SIZE = 256;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const target = path.join(root, "client", "images", "icon.png");

const background = [30, 30, 46];
const orange = [238, 76, 44]; // PyTorch's orange
const light = [205, 214, 244];
const nodes = [
  { x: 64, y: 64, r: 22, color: light },
  { x: 192, y: 64, r: 22, color: light },
  { x: 128, y: 128, r: 24, color: light },
  { x: 128, y: 200, r: 30, color: orange },
];
const edges = [
  [nodes[0], nodes[2]],
  [nodes[1], nodes[2]],
  [nodes[2], nodes[3]],
];

function segmentDistance(px, py, a, b) {
  const dx = b.x - a.x, dy = b.y - a.y;
  const t = Math.max(0, Math.min(1, ((px - a.x) * dx + (py - a.y) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (a.x + t * dx), py - (a.y + t * dy));
}

/** Coverage (0..1) of a shape at distance `d` from its edge (negative inside), one pixel of antialiasing. */
const cover = (d) => Math.max(0, Math.min(1, 0.5 - d));

function pixel(x, y) {
  let color = background;
  const blend = (c, a) => (color = color.map((v, i) => v * (1 - a) + c[i] * a));
  // rounded tile corners: transparent outside
  const corner = 40;
  const cx = Math.min(Math.max(x, corner), SIZE - corner), cy = Math.min(Math.max(y, corner), SIZE - corner);
  const alpha = cover(Math.hypot(x - cx, y - cy) - corner);
  for (const [a, b] of edges) blend(light, 0.85 * cover(segmentDistance(x, y, a, b) - 5));
  for (const node of nodes) {
    blend(node.color, cover(Math.hypot(x - node.x, y - node.y) - node.r));
    blend(background, cover(Math.hypot(x - node.x, y - node.y) - (node.r - 9)));
  }
  blend(orange, cover(Math.hypot(x - nodes[3].x, y - nodes[3].y) - 12));
  return [...color.map((v) => Math.round(v)), Math.round(alpha * 255)];
}

function crc32(buffer) {
  let crc = ~0;
  for (const byte of buffer) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

const rows = [];
for (let y = 0; y < SIZE; y++) {
  const row = Buffer.alloc(1 + SIZE * 4); // filter byte 0, then RGBA
  for (let x = 0; x < SIZE; x++) Buffer.from(pixel(x + 0.5, y + 0.5)).copy(row, 1 + x * 4);
  rows.push(row);
}
const header = Buffer.alloc(13);
header.writeUInt32BE(SIZE, 0);
header.writeUInt32BE(SIZE, 4);
header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, no filter, no interlace
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", header),
  chunk("IDAT", zlib.deflateSync(Buffer.concat(rows), { level: 9 })),
  chunk("IEND", Buffer.alloc(0)),
]);
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, png);
console.log(`wrote ${path.relative(root, target)} (${png.length} bytes)`);
