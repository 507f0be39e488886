"""Every rule's Simplified Chinese documentation says what its English says, and keeps saying it.

A translation lives next to the English docstring (``ZH_CN = Translation(...)`` in the rule's
module). These tests fail when a translation lacks a user section, has a section the English
lacks, quotes torch differently, shows different code (comments aside), or was written from an
English text that has changed since (its recorded fingerprint). After updating a Chinese text to
match a changed English one, a person runs ``python tools/gen_rule_docs.py --translated CODE``.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import os
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from graphlife.analysis.doc_languages import (
    ENGLISH,
    HEADINGS,
    LANGUAGES,
    SIMPLIFIED_CHINESE,
    Translation,
    english_section,
    fingerprint,
    language_of,
)
from graphlife.analysis.rule_api import TEST_AUTHOR_SECTIONS, Rule, RuleDoc
from graphlife.findings import Severity
from graphlife.rules import all_rules, rule_by_code

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- reading a documentation


def headings(text: str) -> list[str]:
    """The ``## `` section headings of a documentation, in order (outside code blocks)."""
    found: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("## "):
            found.append(line[3:].strip())
    return found


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a documentation, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def code_without_comments(code: str) -> list[tuple[int, str]]:
    """The Python tokens of a code block without its comments and line layout: two blocks
    that differ only in comments (translated ones) give the same tokens."""
    ignored = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER)
    try:
        tokens = tokenize.generate_tokens(io.StringIO(code + "\n").readline)
        return [(token.type, token.string) for token in tokens if token.type not in ignored]
    except (tokenize.TokenError, SyntaxError):  # not Python (an error message, a shell line): the text itself
        return [(tokenize.STRING, line.rstrip()) for line in code.splitlines()]


def inline_code(text: str) -> list[str]:
    """The inline code spans of a paragraph (``text``), in order: what is quoted verbatim."""
    spans: list[str] = []
    index = 0
    while (start := text.find("`", index)) != -1:
        run = len(text[start:]) - len(text[start:].lstrip("`"))  # the opening run of backticks
        fence = "`" * run
        end = text.find(fence, start + run)
        if end == -1:
            break
        spans.append(" ".join(text[start + run:end].split()))  # a line break in a span is a space
        index = end + run
    return spans


def problems(english: str, chinese: str) -> list[str]:
    """Why ``chinese`` is not a faithful translation of the English user documentation ``english``."""
    found: list[str] = []
    english_doc = RuleDoc(english)
    chinese_doc = RuleDoc(chinese, language=SIMPLIFIED_CHINESE)
    english_sections = [title for title in headings(english) if title not in TEST_AUTHOR_SECTIONS]
    chinese_sections = []
    for title in headings(chinese):
        section = english_section(title, SIMPLIFIED_CHINESE)
        if section is None or section not in english_sections:
            found.append(f"section `## {title}` translates no section of the English")
        else:
            chinese_sections.append(section)
    for section in english_sections:
        if not chinese_doc.section(section):
            found.append(f"no `## {HEADINGS[SIMPLIFIED_CHINESE].get(section, section)}` ({section})")
    if chinese_sections != [s for s in english_sections if s in chinese_sections]:
        found.append("the sections are not in the English order")
    if not chinese_doc.summary or chinese_doc.summary == english_doc.summary:
        found.append("the summary line is not translated")
    english_quote = inline_code(english_doc.section("What torch says"))
    if sorted(english_quote) != sorted(inline_code(chinese_doc.section("What torch says"))):
        found.append("`What torch says` does not quote what the English quotes, verbatim")
    english_code, chinese_code = code_blocks(english_doc.user_text), code_blocks(chinese)
    if len(english_code) != len(chinese_code):
        found.append(f"{len(chinese_code)} code blocks, the English has {len(english_code)}")
    for number, (ours, theirs) in enumerate(zip(english_code, chinese_code), start=1):
        if code_without_comments(ours) != code_without_comments(theirs):
            found.append(f"code block {number} differs from the English (beyond its comments)")
    return found


#: Full-width punctuation of Chinese prose (docs/zh-CN-GLOSSARY.md); no space goes next to it.
_FULL_WIDTH = "，。：；？！（）、"
#: ASCII punctuation that Chinese prose writes full-width.
_HALF_WIDTH = ",;:?!()"


