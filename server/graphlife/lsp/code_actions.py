"""Code actions: quick fixes, fix-all, "ignore on this line" (and :mod:`.rule_actions`).

One quick fix per fix that :func:`graphlife.fixes.compute_fixes` can really
make on this code and that the engine accepts on the fixed text (a recipe that
does not apply to the code at hand, or leaves the finding, or adds an error, is
not offered: a light-bulb item that does nothing is worse than none), the best
safe one marked preferred. A fix that changes memory or what trains is titled
``... (unsafe)``, never preferred, and never part of fix-all. The light bulb asks on
every cursor move, so the fixes of a finding are computed once per analyzed text (only for the findings under the
cursor) and cached; the edits travel only when the user picks one
(``codeAction/resolve``). They are the edits ``graphlife fix`` applies. ``source.fixAll.graphlife`` is
:func:`graphlife.fixes.fix_source` (safe fixes only) on the whole document (so
``editor.codeActionsOnSave`` works); on a notebook, fix-all works cell by cell as
``graphlife fix`` does (:mod:`.fix_all`, for ``notebook.codeActionsOnSave``). The ignore action writes
``# graphlife: ignore[GL101]`` on the finding's first line, or adds the code to
an ignore comment already there.

The fixes package is written in parallel with the server: while its functions
are missing, the server offers only the ignore action and says so in the log.
"""

from __future__ import annotations

import re
import tokenize
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from graphlife.findings import Finding, MessageTemplate, Span, localized
from graphlife.lsp.cancel import Cancelled
from graphlife.lsp.diagnostics import locate, to_diagnostic
from graphlife.lsp.fix_all import CELL, FILE, NOTEBOOK, NOTEBOOK_FIX_ALL_KIND
from graphlife.lsp.linting import Analysis
from graphlife.lsp.positions import document_end, split_lines
from graphlife.text_lines import source_lines_keepends

if TYPE_CHECKING:
    from graphlife.fixes import TextEdit
    from graphlife.fixes.verify import Analyze, Modules

