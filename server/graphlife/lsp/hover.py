"""Hover: why a finding is a bug, and the graph-lifetime story of a tensor.

On a diagnostic's range the hover shows the finding's own message (it names the
variables and lines) and then the rule's documentation: what torch will raise,
why in terms of the graph's lifetime, the fix and an example. On a tensor name
or a ``.backward(`` call it shows the engine's story at that point
(:func:`graphlife.analysis.stories.story_at`): whether it requires grad, where
its graph was built, which backward consumes it, what keeps it alive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lsprotocol import types

from graphlife.analysis.modules import ModuleProvider
from graphlife.analysis.stories import story_at
from graphlife.findings import Finding, Line
from graphlife.lsp.linting import ISOLATE_CHARS, Analysis

SEPARATOR = "\n\n---\n\n"


def contains(finding: Finding, line: int, column: int) -> bool:
    """Whether the 1-based (line, character column) lies in the finding's span (end inclusive for the cursor)."""
    span = finding.span
    if (line, column) < (span.line, span.column):
        return False
    return (line, column) <= (span.end_line, span.end_column)


def finding_markdown(finding: Finding, user_text: Callable[[str], str] = lambda text: text,
                     checked: str | None = None) -> str:
    """The finding's message, then its rule's explanation (``user_text`` fixes notebook line
    numbers). ``checked`` is the file whose analysis made the finding: a related place in
    another file than the finding's names that file (``line 11 of train.py``)."""
    parts = [f"**graphlife {finding.code}** ({finding.name}): {user_text(finding.message)}"]
    if finding.related:
        here = finding.span.path
        parts.append("\n".join(
            user_text(f"- line {Line(r.span.line, r.span.path).seen_from(here, checked)}: {r.message}")
            for r in finding.related
        ))
    try:
        from graphlife.rules import rule_by_code  # noqa: PLC0415

        rule = rule_by_code(finding.code)
    except Exception:  # noqa: BLE001 - a broken rule module must not break hover
        rule = None
    if rule is not None:
        parts.append(rule.markdown())
        if rule.torch_message and rule.torch_message not in rule.markdown():
            parts.append(f"torch says: `{rule.torch_message}`")
        parts.append(f"[Documentation]({rule.docs_url})")
    return "\n\n".join(parts)


def findings_under(analysis: Analysis, line: int, column: int,
                   contributed: Sequence[tuple[Finding, Analysis]] = ()) -> list[tuple[Finding, Analysis]]:
    """The findings at a 1-based position of the document, each with the analysis that made
    it: the document's own analysis (its findings in this file, not those it made in the
    modules it imports), then those of other documents that import this one."""
    own = [(finding, analysis) for finding in analysis.findings
           if finding.span.path is None and contains(finding, line, column)]
    return own + [(finding, by) for finding, by in contributed if contains(finding, line, column)]


def story(source: str, line: int, column: int, modules: ModuleProvider | None = None,
          path: str | None = None) -> str | None:
    """The engine's graph-lifetime story at a position, or ``None``; with ``modules``, it
    follows the file's imports and names the file of a line in another module."""
    return story_at(source, line, column, modules=modules, path=path)


def hover_markdown(analysis: Analysis, line: int, column: int,
                   contributed: Sequence[tuple[Finding, Analysis]] = (),
                   modules: ModuleProvider | None = None) -> str | None:
    """Everything to show at a 1-based position of the analyzed source, or ``None``.
    ``contributed``: what other documents' analyses found in this file (:func:`findings_under`);
    ``modules``: the project's modules, for the story."""
    user_text = analysis.snapshot.user_text
    parts = [
        finding_markdown(f, user_text, analysis.snapshot.path) if by is analysis
        else finding_markdown(f, checked=by.snapshot.path)
        for f, by in findings_under(analysis, line, column, contributed)
    ]
    # The story re-interprets the file on a server thread; on a file big enough to be
    # checked in a child process, its parse alone would freeze the server.
    big = len(analysis.snapshot.source) > ISOLATE_CHARS
    told = None if big else story(analysis.snapshot.source, line, column, modules, analysis.snapshot.path)
    if told:
        parts.append(user_text(told))
    return SEPARATOR.join(parts) if parts else None


def as_hover(markdown: str, rng: types.Range | None) -> types.Hover:
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
        range=rng,
    )
