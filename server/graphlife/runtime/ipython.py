"""``%load_ext graphlife``: autograd errors explained in the cell's output, and ``%graphlife``.

- An exception hook (IPython's ``set_custom_exc``): IPython shows its traceback as
  usual, then, for an autograd error graphlife knows, the explanation
  ``graphlife run`` prints (:mod:`graphlife.runtime.explain_error`), from the
  cell's (or the user function's) frame, with the static finding for that line
  when the checker has one. Other exceptions are shown as IPython shows them.
- ``%graphlife``: the static checker on the cells run so far (``In``), joined in
  the order they ran, as the checker joins a notebook's cells; findings name the
  cell (``In [3]``) and its line.

Neither imports torch; the hook reads the torch the cells imported.
"""

from __future__ import annotations

import sys
from typing import Any

from graphlife import i18n
from graphlife.findings import MessageTemplate
from graphlife.runtime.explain_error import explain_exception

#: The classes the hook sees (then ``explain_exception`` decides, by torch's message).
_HOOKED = (Exception,)


def load(shell: Any) -> None:
    """Register the hook and the magic on an IPython shell."""
    shell.set_custom_exc(_HOOKED, _show_and_explain)
    shell.register_magic_function(_graphlife_magic, magic_kind="line", magic_name="graphlife")


def unload(shell: Any) -> None:
    """Undo :func:`load` (``%unload_ext graphlife``)."""
    shell.set_custom_exc((), None)
    shell.magics_manager.magics["line"].pop("graphlife", None)


def _show_and_explain(shell: Any, etype: type, evalue: BaseException, tb: Any, tb_offset: int | None = None) -> Any:
    """IPython's traceback, then graphlife's explanation of an autograd error."""
    shell.showtraceback((etype, evalue, tb), tb_offset=tb_offset)
    cells = list(shell.user_ns.get("In", []))[1:]
    try:
        text = explain_exception(evalue, static=lambda places, code: _static_in_cells(cells, places, code),
                                 sites_hint=False)
    except Exception as failure:  # noqa: BLE001 - the user's error is shown already; never hide it
        text = f"graphlife: could not explain the error: {type(failure).__name__}: {failure}"
    if text:
        print(text, file=sys.stdout)
    return None


def _graphlife_magic(line: str = "") -> None:
    """%graphlife [--language en|zh-CN]: check the cells run so far with graphlife's static
    checker, in the language asked for (else the environment's, as ``graphlife check`` reads it)."""
    from IPython import get_ipython  # noqa: PLC0415 - IPython is there: this runs inside it

    words = line.split()
    asked = words[words.index("--language") + 1] if "--language" in words[:-1] else None
    try:
        language = i18n.choose(asked.replace("_", "-") if asked else None, i18n.from_environment())
    except ValueError as exc:
        print(f"graphlife: {exc}")
        return
    shell = get_ipython()
    print(check_cells(list(shell.user_ns.get("In", []))[1:], language))


def _is_this_magic(cell: str) -> bool:
    """A cell that only runs ``%graphlife`` (this one among them) is not checked, nor counted."""
    text = cell.strip()
    return text.startswith("%graphlife") or (text.startswith("get_ipython().run_line_magic('graphlife'")
                                             and "\n" not in text)


class _CheckedCells:
    """The checker's result on cells joined in the order they ran, and where each cell sits."""

    def __init__(self, cells: list[str]) -> None:
        from graphlife.checker import check_source  # noqa: PLC0415 - the engine: only when asked
        from graphlife.lsp.notebooks import CellText, join_cells  # noqa: PLC0415

        self.texts = [CellText(uri=str(number), version=None, number=number, text=text)
                      for number, text in enumerate(cells, start=1) if text.strip() and not _is_this_magic(text)]
        self.source, self.placed = join_cells(self.texts)
        self.result = check_source(self.source, "<cells>") if self.texts else None

    def cell_of(self, line: int) -> Any:
        for cell in reversed(self.placed):
            if line > cell.line_offset:
                return cell
        return None

    def message(self, text: str, language: str = "en") -> str:
        from graphlife.lsp.notebooks import cell_relative_text  # noqa: PLC0415

        return cell_relative_text(text, self.cell_of, language)


