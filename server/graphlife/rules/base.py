"""What a rule is: metadata, its own documentation, and hooks on engine events.

Rules do not walk the syntax tree themselves. The engine
(:mod:`graphlife.analysis.interpreter`) interprets a function or module body and
calls each rule's ``on_<event>`` hook with the event and the abstract state at
that point (see :mod:`graphlife.analysis.events`). A rule decides from the
state whether the event is a bug and reports it through :class:`Reporter`.

The module docstring of each rule is its documentation, in the sections ruff
uses: ``What it does``, ``Why is this bad?``, ``What torch says``, ``Example``,
``Use instead``. The hover, ``graphlife rules`` and the docs all show that text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from graphlife.findings import Finding, FixRecipe, Related, Severity, Span

DOCS_URL = "https://github.com/graphlife/graphlife/blob/main/docs/rules.md#{anchor}"


@dataclass(frozen=True)
class RuleDoc:
    """A rule's documentation split into its sections."""

    text: str

    def section(self, title: str) -> str:
        """The body of one ``## Title`` section (empty when missing)."""
        pattern = re.compile(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", re.M | re.S)
        match = pattern.search(self.text)
        return match.group(1).strip() if match else ""

    @property
    def summary(self) -> str:
        return self.text.strip().splitlines()[0].strip() if self.text.strip() else ""


@dataclass
class Rule:
    """A rule: code, name, default severity, documentation, and event hooks."""

    code: str
    name: str
    severity: Severity
    doc: RuleDoc
    torch_message: str = ""  # what torch raises or warns, verbatim where it raises
    #: Syntactic rules: called once per file with a :class:`ModuleContext`.
    check_module: "Callable[[ModuleContext], None] | None" = None
    #: Engine rules: event name -> hook(event, reporter); see graphlife.analysis.events.
    hooks: "dict[str, Callable[..., None]]" = field(default_factory=dict)

    @property
    def docs_url(self) -> str:
        return DOCS_URL.format(anchor=f"{self.code.lower()}-{self.name}")

    def markdown(self) -> str:
        """The explanation shown on hover and in the docs."""
        return f"**{self.code} {self.name}** ({self.severity.value})\n\n{self.doc.text.strip()}"


@dataclass
class Reporter:
    """Collects findings for one file; drops exact duplicates (loops are unrolled twice)."""

    findings: list[Finding] = field(default_factory=list)
    _seen: set[tuple[str, Span]] = field(default_factory=set)
    #: Set when an error was reported: the engine ends the path (torch raised there).
    raised: bool = False
    #: When a list: every report as made, before de-duplication (the unit cache records units with it).
    log: list | None = None

    def report(
        self,
        rule: Rule,
        span: Span,
        message: str,
        *,
        severity: Severity | None = None,
        related: Iterable[Related] = (),
        fixes: Iterable[FixRecipe] = (),
    ) -> None:
        if self.log is not None:
            self.log.append((rule, span, message, severity, tuple(related), tuple(fixes)))
        key = (rule.code, span)
        if (severity or rule.severity) is Severity.ERROR:
            self.raised = True
        if key in self._seen:
            # A stronger severity seen later (e.g. on the second unrolled
            # iteration) replaces the weaker one.
            new_severity = severity or rule.severity
            for index, old in enumerate(self.findings):
                if (old.code, old.span) == key and _rank(new_severity) < _rank(old.severity):
                    self.findings[index] = Finding(
                        rule.code, rule.name, new_severity, span, message, tuple(related), tuple(fixes)
                    )
            return
        self._seen.add(key)
        self.findings.append(
            Finding(
                code=rule.code,
                name=rule.name,
                severity=severity or rule.severity,
                span=span,
                message=message,
                related=tuple(related),
                fixes=tuple(fixes),
            )
        )


def _rank(severity: Severity) -> int:
    return [Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT].index(severity)


@dataclass
class ModuleContext:
    """What a rule's ``check_module(ctx)`` hook gets: the parsed file and a reporter.

    Rules that are about the *shape* of a definition (custom
    ``autograd.Function`` classes, ``checkpoint`` calls) read the tree here.
    Rules about values and graphs use the engine's event hooks instead
    (``graphlife.analysis.events``), never the spelling of names.
    """

    tree: "object"  # ast.Module
    source: str
    lines: list[str]
    reporter: Reporter

    def span(self, node: "object") -> Span:
        """The 1-based character span of an ``ast`` node."""
        from graphlife.analysis.positions import node_span  # noqa: PLC0415

        return node_span(node, self.lines)


def callee_name(call: "object") -> str | None:
    """The last name of what a call calls: ``f(...)`` -> ``f``, ``x.step(...)`` -> ``step``."""
    import ast  # noqa: PLC0415

    if not isinstance(call, ast.Call):
        return None
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


#: Added to the message of an error that needs gradients on, in a function analyzed alone.
ASSUMED_GRAD_NOTE = (" (This function is analyzed without its callers: that holds if gradients are on when it runs, "
                     "as they are unless a caller turns them off.)")


def grad_mode_severity(state: "object", severity: Severity) -> tuple[Severity, str]:
    """An error that torch raises only with gradients on (an in-place change of a leaf, an
    inference tensor saved, ...) is certain only where the mode is known; in a function
    analyzed without its callers it is a warning, with a note saying why."""
    if severity is Severity.ERROR and getattr(state, "grad_assumed", False):
        return Severity.WARNING, ASSUMED_GRAD_NOTE
    return severity, ""
