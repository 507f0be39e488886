"""The data every front end shares: a finding, where it points, and how to fix it.

Positions are 1-based lines and 1-based *character* (code point) columns, with
an exclusive end column. The engine converts from `ast`'s UTF-8 byte offsets once
(:mod:`graphlife.analysis.positions`); the language server converts characters to
UTF-16 code units once more at its edge. Nothing else converts positions.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar


class Severity(str, enum.Enum):
    """How sure and how bad: errors mean torch raises on every path to the line."""

    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"

    @classmethod
    def parse(cls, text: str) -> Severity | None:
        """Map a user's spelling to a severity; ``None`` means the rule is off."""
        lowered = text.strip().lower()
        aliases: dict[str, str | None] = {"info": "information", "warn": "warning", "off": None, "none": None}
        canonical = aliases.get(lowered, lowered)
        if canonical is None:
            return None
        return cls(canonical)


@dataclass(frozen=True)
class Span:
    """A source range: 1-based lines, 1-based character columns, end exclusive.

    ``path`` names another file of the user's project when the range is there (the
    engine followed an import: the in-place op in ``layers.py`` that the backward in
    ``train.py`` will trip on); ``None`` is the file being checked."""

    line: int
    column: int
    end_line: int
    end_column: int
    path: str | None = None


@dataclass(frozen=True)
class Line:
    """A line of the file named in a message (``line 12``): a typed argument, so that the
    language server's unit cache moves it with the code, as it moves a :class:`Span`.

    In English the template writes ``line {built}`` and the argument renders as ``12`` (or
    ``12 of layers.py``); Chinese puts the file first and the number inside the phrase, so a
    Chinese template writes ``{built}`` alone and the argument renders as the whole phrase
    (``第 12 行``, ``layers.py 第 16 行``)."""

    number: int
    #: Another file of the project (see :class:`Span`); ``None`` is the file being checked.
    path: str | None = None
    #: In a notebook: the cell the line is in, the number then counting in the cell.
    cell: int | None = None

    def __str__(self) -> str:
        return self.in_language("en")

    def in_language(self, language: str) -> str:
        """The line as a message in ``language`` names it (see the class docstring)."""
        if language == "zh-CN":
            where = f"{_file_name(self.path)} " if self.path is not None else ""
            cell = f"第 {self.cell} 个单元格" if self.cell is not None else ""
            return f"{where}{cell}第 {self.number} 行"
        if self.cell is not None:
            return f"{self.number} (cell {self.cell})"
        if self.path is None:
            return str(self.number)
        return f"{self.number} of {_file_name(self.path)}"

    def seen_from(self, here: str | None, checked: str | None) -> str:
        """The line as a message in file ``here`` names it (``None``: the file checked, whose
        path is ``checked``): the bare number in the same file, with the file's name in another."""
        return str(self.located(here, checked))

    def located(self, here: str | None, checked: str | None) -> Line:
        """This line as a finding in file ``here`` names it: no file when it is in ``here``,
        else the file it is in (``checked`` when the line's own path is ``None``)."""
        if self.path == here:
            return Line(self.number)
        return Line(self.number, self.path if self.path is not None else checked)