FIX_ALL_KIND = "source.fixAll.graphlife"
_EXISTING_IGNORE = re.compile(r"#\s*graphlife\s*:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)


def fixes_api() -> tuple[Any, Any]:
    """``(compute_fixes, fix_source)``, each ``None`` while :mod:`graphlife.fixes` lacks it."""
    try:
        import graphlife.fixes as fixes  # noqa: PLC0415
    except ImportError:
        return None, None
    return getattr(fixes, "compute_fixes", None), getattr(fixes, "fix_source", None)


def kind_wanted(only: Sequence[str] | None, kind: str) -> bool:
    """LSP's ``only`` filter: a kind matches itself and its more specific kinds."""
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") or o == "" for o in only)


def overlaps(span: Span, start: tuple[int, int], end: tuple[int, int]) -> bool:
    return (span.line, span.column) <= end and start <= (span.end_line, span.end_column)


def _span_data(span: Span) -> list[int]:
    return [span.line, span.column, span.end_line, span.end_column]


def findings_in(analysis: Analysis, start: tuple[int, int], end: tuple[int, int]) -> list[Finding]:
    """The findings whose span overlaps a range (1-based positions of the analyzed source).
    Not those the analysis made in another file of the project (they are that file's, and
    carry no fix: the checker offers a fix only in the file it checks)."""
    return [finding for finding in analysis.findings
            if finding.span.path is None and overlaps(finding.span, start, end)]


#: Where :func:`fixes_for` keeps the analysis's fix verifier (the engine's findings on the
#: unfixed text and its verdict on each fixed text), next to the fixes of each finding.
_VERIFIER = ("graphlife", "verifier")

#: Where :func:`fixes_for` keeps the libcst tree of the analyzed text, shared by its findings.
_DOCUMENT = ("graphlife", "document")

#: What the editor adds to the title of a fix that changes memory or what trains.
UNSAFE_MARK = " (unsafe)"
#: A fix that changes what the code computes, as its title says so (``UNSAFE_MARK`` in English).
UNSAFE_TITLE = MessageTemplate("action.unsafe", "{title} (unsafe)", zh_cn="{title}（不安全）")
IGNORE_LINE = MessageTemplate("action.ignore-line", "Ignore {code} on this line", zh_cn="在这一行忽略 {code}")
IGNORE_FILE = MessageTemplate("action.ignore-file", "Ignore {code} in this file", zh_cn="在这个文件中忽略 {code}")
IGNORE_NOTEBOOK = MessageTemplate("action.ignore-notebook", "Ignore {code} in this notebook",
                                  zh_cn="在这个笔记本中忽略 {code}")
TURN_OFF = MessageTemplate("action.turn-off", "Turn off {code} in settings", zh_cn="在设置中关闭 {code}")
#: What the log says when an action the client chose cannot be carried out any more.
DOCUMENT_CLOSED = MessageTemplate("log.document-closed", "{uri}: the document is closed; nothing to fix",
                                  zh_cn="{uri}：文档已关闭，没有可修复的内容")
NO_LONGER_REPORTED = MessageTemplate("log.no-longer-reported",
                                     "{uri}: {code} is no longer reported there; nothing to do",
                                     zh_cn="{uri}：那里已不再报告 {code}，无需操作")
CANNOT_APPLY = MessageTemplate("log.cannot-apply", "{code}: the fix `{title}` cannot be applied to this code",
                               zh_cn="{code}：修复“{title}”无法应用到这段代码")
FIX_ALL_HERE = MessageTemplate("action.fix-all-here", "Fix all graphlife problems", zh_cn="修复所有 graphlife 问题")
FIX_ALL_SOURCE = MessageTemplate("action.fix-all", "graphlife: fix all auto-fixable problems",
                                 zh_cn="graphlife：修复所有可自动修复的问题")
FIX_ALL_NOTEBOOK = MessageTemplate("action.fix-all-notebook",
                                   "graphlife: fix all auto-fixable problems in the notebook",
                                   zh_cn="graphlife：修复笔记本中所有可自动修复的问题")


def fixes_for(analysis: Analysis, finding: Finding, modules: Modules | None = None,
              analyze: Analyze | None = None) -> list:
    """The fixes ``compute_fixes`` makes for ``finding`` on the analyzed text, cached on the analysis.

    Runs on a worker thread (libcst, and the engine re-analyzing each fixed text: once per
    version of the document and finding, as the cache lives on the analysis of that
    version). ``modules`` is the project the analysis followed the document's imports into:
    each fixed text is analyzed in it too (:mod:`graphlife.fixes.verify`), by ``analyze`` (the
    server's incremental checker of fixed texts) when given. The unfixed text's findings are
    the analysis's own, and its libcst tree is parsed once per version, for all its findings.
    A failing fix is logged by the caller's guard and simply not offered.
    """
    compute_fixes, _ = fixes_api()
    if compute_fixes is None or not finding.fixes:
        return []
    key = (finding.code, finding.span)
    if key not in analysis.fix_cache:
        from graphlife.fixes.verify import FixVerifier, engine_analyze  # noqa: PLC0415 - with the fixes

        verifier = analysis.fix_cache.get(_VERIFIER)
        if verifier is None:
            snapshot = analysis.snapshot
            verifier = FixVerifier(snapshot.source, analyze or engine_analyze(snapshot.path, analysis.config, modules),
                                   known=analysis.findings)
            analysis.fix_cache[_VERIFIER] = verifier
        try:
            fixes = list(compute_fixes(finding, analysis.snapshot.source, _document(analysis), verifier=verifier))
        except Cancelled:  # the request went away: compute it next time
            raise
        except Exception:
            analysis.fix_cache[key] = []  # a fix that raises is reported once, not on every cursor move
            raise
        analysis.fix_cache[key] = fixes
    return analysis.fix_cache[key]


def _document(analysis: Analysis) -> Any:
    """The analyzed text parsed by libcst, once per version (``None``: it does not parse)."""
    if _DOCUMENT not in analysis.fix_cache:
        import libcst  # noqa: PLC0415 - with the fixes

        from graphlife.fixes.document import Document  # noqa: PLC0415 - with the fixes

        try:
            analysis.fix_cache[_DOCUMENT] = Document(analysis.snapshot.source)
        except libcst.ParserSyntaxError:
            analysis.fix_cache[_DOCUMENT] = None
    return analysis.fix_cache[_DOCUMENT]


def list_actions(
    analysis: Analysis,
    uri: str,
    start: tuple[int, int],
    end: tuple[int, int],
    only: Sequence[str] | None,
    codec: PositionCodec,
    fixes: dict | None = None,
    turn_off_command: str | None = None,
    language: str = "en",
) -> list[types.CodeAction]:
    """The actions for a range (1-based positions of the analyzed source), edits left to resolve,
    titled in ``language``.

    ``fixes`` maps ``(code, span)`` of each finding in the range to its computed fixes;
    ``turn_off_command`` is the client's command that adds a code to ``graphlife.ignore``.
    """
    actions: list[types.CodeAction] = []
    key = analysis.snapshot.key
    fixes = fixes or {}
    _, fix_source = fixes_api()
    if kind_wanted(only, types.CodeActionKind.QuickFix):
        by_code: dict[str, list[types.Diagnostic]] = {}
        for finding in findings_in(analysis, start, end):
            converted = to_diagnostic(finding, analysis.snapshot, codec, language=language)
            if converted is None or converted[0] != uri:
                continue
            diagnostic = converted[1]
            by_code.setdefault(finding.code, []).append(diagnostic)
            base = {"key": key, "uri": uri, "code": finding.code, "span": _span_data(finding.span)}
            for index, fix in enumerate(fixes.get((finding.code, finding.span), [])):
                if analysis.snapshot.is_notebook and edits_for(analysis, fix.edits, codec) is None:
                    continue  # its edits span cells: the editor edits one cell at a time
                actions.append(
                    types.CodeAction(
                        title=_fix_title(fix.title, fix.safe, language),
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        is_preferred=bool(fix.preferred),
                        data={**base, "action": "fix", "index": index, "title": str(fix.title)},  # English: matched
                    )
                )
            if not _ends_with_backslash(analysis, finding.span.line):
                actions.append(
                    types.CodeAction(
                        title=IGNORE_LINE(code=finding.code).in_language(language),
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        data={**base, "action": "ignore"},
                    )
                )
        # "Fix all" where a safe fix exists for a finding under the cursor: fix-all applies safe
        # fixes only, and would change nothing there otherwise.
        fixable_here = any(fix.safe for f in findings_in(analysis, start, end)
                           for fix in fixes.get((f.code, f.span), []))
        actions.extend(_rule_actions(analysis, uri, by_code, turn_off_command, fix_source is not None and fixable_here,
                                     language))
    if (
        fix_source is not None
        and only  # only when asked for source actions (fix-all is not a light-bulb item)
        and any(f.fixes for f in analysis.findings)
    ):
        notebook = analysis.snapshot.is_notebook
        # On a notebook's cell, `source.fixAll` edits that cell only (VS Code asks every cell
        # on save); `notebook.source.fixAll` is asked once and fixes every cell (.fix_all).
        if kind_wanted(only, FIX_ALL_KIND):
            actions.append(types.CodeAction(
                title=FIX_ALL_SOURCE().in_language(language),
                kind=FIX_ALL_KIND,
                data={"key": key, "uri": uri, "action": "fixAll", "scope": CELL if notebook else FILE},
            ))
        if notebook and kind_wanted(only, NOTEBOOK_FIX_ALL_KIND):
            actions.append(types.CodeAction(
                title=FIX_ALL_NOTEBOOK().in_language(language),
                kind=NOTEBOOK_FIX_ALL_KIND,
                data={"key": key, "uri": uri, "action": "fixAll", "scope": NOTEBOOK},
            ))
    return actions


def _rule_actions(analysis: Analysis, uri: str, by_code: dict[str, list[types.Diagnostic]],
                  turn_off_command: str | None, can_fix_all: bool, language: str = "en") -> list[types.CodeAction]:
    """The menu's items about whole rules and the whole file (:mod:`.rule_actions`), for the
    findings under the cursor: fix all, ignore in this file, turn off in settings."""
    if not by_code:
        return []
    key = analysis.snapshot.key
    actions = []
    if can_fix_all:
        actions.append(types.CodeAction(
            title=FIX_ALL_HERE().in_language(language),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[d for diagnostics in by_code.values() for d in diagnostics],
            data={"key": key, "uri": uri, "action": "fixAll",
                  "scope": NOTEBOOK if analysis.snapshot.is_notebook else FILE},
        ))
    for code, diagnostics in by_code.items():
        actions.append(types.CodeAction(
            title=(IGNORE_NOTEBOOK if analysis.snapshot.is_notebook else IGNORE_FILE)(code=code).in_language(language),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=diagnostics,
            data={"key": key, "uri": uri, "code": code, "action": "ignoreFile"},
        ))
        if turn_off_command:
            turn_off = TURN_OFF(code=code).in_language(language)
            actions.append(types.CodeAction(
                title=turn_off,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=diagnostics,
                command=types.Command(title=turn_off, command=turn_off_command,
                                      arguments=[code]),
            ))
    return actions


def _fix_title(title: str, safe: bool, language: str) -> str:
    """A fix's title as the menu shows it: in ``language``, marked when the fix is unsafe."""
    shown = localized(title, language)
    return shown if safe else UNSAFE_TITLE(title=shown).in_language(language)


def _ends_with_backslash(analysis: Analysis, line: int) -> bool:
    lines = split_lines(analysis.snapshot.source)
    return 0 < line <= len(lines) and lines[line - 1].rstrip().endswith("\\")


def find_finding(analysis: Analysis, data: dict) -> Finding | None:
    """The finding an action was made for, in a (possibly newer) analysis."""
    span = tuple(data.get("span") or ())
    for finding in analysis.findings:
        if finding.span.path is None and finding.code == data.get("code") and tuple(_span_data(finding.span)) == span:
            return finding
    return None


def edits_for(
    analysis: Analysis, text_edits: Iterable[TextEdit], codec: PositionCodec
) -> dict[str, list[types.TextEdit]] | None:
    """graphlife ``TextEdit`` s (analyzed-source spans) -> LSP edits per document; ``None`` if one spans cells."""
    out: dict[str, list[types.TextEdit]] = {}
    for edit in text_edits:
        start_segment = analysis.snapshot.segment_for_line(edit.span.line)
        end_segment = analysis.snapshot.segment_for_line(edit.span.end_line)
        if start_segment is None or start_segment is not end_segment:
            return None
        where = locate(analysis.snapshot, edit.span, codec)
        if where is None:
            return None
        out.setdefault(where[0], []).append(types.TextEdit(range=where[1], new_text=edit.new_text))
    return out


def workspace_edit(
    analysis: Analysis, per_uri: dict[str, list[types.TextEdit]], document_changes: bool
) -> types.WorkspaceEdit:
    """A workspace edit pinned to the versions that were analyzed (the client refuses it if they moved on)."""
    if not document_changes:
        return types.WorkspaceEdit(changes=per_uri)
    versions = {segment.uri: segment.version for segment in analysis.snapshot.segments}
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(uri)),
                edits=edits,
            )
            for uri, edits in per_uri.items()
        ]
    )


