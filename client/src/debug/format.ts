// Small text helpers shared by the tree, the hover and the graph picture.

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "?";
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function formatShape(shape: number[] | null | undefined): string {
  return shape ? `[${shape.join(", ")}]` : "?";
}

/** A gradient's norm for the tree: " |1.500|", " |inf|" or " |nan|" (the probe sends a
 * non-finite norm as a string, strict JSON has no Infinity or NaN), "" when unknown. */
export function formatNorm(norm: number | string | null | undefined): string {
  if (norm === null || norm === undefined) return "";
  return typeof norm === "number" ? ` |${norm.toPrecision(4)}|` : ` |${norm}|`;
}

/** The first sentence of a torch message (its hints are long). */
export function firstSentence(message: string): string {
  return message.split(" Hint:")[0].split(". Saved intermediate")[0];
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}
