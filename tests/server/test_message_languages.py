"""Every message graphlife writes has an English and a Simplified Chinese text.

The templates are found by walking graphlife's modules (a template added anywhere is
checked without being listed here); what the rules actually report is found by running
every fixture and example, so a message, related-location text or fix title still built
as plain English text fails here, with the rule that made it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import string
from pathlib import Path

import pytest

import graphlife
from graphlife.analysis import rule_api
from graphlife.checker import check_source
from graphlife.findings import Line, Message, MessageTemplate, localized
from tests.fixturelib import FIXTURES_DIR
from tests.server.test_rule_docs_zh import style_problems

ROOT = Path(__file__).resolve().parents[2]
_FILES = sorted(FIXTURES_DIR.rglob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
#: Modules that import optional packages or start things when imported: not walked.
_NOT_IMPORTED = ("graphlife.__main__", "graphlife.pytest_plugin")


def _templates() -> dict[str, MessageTemplate]:
    found: dict[str, MessageTemplate] = {}
    for info in pkgutil.walk_packages(graphlife.__path__, "graphlife."):
        if info.name.startswith(_NOT_IMPORTED):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue  # an optional extra (the run-time tools need torch)
        for value in vars(module).values():
            if isinstance(value, MessageTemplate):
                found[f"{info.name}:{value.id}"] = value
    return found


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_templates_are_found_in_every_layer() -> None:
    modules = {key.split(":")[0] for key in _templates()}
    assert any(m.startswith("graphlife.rules.") for m in modules)
    assert any(m.startswith("graphlife.analysis.") for m in modules)
    assert any(m.startswith("graphlife.lsp.") for m in modules)


@pytest.mark.parametrize("key", sorted(_templates()))
def test_template_has_chinese_with_the_same_fields(key: str) -> None:
    template = _templates()[key]
    assert template.zh_cn, f"{template.id} has no Chinese text"
    assert _fields(template.zh_cn) == _fields(template.text), f"{template.id}: the two languages name other fields"
    args = {name: Line(12) if "line" in name or name in ("built", "freed", "loop", "saved", "backward", "checkpoint")
            else "x" for name in _fields(template.text)}
    chinese = template(**args).in_language("zh-CN")
    prose = re.sub(r"`[^`]*`|\{\w+\}", "", template.text)
    if len(re.findall(r"[A-Za-z]{2,}", prose)) > 1:  # English prose outside code: the Chinese says it its own way
        assert re.search(r"[\u4e00-\u9fff]", chinese), f"{template.id}: the Chinese text has no Chinese"


def test_one_id_one_text() -> None:
    by_id: dict[str, tuple[str, str]] = {}
    for template in _templates().values():
        texts = (template.text, template.zh_cn)
        assert by_id.setdefault(template.id, texts) == texts, f"two templates are called {template.id}"


def test_every_reported_text_is_translatable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message, related text and fix title the rules report on the fixtures and examples
    is a message with a Chinese text, and that text, filled with the real arguments, follows the
    glossary's style (the rule documents' own check: spaces around code, full-width punctuation)."""
    seen: list[tuple[str, str, object]] = []
    original = rule_api.Reporter.report

    def recording(self, rule, span, message, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((rule.code, "message", message))
        seen.extend((rule.code, "related", related.message) for related in kwargs.get("related", ()))
        seen.extend((rule.code, "fix title", fix.title) for fix in kwargs.get("fixes", ()))
        return original(self, rule, span, message, **kwargs)

    monkeypatch.setattr(rule_api.Reporter, "report", recording)
    for path in _FILES:
        check_source(path.read_text(encoding="utf-8"), str(path))
    assert {code for code, _, _ in seen} >= {"GL101", "GL201", "GL301", "GL401"}
    english_only = sorted({f"{code} {what}: {text!r}" for code, what, text in seen
                           if not (isinstance(text, Message) and text.zh_cn)})
    assert not english_only, "\n".join(english_only)
    badly_written = sorted({f"{code} {what}: {problem}" for code, what, text in seen
                            for problem in style_problems(localized(text, "zh-CN"))})
    assert not badly_written, "\n".join(badly_written)


def test_a_finding_renders_in_chinese_with_its_lines() -> None:
    source = (ROOT / "tests" / "fixtures" / "GL101" / "bad_helper_backward_called_twice.py").read_text(encoding="utf-8")
    finding = check_source(source, "train.py").findings[0]
    assert isinstance(finding.message, Message) and finding.message.id == "GL101.freed"
    chinese = finding.message.in_language("zh-CN")
    assert "计算图" in chinese and "第 17 行" in chinese and "第 9 行" in chinese
    assert str(finding.message) == finding.message.in_language("en")  # English stays what it was
    built_here = finding.related[0].message
    assert isinstance(built_here, Message) and built_here.in_language("zh-CN").startswith("计算图")


def test_a_line_of_another_file_names_it_in_both_languages() -> None:
    line = Line(16, "pkg/layers.py")
    assert str(line) == "16 of layers.py"
    assert line.in_language("zh-CN") == "layers.py 第 16 行"
    assert Line(3, cell=6).in_language("en") == "3 (cell 6)"
    assert Line(3, cell=6).in_language("zh-CN") == "第 6 个单元格第 3 行"
