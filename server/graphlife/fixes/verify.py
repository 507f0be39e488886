"""Check a fix before it is offered: re-analyze the fixed text and compare.

Why: a recipe is written for a shape, and code has more shapes than recipes. The one
judge that sees the whole file is the engine itself, so every fix is tried on a copy of
the text (a file, or a notebook's cells joined as the engine reads them) and kept only
when the engine then no longer reports the finding where it was (its line, moved by the
fix's edits) and reports no more errors of any code than before (a fix must not trade
one crash for another; a fix that lets the engine see the next use of the same cause,
one line further, is a step the next round of ``graphlife fix`` completes). The analysis of the
unfixed text is made once per text and each verdict once per (text, fix), so the
editor's light bulb asks the engine only for the findings under the cursor, once per
version of the document.

A fixed text is judged as its finding was found. When the check followed the file's imports
into the user's other modules (``graphlife check`` on a file, the editor on a file or a
notebook), the fixed text is analyzed with the same project (:data:`Modules` makes a fresh
view of it for each analysis; the parsing of the other files is shared): a fix that is
right only because of what another module does, or wrong only because of it (the
discriminator defined in ``models.py`` whose weights the optimizer step changes), gets the
verdict the finding's own analysis would give. Errors the fixed text causes in those other
files count as new errors too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphlife.config import Config
from graphlife.findings import Finding, Severity
from graphlife.fixes import TextEdit

if TYPE_CHECKING:
    from graphlife.analysis.modules import ModuleProvider

#: Re-analyzes a whole text; returns its findings (``None``: the text does not parse).
Analyze = Callable[[str], "Sequence[Finding] | None"]

#: A fresh view of the user's project for one analysis of the checked file (a provider
#: remembers the modules it resolved for one analysis, as ``sys.modules`` does for one run).
Modules = Callable[[], "ModuleProvider"]


def engine_analyze(path: str | None, config: Config | None, modules: Modules | None = None) -> Analyze:
    """The checker on a text, as the finding was found on ``path``: following the file's
    imports into the project when ``modules`` is given (as ``graphlife check`` and the editor
    do for a file), without otherwise. Findings in the project's other files come back too,
    naming their file: a fix must not add an error there either."""

    def analyze(source: str) -> Sequence[Finding] | None:
        from graphlife.checker import check_source  # noqa: PLC0415 - the checker imports the rules

        result = check_source(source, path, config, modules=modules() if modules is not None else None)
        if result.syntax_errors:
            return None
        return result.findings

    return analyze


@dataclass
class FixVerifier:
    """Judges fixes of one text: :meth:`accepts` says whether a fixed text is an improvement."""

    source: str
    analyze: Analyze
    #: The engine's findings on ``source`` when the caller has them already (else made once, on demand).
    known: Sequence[Finding] | None = None
    _verdicts: dict[tuple[str, int, str], bool] = field(default_factory=dict)

    @property
    def before(self) -> Sequence[Finding]:
        if self.known is None:
            self.known = self.analyze(self.source) or []
        return self.known

    def accepts(self, finding: Finding, fixed: str, edits: Sequence[TextEdit]) -> bool:
        """``fixed`` (``source`` with ``edits``) no longer reports ``finding`` and adds no error."""
        key = (finding.code, finding.span.line, fixed)
        if key not in self._verdicts:
            self._verdicts[key] = self._judge(finding, fixed, edits)
        return self._verdicts[key]

    def _judge(self, finding: Finding, fixed: str, edits: Sequence[TextEdit]) -> bool:
        after = self.analyze(fixed)
        if after is None:
            return False
        line = moved_line(finding.span.line, edits)
        if any(f.code == finding.code and f.span.line == line and f.span.path == finding.span.path for f in after):
            return False
        return not new_errors(self.before, after)


def moved_line(line: int, edits: Sequence[TextEdit]) -> int:
    """Where ``line`` is after ``edits``: shifted by the lines the edits above it add or remove
    (an edit that touches the line itself leaves its first line where it was)."""
    shift = 0
    for edit in edits:
        if edit.span.end_line < line or (edit.span.end_line == line and edit.span.end_column == 1):
            removed = edit.span.end_line - edit.span.line
            shift += edit.new_text.count("\n") - removed
    return line + shift


def new_errors(before: Sequence[Finding], after: Sequence[Finding]) -> list[str]:
    """The codes with more errors in ``after`` than in ``before`` (positions move with the fix:
    errors are compared as counts per code, over the checked file and the project's other files)."""
    was = Counter(f.code for f in before if f.severity is Severity.ERROR)
    now = Counter(f.code for f in after if f.severity is Severity.ERROR)
    return sorted(code for code, n in now.items() if n > was.get(code, 0))
