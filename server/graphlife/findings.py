"""The data every front end shares: a finding, where it points, and how to fix it.

Positions are 1-based lines and 1-based *character* (code point) columns, with
an exclusive end column. The engine converts from `ast`'s UTF-8 byte offsets once
(:mod:`graphlife.analysis.positions`); the language server converts characters to
UTF-16 code units once more at its edge. Nothing else converts positions.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
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
    language server's unit cache moves it with the code, as it moves a :class:`Span`."""

    number: int
    #: Another file of the project (see :class:`Span`); ``None`` is the file being checked.
    path: str | None = None

    def __str__(self) -> str:
        if self.path is None:
            return str(self.number)
        return f"{self.number} of {_file_name(self.path)}"

    def seen_from(self, here: str | None, checked: str | None) -> str:
        """The line as a message in file ``here`` names it (``None``: the file checked, whose
        path is ``checked``): the bare number in the same file, with the file's name in another."""
        if self.path == here:
            return str(self.number)
        there = self.path if self.path is not None else checked
        return f"{self.number} of {_file_name(there)}" if there else str(self.number)


def _file_name(path: str) -> str:
    """The last part of a path, as a message names another file (``line 16 of layers.py``)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


#: What a message template may be filled with: text, numbers, lines (``None`` reads "None").
MessageArg = str | int | Line | None


@dataclass(frozen=True)
class Message:
    """A finding's message as a template and typed arguments, rendered to text once (``str``).

    ``id`` names the template (``GL101.carried``); ``template`` is ``str.format`` text with
    named fields; ``args`` fill them. Lines are :class:`Line` arguments, never digits inside
    the text, so whoever moves findings to new lines (the unit cache) moves them exactly."""

    id: str
    template: str
    args: dict[str, MessageArg] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.template.format_map(self.args)

    def seen_from(self, here: str | None, checked: str | None) -> str:
        """The text as a finding in file ``here`` shows it (:meth:`Line.seen_from`)."""
        args = {key: value.seen_from(here, checked) if isinstance(value, Line) else value
                for key, value in self.args.items()}
        return self.template.format_map(args)


@dataclass(frozen=True)
class MessageTemplate:
    """A rule's message with named fields; calling it with the fields gives the :class:`Message`."""

    id: str
    text: str

    def __call__(self, **args: MessageArg) -> Message:
        return Message(self.id, self.text, args)


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

    def to_json(self, path: str | None = None) -> dict[str, Any]:
        """The JSON shape of `graphlife check --format json` (1-based positions). ``path`` is
        the file checked; a finding in another file of the project names its own."""
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
        return data