def _is_chinese(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def _code_spans_as_letters(line: str) -> str:
    """``line`` with each inline code span replaced by one Latin letter (``C``)."""
    out: list[str] = []
    index = 0
    while (start := line.find("`", index)) != -1:
        run = len(line[start:]) - len(line[start:].lstrip("`"))
        end = line.find("`" * run, start + run)
        if end == -1:
            break
        out += [line[index:start], "C"]
        index = end + run
    return "".join([*out, line[index:]])


def style_problems(text: str) -> list[str]:
    """Where the prose of a Chinese documentation breaks the glossary's style: a Chinese character
    touching Latin text or code without a space, ASCII punctuation next to Chinese, a space next to
    full-width punctuation. Code blocks and headings are not prose; a code span counts as Latin text."""
    found: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.startswith("## "):
            continue
        prose = _code_spans_as_letters(line)
        for left, right in itertools.pairwise(prose):
            pair = left + right
            if (_is_chinese(left) and right.isascii() and right.isalnum()) or (
                    _is_chinese(right) and left.isascii() and left.isalnum()):
                found.append(f"no space between Chinese and Latin text or code: {pair!r} in {line!r}")
            if (_is_chinese(left) and right in _HALF_WIDTH) or (_is_chinese(right) and left in _HALF_WIDTH):
                found.append(f"ASCII punctuation in Chinese prose: {pair!r} in {line!r}")
            if (left == " " and right in _FULL_WIDTH) or (left in _FULL_WIDTH and right == " "):
                found.append(f"a space next to full-width punctuation: {pair!r} in {line!r}")
    return found


# --------------------------------------------------------------------------- every translated rule


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_translation_says_what_the_english_says(rule: Rule) -> None:
    assert rule.doc.zh_cn is not None, (
        f"{rule.code} has no Simplified Chinese documentation: add `ZH_CN = Translation(...)` next to its "
        "docstring (docs/CONVENTIONS.md, docs/zh-CN-GLOSSARY.md)")
    assert problems(rule.doc.user_text, rule.doc.zh_cn.text) == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_translation_follows_the_style_of_the_glossary(rule: Rule) -> None:
    assert rule.doc.zh_cn is not None
    assert style_problems(rule.doc.zh_cn.text) == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_translation_was_written_from_the_current_english(rule: Rule) -> None:
    assert rule.doc.zh_cn is not None
    assert rule.doc.zh_cn.translates == fingerprint(rule.doc.user_text), (
        f"{rule.code}'s English documentation changed after its Chinese was written: update the Chinese "
        f"to say the same, then run `python tools/gen_rule_docs.py --translated {rule.code}`")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_users_see_neither_the_fingerprint_nor_the_sections_for_test_authors(rule: Rule) -> None:
    assert rule.doc.zh_cn is not None
    page = rule.markdown(SIMPLIFIED_CHINESE)
    assert rule.doc.zh_cn.translates not in page
    assert "Fixture line" not in page
    assert rule.doc.in_language(SIMPLIFIED_CHINESE).section("What it does") in page


# --------------------------------------------------------------------------- the guard itself


def test_the_guard_catches_a_translation_that_drifted() -> None:
    """Each way a translation can fall out of step with its English is caught (and a translated
    comment is not one of them)."""
    rule = rule_by_code("GL102")
    assert rule is not None and rule.doc.zh_cn is not None
    english, chinese = rule.doc.user_text, rule.doc.zh_cn.text
    assert problems(english, chinese.replace("# sigmoid 为它的反向传播保存了 h", "# 注释可以翻译")) == []
    assert problems(english, chinese.replace("h.relu_()", "h.relu()"))  # the code changed
    assert problems(english, chinese.replace("is at version 1", "is at version 2"))  # torch misquoted
    assert problems(english, chinese.replace("## 修复的安全性", "## 修复"))  # a section torch's English lacks
    assert problems(english, chinese.split("## 修复的安全性")[0])  # a section missing
    assert problems(english + "\n\n## Notes\nmore.", chinese)  # the English grew a section


def test_the_style_check_catches_what_the_glossary_rules_out() -> None:
    assert style_problems("调用 `backward()` 时，计算图在第 3 行被释放。\n```python\nx = 1  # 第1行\n```") == []
    assert style_problems("调用`backward()`时")  # no space around code
    assert style_problems("在第3行")  # no space around a number
    assert style_problems("计算图被释放,然后报错")  # an ASCII comma
    assert style_problems("调用 `backward()` ，然后")  # a space before full-width punctuation


def test_a_changed_english_no_longer_matches_its_fingerprint() -> None:
    rule = rule_by_code("GL102")
    assert rule is not None and rule.doc.zh_cn is not None
    assert fingerprint(rule.doc.user_text) == rule.doc.zh_cn.translates
    assert fingerprint(rule.doc.user_text.replace("far from", "close to")) != rule.doc.zh_cn.translates
    # Re-wrapping the English is not a change of what it says.
    assert fingerprint(rule.doc.user_text.replace("\n", " ")) == rule.doc.zh_cn.translates


def test_the_tool_records_the_fingerprint_in_the_rule_module() -> None:
    spec = importlib.util.spec_from_file_location("gen_rule_docs", ROOT / "tools" / "gen_rule_docs.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    source = 'ZH_CN = Translation(\n    """中文。\n""",\n    translates="0123456789ab",\n)\n'
    assert tool._with_fingerprint(source, "feedbeef0000") == source.replace("0123456789ab", "feedbeef0000")
    assert tool._with_fingerprint("X = 1\n", "feedbeef0000") is None


# --------------------------------------------------------------------------- the API


def test_in_language_gives_the_chinese_text_with_the_english_section_names() -> None:
    rule = rule_by_code("GL102")
    assert rule is not None
    chinese = rule.doc.in_language("zh-CN")
    assert chinese.language == SIMPLIFIED_CHINESE
    assert chinese.summary.startswith("原地操作")
    assert "版本计数器" in chinese.section("What it does")
    assert chinese.torch_says == rule.doc.torch_says  # torch's words, verbatim
    assert "## 它检查什么" in chinese.user_text
    assert chinese.in_language("en") == rule.doc
    assert rule.doc.languages == LANGUAGES == chinese.languages


@pytest.mark.parametrize("tag", ["zh-CN", "zh-cn", "zh_CN.UTF-8", "zh-Hans", "zh-Hans-CN", "zh_SG", "zh"])
def test_simplified_chinese_locales_get_chinese(tag: str) -> None:
    assert language_of(tag) == SIMPLIFIED_CHINESE


@pytest.mark.parametrize(
    "tag", ["en", "en-US", "fr", "zh-TW", "zh_HK.UTF-8", "zh-Hant", "zh-Hant-CN", "", None, "C", "auto"])
def test_other_languages_get_english(tag: str | None) -> None:
    rule = rule_by_code("GL102")
    assert rule is not None
    assert language_of(tag) == ENGLISH
    assert rule.doc.in_language(tag or "").text == rule.doc.text


def test_a_rule_not_translated_yet_shows_its_english() -> None:
    doc = RuleDoc("Something is wrong.\n\n## What it does\nIt checks.\n")
    rule = Rule(code="GL999", name="example", severity=Severity.WARNING, doc=doc)
    assert doc.in_language("zh-CN") is doc
    assert doc.languages == (ENGLISH,)
    assert rule.markdown("zh-CN") == rule.markdown() == (
        "**GL999 example** (default severity: warning)\n\nSomething is wrong.\n\n## What it does\nIt checks.")


def test_the_chinese_rule_page_names_the_severity_in_chinese() -> None:
    doc = RuleDoc("English.\n\n## What it does\nIt checks.\n",
                  zh_cn=Translation("中文概要。\n\n## 它检查什么\n检查。\n", translates=""))
    rule = Rule(code="GL999", name="example", severity=Severity.ERROR, doc=doc)
    assert rule.markdown("zh-cn") == "**GL999 example**（默认严重级别：错误）\n\n中文概要。\n\n## 它检查什么\n检查。"


# --------------------------------------------------------------------------- the generated page


def test_the_chinese_rules_page_is_generated_and_links_the_english_one() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rule_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8", "LC_ALL": "C"})
    assert proc.returncode == 0, proc.stderr
    chinese = (ROOT / "docs" / "rules.zh-CN.md").read_text(encoding="utf-8")
    english = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "[English](rules.md)" in chinese and "[简体中文](rules.zh-CN.md)" in english
    for rule in all_rules():
        # The same headings, so a link to a rule's anchor works on either page.
        assert f"## {rule.code} {rule.name}" in chinese
        assert rule.doc.in_language(SIMPLIFIED_CHINESE).summary in chinese
    assert "### torch 的报错" in chinese and "Fixture line" not in chinese
