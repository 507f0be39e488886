"""The graphlife language server: pygls wiring only, over the same engine as the CLI.

Modules, one job each:

- :mod:`.server` — builds the pygls server, registers the LSP features, ``start()``.
- :mod:`.positions` — the one place that turns graphlife's 1-based character
  positions into LSP positions (UTF-16 or whatever encoding was negotiated) and back.
- :mod:`.documents` — what gets analyzed: a text document or a notebook's cells
  joined into one source, with the line map back to each document.
- :mod:`.notebooks` — joining notebook cells (magics blanked) and the line map.
- :mod:`.debounce` — per-document timers so typing does not start an analysis per key.
- :mod:`.linting` — runs the checker off the event loop, drops stale results, caches.
- :mod:`.cancel` — stops a stale or runaway analysis inside its worker thread.
- :mod:`.isolated` — a big document's checker process: keeps its incremental checker between edits.
- :mod:`.checker_process` — the server's handle on that process: send a version, await findings, kill.
- :mod:`.memory` — gives the heap of a big analysis back to the OS.
- :mod:`.diagnostics` — ``Finding`` -> ``Diagnostic``, on the analyzed document or another file of the project.
- :mod:`.project` — what the analyses say about each other's files: merged diagnostics per URI,
  and which open documents read which files (re-analyzed when one changes).
- :mod:`.unanalyzed` — syntax errors and skipped work as diagnostics (``showSyntaxErrors``).
- :mod:`.workspace_scope` — ``reportingScope: workspace``: the closed files of the workspace checked too.
- :mod:`.code_actions` — quick fixes (resolved lazily), fix-all, "ignore on this line".
- :mod:`.rule_actions` — the menu's items about a rule: fix all, ignore in the file, turn off; unsafe titles.
- :mod:`.hover` — a short hover: rule, severity, what torch says, the graph-lifetime story, a link.
- :mod:`.rule_links` — where a rule's page is (the client's command, a documented site, the CLI)
  and the ``graphlife/ruleDocumentation`` answer.
- :mod:`.settings` — editor settings (initializationOptions, workspace/configuration)
  and ``[tool.graphlife]`` from pyproject.toml.
- :mod:`.log` — messages to the client's output channel.

The server never imports torch and never runs the user's code: it only parses it.
"""
