// The HTML of the picture panel (graph or exception explanation). Pure; no scripts
// run in the webview, so the content security policy allows inline styles only.

import { t } from "../l10n";
import { escapeHtml, firstSentence } from "./format";
import { renderSvg } from "./graphLayout";
import type { GraphDrawing, Snapshot } from "./snapshot";

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="${t("en")}"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:;">
<title>${escapeHtml(title)}</title>
<style>
 body { font-family: var(--vscode-font-family, sans-serif); color: var(--vscode-foreground, #222); padding: 8px 16px; }
 .picture { background: #fff; color: #222; display: inline-block; border-radius: 6px; padding: 4px; }
 code { font-family: var(--vscode-editor-font-family, monospace); }
 h2 { font-size: 1.1em; margin-top: 1.2em; }
 .note { opacity: 0.8; }
</style></head><body>${body}</body></html>`;
}

export function graphHtml(g: GraphDrawing): string {
  const note = g.truncated ? `<p class="note">${escapeHtml(t("The graph is larger than what is drawn (first {0} nodes).", g.nodes.length))}</p>` : "";
  const body = g.nodes.length
    ? `<h1>${t("Autograd graph of {0}", `<code>${escapeHtml(g.name)}</code>`)}</h1>${note}<div class="picture">${renderSvg(g)}</div>`
    : `<h1>${t("{0} has no graph", `<code>${escapeHtml(g.name)}</code>`)}</h1><p>${escapeHtml(t("It is a leaf or was computed without autograd."))}</p>`;
  return page(t("Autograd graph: {0}", g.name), body);
}

export function exceptionHtml(snap: Snapshot): string {
  const e = snap.exception;
  if (!e) return page(t("No exception"), `<p>${escapeHtml(t("The program is not stopped on an exception."))}</p>`);
  const title = e.code ? `${e.code} ${e.name}` : t("Not an autograd error graphlife knows");
  const parts = [`<h1>${escapeHtml(title)}</h1>`, `<h2>${escapeHtml(t("What torch says"))}</h2><p><code>${escapeHtml(firstSentence(e.message))}</code></p>`];
  if (e.why) parts.push(`<h2>${escapeHtml(t("Why"))}</h2><p>${escapeHtml(e.why)}</p>`);
  if (e.fix) parts.push(`<h2>${escapeHtml(t("Fix"))}</h2><p>${escapeHtml(e.fix)}</p>`);
  if (e.blame) parts.push(`<h2>${escapeHtml(t("In this frame"))}</h2><p>${t("The live objects point at {0}.", `<code>${escapeHtml(e.blame)}</code>`)}</p>`);
  const failing = snap.tensors.filter((t) => t.backward_prediction && !t.backward_prediction.ok && t.backward_prediction.code);
  if (failing.length) {
    parts.push(`<h2>${escapeHtml(t("What a backward would do now"))}</h2><ul>`);
    for (const t of failing.slice(0, 10)) {
      const p = t.backward_prediction!;
      parts.push(`<li><code>${escapeHtml(t.name)}</code>: ${escapeHtml(p.code ?? "")} — ${escapeHtml(p.explanation)}</li>`);
    }
    parts.push("</ul>");
  }
  return page(title, parts.join("\n"));
}

/**
 * The picture of an earlier stop, marked as such: the program ran on, and the graph it
 * shows may be gone or changed (the next stop redraws it when the tensor still exists).
 */
export function staleHtml(html: string, why: string): string {
  const banner = `<p class="note" style="border-left: 3px solid var(--vscode-editorWarning-foreground, #c80); padding-left: 8px;">` +
    `${escapeHtml(why)}</p>`;
  return html.includes("<body>") ? html.replace("<body>", `<body>${banner}`) : banner + html;
}
