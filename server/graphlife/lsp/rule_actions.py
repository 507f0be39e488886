"""The light-bulb items that are about a rule rather than one finding.

Besides a finding's own fixes and "Ignore GLxxx on this line", the menu offers (as
ruff's does): "Fix all graphlife problems" (the fix-all that
``source.fixAll.graphlife`` runs on save, as a quick fix), "Ignore GLxxx in this
file" (a ``# graphlife: ignore-file[GLxxx]`` line, read by :mod:`graphlife.suppression`),
and "Turn off GLxxx in settings" (the client's command adds the code to
``graphlife.ignore``; offered only when the client named such a command).

(Unsafe fixes are titled as such by :mod:`.code_actions`, from the fix's own applicability.)
"""

from __future__ import annotations

from collections.abc import Sequence

from graphlife.findings import Finding, Span
from graphlife.fixes import TextEdit
from graphlife.lsp.documents import Snapshot
from graphlife.suppression import file_suppression
from graphlife.text_lines import source_lines

#: ``initializationOptions`` key with which a client names its command that adds a code to
#: ``graphlife.ignore`` (called with the code as its one argument).
TURN_OFF_OPTION = "turnOffRuleCommand"

def file_ignore_edit(snapshot: Snapshot, code: str) -> TextEdit | None:
    """The edit that silences ``code`` in the whole document (notebook: in its first cell),
    ``None`` when a comment already does: a ``# graphlife: ignore-file[GLxxx]`` line before
    the first line that is not a shebang or an encoding declaration (those must stay first)."""
    segment = snapshot.segments[0] if snapshot.segments else None
    if segment is None:
        return None
    if file_suppression(source_lines(snapshot.source)).covers(code):
        return None
    lines = list(segment.lines)
    first = 0
    while first < min(len(lines), 2) and _stays_first(lines[first], first):
        first += 1
    at = segment.line_offset + first + 1
    return TextEdit(Span(at, 1, at, 1), f"# graphlife: ignore-file[{code}]\n")


def _stays_first(line: str, index: int) -> bool:
    """A shebang (line 1) or a PEP 263 encoding declaration (line 1 or 2)."""
    stripped = line.strip()
    if index == 0 and stripped.startswith("#!"):
        return True
    return stripped.startswith("#") and "coding" in stripped and ("coding:" in stripped or "coding=" in stripped)


def codes_in(findings: Sequence[Finding]) -> list[str]:
    """The distinct codes of ``findings``, in order."""
    return list(dict.fromkeys(finding.code for finding in findings))
