"""Hover: why a finding is a bug, and the graph-lifetime story of a tensor.

On a diagnostic's range the hover is short: the finding's own message once (it
names the variables and lines), one line of what torch will do, and a link to
the rule's whole documentation (:mod:`.rule_links`), which is a page of its own,
not hover text. On a tensor name or a ``.backward(`` call it shows the engine's
story at that point
(:func:`graphlife.analysis.stories.story_at`): whether it requires grad, where
its graph was built, which backward consumes it, what keeps it alive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lsprotocol import types

from graphlife.analysis.modules import ModuleProvider
from graphlife.analysis.rule_api import Rule
from graphlife.analysis.stories import Stories
from graphlife.findings import Finding, Line
from graphlife.lsp.linting import ISOLATE_CHARS, Analysis
from graphlife.lsp.rule_links import documentation_link

SEPARATOR = "\n\n---\n\n"


def contains(finding: Finding, line: int, column: int) -> bool:
    """Whether the 1-based (line, character column) lies in the finding's span (end inclusive for the cursor)."""
    span = finding.span
    if (line, column) < (span.line, span.column):
        return False
    return (line, column) <= (span.end_line, span.end_column)


def finding_markdown(finding: Finding, user_text: Callable[[str], str] = lambda text: text,
                     checked: str | None = None) -> str:
    """The finding as the hover says it: code, name and severity (the severity of the squiggle,
    after the user's overrides), the message once, its related places, and one line of what
    torch will do. ``user_text`` fixes notebook line numbers; ``checked`` is the file whose
    analysis made the finding: a related place in another file than the finding's names that
    file (``line 11 of train.py``)."""
    parts = [f"**{finding.code}** {finding.name} · {finding.severity.value}\n\n{user_text(finding.message)}"]
    if finding.related:
        here = finding.span.path
        parts.append("\n".join(
            user_text(f"- line {Line(r.span.line, r.span.path).seen_from(here, checked)}: {r.message}")
            for r in finding.related
        ))
    rule = _rule(finding.code)
    if rule is not None and rule.doc.torch_says:
        parts.append(f"**torch:** {rule.doc.torch_says}")
    return "\n\n".join(parts)


def _rule(code: str) -> Rule | None:
    try:
        from graphlife.rules import rule_by_code  # noqa: PLC0415

        return rule_by_code(code)
    except Exception:  # noqa: BLE001 - a broken rule module must not break hover
        return None


def findings_under(analysis: Analysis, line: int, column: int,
                   contributed: Sequence[tuple[Finding, Analysis]] = ()) -> list[tuple[Finding, Analysis]]:
    """The findings at a 1-based position of the document, each with the analysis that made
    it: the document's own analysis (its findings in this file, not those it made in the
    modules it imports), then those of other documents that import this one."""
    own = [(finding, analysis) for finding in analysis.findings
           if finding.span.path is None and contains(finding, line, column)]
    return own + [(finding, by) for finding, by in contributed if contains(finding, line, column)]


def hover_markdown(analysis: Analysis, line: int, column: int,
                   contributed: Sequence[tuple[Finding, Analysis]] = (),
                   modules: ModuleProvider | None = None, command: str | None = None) -> str | None:
    """Everything to show at a 1-based position of the analyzed source, or ``None``: the
    findings there, the graph-lifetime story of the expression there, and a link to each
    finding's rule documentation (``command``: the client's command that opens it).
    ``contributed``: what other documents' analyses found in this file (:func:`findings_under`);
    ``modules``: the project's modules, for the story."""
    user_text = analysis.snapshot.user_text
    under = findings_under(analysis, line, column, contributed)
    parts = [
        finding_markdown(f, user_text, analysis.snapshot.path) if by is analysis
        else finding_markdown(f, checked=by.snapshot.path)
        for f, by in under
    ]
    # The story re-interprets the file on a server thread; on a file big enough to be
    # checked in a child process, its parse alone would freeze the server.
    big = len(analysis.snapshot.source) > ISOLATE_CHARS
    told = None if big else stories_of(analysis, modules).at(line, column)
    if told:
        parts.append(user_text(told))
    rules = [rule for rule in (_rule(code) for code in dict.fromkeys(f.code for f, _ in under)) if rule is not None]
    if rules:
        parts.append(" · ".join(documentation_link(rule, command) for rule in rules))
    return SEPARATOR.join(parts) if parts else None


def stories_of(analysis: Analysis, modules: ModuleProvider | None) -> Stories:
    """The analysis's stories: one per analyzed version, so a hover on a name already told
    (the mouse comes back to it) costs nothing."""
    if analysis.stories is None:
        analysis.stories = Stories(analysis.snapshot.source, modules=modules, path=analysis.snapshot.path)
    return analysis.stories


def as_hover(markdown: str, rng: types.Range | None) -> types.Hover:
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
        range=rng,
    )
