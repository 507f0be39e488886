"""The languages a rule's documentation is written in, and what ties a translation to its English.

A rule's English documentation is its module docstring; a translation lives next to it in the
same module (``ZH_CN = Translation(...)``, passed to ``RuleDoc(__doc__, zh_cn=ZH_CN)``), so a
rule cannot be added or changed in one language only without a test noticing
(``tests/server/test_rule_docs_zh.py``). The translation names its sections with its own
headings (``## torch 的报错``); :data:`HEADINGS` maps them to the English section titles, the
keys every caller uses (``doc.section("What torch says")`` works in both languages).

A translation records the fingerprint of the English text it translates (:func:`fingerprint`
of the English user documentation). When the English changes, the fingerprints differ and the
test fails until a person updates the Chinese and refreshes the fingerprint
(``python tools/gen_rule_docs.py --translated GL102``). Users never see the fingerprint: it is
an argument of :class:`Translation`, not part of its text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from graphlife import i18n

#: Every language rule documentation is written in; English is the source of every translation.
ENGLISH = "en"
SIMPLIFIED_CHINESE = "zh-CN"
LANGUAGES = (ENGLISH, SIMPLIFIED_CHINESE)


#: The section headings of each translation, keyed by the English section title.
HEADINGS: dict[str, dict[str, str]] = {
    SIMPLIFIED_CHINESE: {
        "What it does": "它检查什么",
        "Why is this bad?": "为什么这是问题？",
        "What torch says": "torch 的报错",
        "Example": "示例",
        "Use instead": "改为",
        "Fix safety": "修复的安全性",
    },
}

#: Severity names as each language writes them (the rule page's "default severity").
SEVERITY_NAMES: dict[str, dict[str, str]] = {
    SIMPLIFIED_CHINESE: {"error": "错误", "warning": "警告", "information": "信息", "hint": "提示"},
}


#: The generated page of every rule, per language (in docs/, bundled with the extension).
RULES_PAGES = {ENGLISH: "rules.md", SIMPLIFIED_CHINESE: "rules.zh-CN.md"}


def severity_note(severity: str, language: str) -> str:
    """``(default severity: error)`` as ``language`` writes it, after a rule's name."""
    translated = SEVERITY_NAMES.get(language, {}).get(severity)
    if language == SIMPLIFIED_CHINESE and translated is not None:
        return f"（默认严重级别：{translated}）"
    return f" (default severity: {severity})"


def language_of(tag: str | None) -> str:
    """The documentation language for a locale tag: ``zh-CN`` for Simplified Chinese (``zh``,
    ``zh-cn`` from VS Code, ``zh_CN.UTF-8`` from a shell, ``zh-Hans``, ``zh-Hans-CN``, ``zh_SG``),
    English for anything else (``en_US``, ``fr``, ``C``, ``zh-TW``, ``zh-Hant``), unknown or empty."""
    return SIMPLIFIED_CHINESE if i18n.normalize(tag) == i18n.CHINESE else ENGLISH


def heading(section: str, language: str) -> str:
    """The heading that ``language`` gives the English section ``section`` (itself when none)."""
    return HEADINGS.get(language, {}).get(section, section)


def english_section(title: str, language: str) -> str | None:
    """The English section title a heading of ``language`` translates, or ``None`` when it
    is no known section's heading."""
    for english, translated in HEADINGS.get(language, {}).items():
        if translated == title:
            return english
    return None


def fingerprint(english_user_text: str) -> str:
    """A short fingerprint of an English rule documentation, blind to line wrapping: what a
    translation records as the text it translates."""
    normal = " ".join(english_user_text.split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Translation:
    """A rule documentation in another language, written next to the English docstring.

    ``text`` has the English docstring's shape (a summary line, then ``## `` sections with the
    language's :data:`HEADINGS`); ``translates`` is the :func:`fingerprint` of the English
    user documentation it was written from."""

    text: str
    translates: str
