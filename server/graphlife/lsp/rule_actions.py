"""The light-bulb items that are about a rule rather than one finding, and unsafe fixes' titles.

Besides a finding's own fixes and "Ignore GLxxx on this line", the menu offers (as
ruff's does): "Fix all graphlife problems" (the fix-all that
``source.fixAll.graphlife`` runs on save, as a quick fix), "Ignore GLxxx in this
file" (a ``# graphlife: ignore-file[GLxxx]`` line, :mod:`graphlife.file_ignores`),
and "Turn off GLxxx in settings" (the client's command adds the code to
``graphlife.ignore``; offered only when the client named such a command).

A fix that changes which gradients the program computes (a ``.detach()``, a
truncated backpropagation through time) or what it keeps in memory is right for
the finding, but the user has to agree to that change: its title says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphlife.file_ignores import file_ignores, ignore_file_comment, parse_comment
from graphlife.findings import Finding, Span
from graphlife.fixes import TextEdit
from graphlife.lsp.documents import Snapshot
from graphlife.text_lines import source_lines

#: ``initializationOptions`` key with which a client names its command that adds a code to
#: ``graphlife.ignore`` (called with the code as its one argument).
TURN_OFF_OPTION = "turnOffRuleCommand"

#: Fix recipes that change what the program computes beyond removing the bug, and what changes.
UNSAFE_RECIPES = {
    "detach_carried_state": "gradients no longer flow into earlier iterations",
    "detach_expression": "no gradient flows through it any more",
    "use_detach": "no gradient flows through it any more",
    "detach_requires_grad": "its gradient no longer reaches the tensors it came from",
    "retain_graph": "the graph stays in memory and a second backward adds to the gradients",
}


def fix_title(finding: Finding, title: str) -> str:
    """The menu title of one of ``finding``'s fixes: marked when its recipe is unsafe."""
    kinds = [recipe.kind for recipe in finding.fixes if recipe.title == title]
    why = next((UNSAFE_RECIPES[kind] for kind in kinds if kind in UNSAFE_RECIPES), None)
    return f"{title} (unsafe: {why})" if why else title


def file_ignore_edit(snapshot: Snapshot, code: str) -> TextEdit | None:
    """The edit that silences ``code`` in the whole document (notebook: in its first cell),
    ``None`` when a comment already does. An existing ``ignore-file[...]`` line at the top
    gets the code added; else a new line goes before the first line that is not a shebang or
    an encoding declaration (those must stay first)."""
    segment = snapshot.segments[0] if snapshot.segments else None
    if segment is None:
        return None
    lines = list(segment.lines)
    if file_ignores(source_lines(snapshot.source)).covers(code):
        return None
    for number, line in enumerate(lines, start=1):
        found = parse_comment(line) if line.lstrip().startswith("#") else None
        if found is not None and found.codes:
            new = ignore_file_comment([*found.codes, code])
            at = segment.line_offset + number
            return TextEdit(Span(at, 1, at, len(line) + 1), new)
    first = 0
    while first < min(len(lines), 2) and _stays_first(lines[first], first):
        first += 1
    at = segment.line_offset + first + 1
    return TextEdit(Span(at, 1, at, 1), ignore_file_comment([code]) + "\n")


def _stays_first(line: str, index: int) -> bool:
    """A shebang (line 1) or a PEP 263 encoding declaration (line 1 or 2)."""
    stripped = line.strip()
    if index == 0 and stripped.startswith("#!"):
        return True
    return stripped.startswith("#") and "coding" in stripped and ("coding:" in stripped or "coding=" in stripped)


def codes_in(findings: Sequence[Finding]) -> list[str]:
    """The distinct codes of ``findings``, in order."""
    return list(dict.fromkeys(finding.code for finding in findings))
