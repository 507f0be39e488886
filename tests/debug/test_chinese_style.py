"""The Chinese of the VS Code extension and of the debug inspector follows the style of
docs/zh-CN-GLOSSARY.md, checked by the same rule as the rule documents (spaces between
Chinese and Latin text or code, full-width punctuation, no space beside it)."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import pytest

from graphlife.debug import _OWN_FRAME_NOTE, probe
from graphlife.debug.messages import MESSAGES
from graphlife.debug.render import WORDS

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _style_problems():
    """The rule documents' style check (tests/server/test_rule_docs_zh.py), one rule for all Chinese."""
    spec = importlib.util.spec_from_file_location("rule_docs_zh", ROOT / "tests" / "server" / "test_rule_docs_zh.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.style_problems


def _chinese_texts() -> dict[str, str]:
    texts: dict[str, str] = {}
    for name in ("l10n/bundle.l10n.zh-cn.json", "package.nls.zh-cn.json"):
        for key, text in json.loads((ROOT / name).read_text(encoding="utf-8")).items():
            texts[f"{name}: {key}"] = text
    for key, by_language in probe._TEXTS.items():
        texts[f"probe: {key}"] = by_language["zh-CN"]
    for item in MESSAGES:
        for key, text in item["zh-CN"].items():
            texts[f"messages: {item['code']} {key}"] = text
    for key, text in WORDS["zh-CN"].items():
        texts[f"render: {key}"] = text
    texts["explain(): the note on torch's frame"] = _OWN_FRAME_NOTE["zh-CN"]
    return texts


TEXTS = _chinese_texts()


@pytest.mark.parametrize("where", sorted(TEXTS))
def test_chinese_text_follows_the_glossary_style(where):
    assert _style_problems()(TEXTS[where]) == []


def test_the_style_check_sees_what_it_should():
    check = _style_problems()
    assert check("计算图abc") and check("计算图， 完好") and check("计算图,完好")
    assert check("`loss` 的计算图已释放。") == []
