"""Hover: why a finding is a bug, and the graph-lifetime story of a tensor.

On a diagnostic's range the hover is short. The editor already shows the
diagnostic's message (it names the variables and lines) and its related places in
the same hover, so they are not repeated: the hover adds the rule and severity,
one line of what torch will do, and a link to the rule's whole documentation
(:mod:`.rule_links`), which is a page of its own, not hover text. On a tensor
name or a ``.backward(`` call it shows the engine's story at that point
(:func:`graphlife.analysis.stories.story_at`): whether it requires grad, where
its graph was built, which backward consumes it, what keeps it alive. The stories
of a version are told once, before the hover if the user pauses
(:mod:`.hover_stories`); a hover only looks its story up.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from graphlife.analysis.rule_api import Rule
from graphlife.analysis.stories import Stories
from graphlife.findings import Finding, MessageTemplate
from graphlife.lsp.linting import Analysis
from graphlife.lsp.rule_links import documentation_link

SEPARATOR = "\n\n---\n\n"


def contains(finding: Finding, line: int, column: int) -> bool:
    """Whether the 1-based (line, character column) lies in the finding's span (end inclusive for the cursor)."""
    span = finding.span
    if (line, column) < (span.line, span.column):
        return False
    return (line, column) <= (span.end_line, span.end_column)


#: The severities as the hover names them (docs/zh-CN-GLOSSARY.md's words in Chinese).
SEVERITY_WORDS = {
    "error": MessageTemplate("hover.error", "error", zh_cn="错误"),
    "warning": MessageTemplate("hover.warning", "warning", zh_cn="警告"),
    "information": MessageTemplate("hover.information", "information", zh_cn="信息"),
    "hint": MessageTemplate("hover.hint", "hint", zh_cn="提示"),
}
#: The heading of what torch will do; torch's own words after it stay as torch prints them.
TORCH_SAYS = MessageTemplate("hover.torch-says", "**torch:** {says}", zh_cn="**torch 的报错：** {says}")


def finding_markdown(finding: Finding, language: str = "en") -> str:
    """The finding as the hover adds it to the diagnostic: code, name and severity (the
    squiggle's, after the user's overrides) and one line of what torch will do, in ``language``.
    The message and the related places are not repeated: the editor shows the diagnostic
    itself in the same hover, right above this."""
    severity = SEVERITY_WORDS[finding.severity.value]().in_language(language)
    parts = [f"**{finding.code}** {finding.name} · {severity}"]
    rule = _rule(finding.code)
    doc = rule.doc.in_language(language) if rule is not None else None
    if doc is not None and doc.torch_says:
        parts.append(TORCH_SAYS(says=doc.torch_says).in_language(language))
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
                   stories: Stories | None = None, command: str | None = None,
                   language: str = "en") -> str | None:
    """Everything to show at a 1-based position of the analyzed source, or ``None``: the
    findings there, the graph-lifetime story of the expression there, and a link to each
    finding's rule documentation (``command``: the client's command that opens it).
    ``contributed``: what other documents' analyses found in this file (:func:`findings_under`);
    ``stories``: the version's stories, already told (:mod:`.hover_stories`), or ``None``;
    ``language``: of every text."""
    user_text = analysis.snapshot.user_text
    under = findings_under(analysis, line, column, contributed)
    # One part per rule and place (a finding this document's analysis and an importer's both made).
    distinct = {(f.code, f.span.line, f.span.column): f for f, _ in under}
    parts = [finding_markdown(f, language) for f in distinct.values()]
    told = stories.at(line, column) if stories is not None else None
    if told:
        parts.append(user_text(told, language))
    rules = [rule for rule in (_rule(code) for code in dict.fromkeys(f.code for f, _ in under)) if rule is not None]
    if rules:
        parts.append(" · ".join(documentation_link(rule, command, language) for rule in rules))
    return SEPARATOR.join(parts) if parts else None


def as_hover(markdown: str, rng: types.Range | None) -> types.Hover:
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
        range=rng,
    )
