"""Lines named in an engine rule's message are typed ``Line`` arguments of a ``Message``.

The language server replays the reports of unchanged code at their new lines
(``graphlife/analysis/unit_cache.py``). It moves spans and the ``Line`` arguments of
a ``Message``; it never looks for digits in text. A rule that wrote ``line 12`` into
a plain string would keep the old number after an edit above it. This test runs every
fixture and example and fails on any report whose text names a line without a
``Line`` argument behind it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphlife.analysis import rule_api
from graphlife.checker import check_source
from graphlife.findings import Line, Message
from tests.fixturelib import FIXTURES_DIR

ROOT = Path(__file__).resolve().parents[2]
_NAMES_A_LINE = re.compile(r"\bline \d+")
_LINE_FIELD = re.compile(r"\bline \{(\w+)\}")
_FILES = sorted(FIXTURES_DIR.rglob("*.py")) + sorted((ROOT / "examples").glob("*.py"))


@pytest.fixture()
def reports(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Every (rule code, message) reported while the test runs."""
    seen: list[tuple[str, object]] = []
    original = rule_api.Reporter.report

    def recording(self, rule, span, message, **kwargs):
        seen.append((rule.code, message))
        return original(self, rule, span, message, **kwargs)

    monkeypatch.setattr(rule_api.Reporter, "report", recording)
    return seen


def test_lines_in_engine_messages_are_line_arguments(reports: list[tuple[str, object]]) -> None:
    for path in _FILES:
        check_source(path.read_text(encoding="utf-8"), str(path))
    engine = [(code, message) for code, message in reports if not code.startswith("GL4")]
    assert any(isinstance(message, Message) for _, message in engine), "no message with a line was reported"
    for code, message in engine:
        if isinstance(message, Message):
            assert not _NAMES_A_LINE.search(message.template), f"{code}: {message.id} has a line number in its text"
            for name in _LINE_FIELD.findall(message.template):
                argument = message.args[name]
                assert argument is None or isinstance(argument, Line), f"{code}: {message.id}'s `{name}` is not a Line"
        else:
            assert not _NAMES_A_LINE.search(message), f"{code} names a line in plain text: {message!r}"