def _file_name(path: str) -> str:
    """The last part of a path, as a message names another file (``line 16 of layers.py``)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


#: What a message template may be filled with: text, numbers, lines (``None`` reads "None"), and
#: other messages (a phrase that is itself translated: ``{maybe}`` = " on some paths").
MessageArg = str | int | Line | None


class Message(str):
    """A message as its English text that also knows how to say itself in another language.

    It *is* the English text (a ``str``): every front end, script and test that reads
    ``finding.message``, ``related.message`` or ``fix.title`` keeps reading the English it
    always read. It also keeps its template's ``id``, the typed ``args`` and the Chinese
    template, so a front end renders it in the user's language at its edge
    (:meth:`in_language`, :func:`localized`). Lines are :class:`Line` arguments, never
    digits inside the text, so whoever moves findings to new lines (the unit cache) moves
    them exactly (:meth:`with_args`). An argument may be a message itself (a translated
    phrase); it renders in the same language.

    String operations (``+``, slicing) give plain English ``str``: a front end localizes a
    message before it changes it."""

    id: str
    template: str
    args: dict[str, MessageArg]
    zh_cn: str = ""

    def __new__(cls, id: str, template: str, args: Mapping[str, MessageArg] | None = None,
                zh_cn: str = "") -> Message:
        args = dict(args or {})
        self = super().__new__(cls, _render(template, args, "en"))
        self.id, self.template, self.args, self.zh_cn = id, template, args, zh_cn
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # The checker runs in another process: a pickled message must arrive with its template.
        return (Message, (self.id, self.template, self.args, self.zh_cn))

    def __repr__(self) -> str:
        return f"Message({self.id!r}, {str(self)!r})"

    def in_language(self, language: str) -> str:
        """The text in ``language`` (``"en"`` or ``"zh-CN"``); English when the template has
        no text in that language."""
        if language == "zh-CN" and self.zh_cn:
            return _render(self.zh_cn, self.args, language)
        return str(self)

    def with_args(self, args: Mapping[str, MessageArg]) -> Message:
        """The same template with other arguments (the unit cache's moved lines)."""
        return Message(self.id, self.template, args, self.zh_cn)

    def map_lines(self, change: Callable[[Line], Line]) -> Message:
        """The message with every :class:`Line` argument (also in nested messages) changed."""
        def one(value: MessageArg) -> MessageArg:
            if isinstance(value, Line):
                return change(value)
            if isinstance(value, Message):
                return value.map_lines(change)
            return value
        return self.with_args({key: one(value) for key, value in self.args.items()})

    def seen_from(self, here: str | None, checked: str | None) -> Message:
        """The message as a finding in file ``here`` shows it (:meth:`Line.located`)."""
        return self.map_lines(lambda line: line.located(here, checked))


def _render(template: str, args: Mapping[str, MessageArg], language: str) -> str:
    def one(value: MessageArg) -> object:
        if isinstance(value, (Line, Message)):
            return value.in_language(language)
        return value
    return template.format_map({key: one(value) for key, value in args.items()})


def localized(text: str, language: str) -> str:
    """``text`` in ``language`` when it is a :class:`Message`; other text as it is."""
    return text.in_language(language) if isinstance(text, Message) else text


@dataclass(frozen=True)
class MessageTemplate:
    """A message with named fields in English and Simplified Chinese, side by side so that
    neither changes without the other; calling it with the fields gives the :class:`Message`.

    Both texts have exactly the same fields (a test checks every template). The Chinese
    is written as Chinese PyTorch users write about autograd (docs/zh-CN-GLOSSARY.md), not
    word for word; torch's own messages stay quoted in English, as torch prints them. A
    :class:`Line` field renders as the whole phrase in Chinese (``第 12 行``): write ``{built}``
    where the English writes ``line {built}``."""

    id: str
    text: str
    #: Required: a template cannot be written in English only.
    zh_cn: str

    def __call__(self, **args: MessageArg) -> Message:
        if not all(type(value) in _PLAIN_ARGUMENTS for value in args.values()):
            return Message(self.id, self.text, args, self.zh_cn)
        # By the template's identity: hashing the template itself hashes its three texts each time.
        key = (id(self), tuple(args.items()))
        known = _MADE.get(key)
        if known is not None and known[0] is self:  # the entry keeps its template alive: the id is its own
            return known[1]
        if len(_MADE) >= _MAX_MADE:
            _MADE.clear()
        made = Message(self.id, self.text, args, self.zh_cn)
        _MADE[key] = (self, made)
        return made


#: Arguments whose equal values render the same (exactly these types: ``True == 1``, and a
#: :class:`Message` equals its English text whatever its other languages say).
_PLAIN_ARGUMENTS = frozenset({str, int, type(None)})
#: Messages made from plain arguments, by template and arguments, shared (a message is never
#: changed once made): the engine gives every tensor an op makes without a graph the reason
#: why (``no_grad``, a factory, an integer op), thousands per file, most of them the same.
_MADE: dict[tuple[int, tuple[tuple[str, MessageArg], ...]], tuple[MessageTemplate, Message]] = {}
_MAX_MADE = 4096


@dataclass(frozen=True)
class Related:
    """Another place that explains a finding: where the graph was built, freed, mutated."""

    span: Span
    message: str


class Applicability(str, enum.Enum):
    """Whether a fix may be applied without asking, as ruff says it.

    ``SAFE`` removes the bug and keeps what the code computes (the values, and what each
    optimizer step trains). ``UNSAFE`` also removes the bug but changes memory or what
    trains (``retain_graph=True`` keeps every saved tensor alive; detaching a value that
    trained cuts the gradient to what produced it): the user decides. ``graphlife fix``
    and the editor's fix-all apply safe fixes only."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, kw_only=True)
class FixRecipe:
    """A fix decided by the rule, turned into edits only on demand by :mod:`graphlife.fixes`.

    Each kind of fix is a subclass (:mod:`graphlife.recipes`) whose typed fields carry what
    the transformation needs (spans, names); ``title`` is what an editor shows in the
    light-bulb menu, ``applicability`` whether it may be applied without asking.
    """

    #: The recipe's name in JSON output and docs/FIX_RECIPES.md (set by each subclass).
    kind: ClassVar[str] = ""
    title: str
    applicability: Applicability = Applicability.SAFE

    @property
    def safe(self) -> bool:
        return self.applicability is Applicability.SAFE


@dataclass(frozen=True)
class Finding:
    """One diagnosed bug: which rule, where, why, and the fixes best first."""

    code: str
    name: str
    severity: Severity
    span: Span
    message: str
    related: tuple[Related, ...] = ()
    fixes: tuple[FixRecipe, ...] = ()

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def to_json(self, path: str | None = None, language: str = "en") -> dict[str, Any]:
        """The JSON shape of `graphlife check --format json` (1-based positions). ``path`` is
        the file checked; a finding in another file of the project names its own.

        ``message``, related ``message`` and fix ``title`` stay English whatever the language
        (scripts match on them); in another ``language`` the finding also has ``language`` and
        ``localized_message``, each related place ``localized_message`` and each fix
        ``localized_title`` (docs/OUTPUT_FORMATS.md)."""
        data: dict[str, Any] = {}
        checked = path
        path = self.span.path if self.span.path is not None else path
        if path is not None:
            data["path"] = path
        data.update(
            line=self.span.line,
            column=self.span.column,
            end_line=self.span.end_line,
            end_column=self.span.end_column,
            code=self.code,
            name=self.name,
            severity=self.severity.value,
            message=self.message,
            related=[
                {
                    **({"path": r.span.path or checked} if (r.span.path or checked) is not None else {}),
                    "line": r.span.line,
                    "column": r.span.column,
                    "end_line": r.span.end_line,
                    "end_column": r.span.end_column,
                    "message": r.message,
                }
                for r in self.related
            ],
            fixes=[{"kind": f.kind, "title": f.title, "applicability": f.applicability.value} for f in self.fixes],
        )
        if language != "en":
            data["language"] = language
            data["localized_message"] = localized(self.message, language)
            for entry, related in zip(data["related"], self.related, strict=True):
                entry["localized_message"] = localized(related.message, language)
            for entry, fix in zip(data["fixes"], self.fixes, strict=True):
                entry["localized_title"] = localized(fix.title, language)
        return data
