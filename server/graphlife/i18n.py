"""Which language graphlife speaks to the user: English (the default) or Simplified Chinese.

Every message graphlife writes is a template with an English and a Chinese text
(:class:`graphlife.findings.MessageTemplate`); the front ends choose one language at
their edge: the CLI from ``--language`` or the environment (as gettext reads it), the
language server from the ``locale`` of ``initialize`` and the ``graphlife.language``
setting. The names people and systems spell a language with are many (``zh-cn`` from VS
Code, ``zh_CN.UTF-8`` from a shell, ``zh-Hans`` from macOS); they all map to one of
:data:`LANGUAGES` here, so that nothing else compares spellings.
"""

from __future__ import annotations

import os

# Neither ``typing`` nor ``collections.abc`` at run time: a check answered from the cache
# (:mod:`graphlife.fast_check`) chooses its language here and imports nothing else that needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Literal

    Language = Literal["en", "zh-CN"]
else:
    Language = str

ENGLISH: Language = "en"
CHINESE: Language = "zh-CN"
#: The languages graphlife writes, in the spelling its options and JSON output use.
LANGUAGES: tuple[Language, ...] = (ENGLISH, CHINESE)
#: What a user may choose: a language, or ``auto`` (the environment's, or the editor's).
CHOICES: tuple[str, ...] = ("auto", ENGLISH, CHINESE)

#: Chinese scripts and regions written in traditional characters: graphlife has no text for
#: them, and Simplified Chinese is not what their readers asked for, so they get English.
_TRADITIONAL = frozenset({"tw", "hk", "mo", "hant"})


def normalize(name: str | None) -> Language | None:
    """The language a locale or a user's choice names; ``None`` for ``auto``, empty or unset.

    ``zh``, ``zh-cn``, ``zh_CN.UTF-8``, ``zh-Hans``, ``zh-Hans-CN``, ``zh_SG`` name Simplified
    Chinese; every other language (``en_US``, ``fr``, ``C``, ``POSIX``) is English."""
    if name is None:
        return None
    text = name.strip()
    if not text or text.lower() == "auto":
        return None
    base = text.split(".", 1)[0].split("@", 1)[0]  # zh_CN.UTF-8, sr_RS@latin
    parts = [part.lower() for part in base.replace("_", "-").split("-") if part]
    if not parts or parts[0] != "zh":
        return ENGLISH
    if any(part in _TRADITIONAL for part in parts[1:]):
        return ENGLISH
    return CHINESE


def parse_choice(text: str) -> Language | None:
    """A user's ``--language`` / ``graphlife.language``: ``None`` for ``auto``; raises
    ``ValueError`` with the accepted values for anything that is not a language graphlife
    writes (a typo must not silently become English)."""
    lowered = text.strip().lower()
    if lowered == "auto":
        return None
    for language in LANGUAGES:
        if lowered == language.lower():
            return language
    raise ValueError(f"unknown language {text!r}; use one of {', '.join(CHOICES)}")


def from_environment(environ: Mapping[str, str] | None = None) -> Language:
    """The language of the environment, read as GNU gettext reads it.

    ``LANGUAGE`` (a colon-separated list of preferences) counts only when the locale is
    not ``C``/``POSIX``, as in gettext; then ``LC_ALL``, ``LC_MESSAGES``, ``LANG``: the first
    one set decides. Of ``LANGUAGE``'s list the first language graphlife writes wins."""
    env = os.environ if environ is None else environ
    locale = next((env[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if env.get(name)), "")
    if locale and locale.split(".", 1)[0] not in ("C", "POSIX"):
        for preference in env.get("LANGUAGE", "").split(":"):
            language = normalize(preference)
            if language is not None and (language == CHINESE or preference.lower().startswith("en")):
                return language
    return normalize(locale) or ENGLISH


def choose(choice: str | None, fallback: Language) -> Language:
    """The language of a user's ``choice`` (``auto``/``None`` leaves it to ``fallback``)."""
    chosen = parse_choice(choice) if choice is not None else None
    return chosen if chosen is not None else fallback