def _static_in_cells(cells: list[str], places: list[tuple[str, int]], code: str) -> list[str]:
    """The findings on the failing lines, the cells run so far checked together (a cell alone
    lacks the model and the tensors earlier cells made). A place is a cell when the text the
    interpreter keeps for its file is the text of a cell."""
    import linecache  # noqa: PLC0415

    checked = None
    out = []
    for path, line in places:
        text = "".join(linecache.getlines(path))
        text = text.rstrip("\n")
        number = next((n for n in range(len(cells), 0, -1) if cells[n - 1].rstrip("\n") == text), None) if (
            text) else None
        if number is None:
            continue
        checked = checked or _CheckedCells(cells[:number])
        if checked.result is None:
            continue
        cell = next((c for c in checked.placed if c.number == number), None)
        if cell is None:
            continue
        for finding in checked.result.findings:
            if finding.span.path is None and finding.line - cell.line_offset == line:
                agrees = " (the same rule)" if finding.code == code else ""
                out.append(f"  static finding at In [{number}], line {line}: {finding.code} {finding.name}{agrees}: "
                           f"{checked.message(finding.message)}")
    return out


NO_CELL = MessageTemplate("ipython.no-cell", "graphlife: no cell has run yet.",
                          zh_cn="graphlife：还没有运行过任何单元格。")
IN_CELL = MessageTemplate("ipython.in-cell", "In [{cell}], line {line}", zh_cn="In [{cell}] 第 {line} 行")
AT_LINE = MessageTemplate("ipython.at-line", "line {line}", zh_cn="第 {line} 行")
SYNTAX_ERROR = MessageTemplate("ipython.syntax-error", "{where}: syntax error: {error}",
                               zh_cn="{where}：语法错误：{error}")
FINDINGS = MessageTemplate("ipython.findings", "graphlife: {count} findings in {cells} cells.",
                           zh_cn="graphlife：{cells} 个单元格中发现 {count} 个问题。")
ONE_FINDING = MessageTemplate("ipython.one-finding", "graphlife: {count} finding in {cells} cells.",
                              zh_cn="graphlife：{cells} 个单元格中发现 {count} 个问题。")
NO_FINDING = MessageTemplate("ipython.no-finding", "graphlife: no graph-lifetime problem found in {cells} cells.",
                             zh_cn="graphlife：{cells} 个单元格中没有发现计算图生命周期问题。")


def check_cells(cells: list[str], language: str = "en") -> str:
    """The checker's report on cells ``In[1]``, ``In[2]``... (the list's order is the run order),
    in ``language``."""
    checked = _CheckedCells(cells)
    if checked.result is None:
        return NO_CELL().in_language(language)
    result, texts, cell_of = checked.result, checked.texts, checked.cell_of
    lines = checked.source.splitlines()
    out = []
    for finding in result.findings:
        cell = cell_of(finding.line)
        place = IN_CELL(cell=cell.number, line=finding.line - cell.line_offset) if cell is not None else (
            AT_LINE(line=finding.line))
        message = checked.message(finding.message, language)
        out.append(f"{place.in_language(language)}: {finding.code} {finding.severity.value}: {message}")
        if 0 < finding.line <= len(lines):
            out.append(f"    {lines[finding.line - 1].strip()}")
    for error in result.syntax_errors:
        cell = cell_of(error.line)
        place = IN_CELL(cell=cell.number, line=error.line - cell.line_offset) if cell is not None else (
            AT_LINE(line=error.line))
        out.append(SYNTAX_ERROR(where=place, error=error.message).in_language(language))
    count = len(result.findings)
    if count:
        summary = (ONE_FINDING if count == 1 else FINDINGS)(count=count, cells=len(texts)).in_language(language)
    else:
        summary = NO_FINDING(cells=len(texts)).in_language(language)
    return "\n".join([*out, summary])