def ignore_edit(analysis: Analysis, finding: Finding) -> TextEdit | None:
    """The single graphlife ``TextEdit`` that silences ``finding`` on its first line, or ``None``."""
    from graphlife.fixes import TextEdit  # noqa: PLC0415 - the dataclass exists from the start

    line_no = finding.span.line
    lines = split_lines(analysis.snapshot.source)
    if not 0 < line_no <= len(lines):
        return None
    text = lines[line_no - 1]
    if text.rstrip().endswith("\\") or _line_end_in_string(analysis.snapshot.source, line_no):
        return None  # a comment there would end the statement or land inside a string
    match = _EXISTING_IGNORE.search(text)
    if match:
        codes = [c.strip() for c in match.group("codes").split(",") if c.strip()]
        if finding.code in codes:
            return None
        start = match.start("codes") + 1
        end = match.end("codes") + 1
        return TextEdit(Span(line_no, start, line_no, end), ", ".join([*codes, finding.code]))
    stripped = len(text.rstrip())
    return TextEdit(
        Span(line_no, stripped + 1, line_no, len(text) + 1), f"  # graphlife: ignore[{finding.code}]"
    )


def _line_end_in_string(source: str, line_no: int) -> bool:
    """Whether line ``line_no`` ends inside a multi-line string (where a comment would be text)."""
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+ splits f-strings
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        for token in tokenize.generate_tokens(iter(source_lines_keepends(source)).__next__):
            if token.type == tokenize.STRING and token.start[0] <= line_no < token.end[0]:
                return True
            if fstring_start is not None and token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif fstring_end is not None and token.type == fstring_end and open_fstrings:
                opened = open_fstrings.pop()
                if opened <= line_no < token.end[0]:
                    return True
            if token.start[0] > line_no and not open_fstrings:
                return False
    except (tokenize.TokenError, SyntaxError):
        return False
    return False


def whole_document_edit(analysis: Analysis, new_source: str, codec: PositionCodec) -> dict[str, list[types.TextEdit]]:
    """Replace the whole document (fix-all): simplest to apply and exactly what ``fix_source`` produced."""
    segment = analysis.snapshot.segments[0]
    end = document_end(segment.lines, codec)
    return {
        segment.uri: [
            types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=new_source)
        ]
    }


__all__ = [
    "FIX_ALL_KIND",
    "UNSAFE_MARK",
    "edits_for",
    "find_finding",
    "findings_in",
    "fixes_api",
    "fixes_for",
    "ignore_edit",
    "list_actions",
    "whole_document_edit",
    "workspace_edit",
]
