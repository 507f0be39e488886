"""The ``--language`` option of the commands that write messages (check, fix, rules).

``auto`` (the default) follows the environment as gettext does (``LANGUAGE``,
``LC_ALL``, ``LC_MESSAGES``, ``LANG``: :func:`graphlife.i18n.from_environment`), so a
terminal set to ``zh_CN.UTF-8`` reads graphlife in Chinese without an option; ``en`` and
``zh-CN`` (any case, ``zh_CN`` too) choose one. A wrong value is a usage error that names
the accepted values.
"""

from __future__ import annotations

import argparse

from graphlife import i18n


def _language_choice(text: str) -> str:
    try:
        chosen = i18n.parse_choice(text.replace("_", "-"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return chosen or "auto"


def add_language_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--language", type=_language_choice, default="auto", metavar="{auto,en,zh-CN}",
        help="the language of messages and rule documents (default: auto, from LANGUAGE/LC_ALL/LC_MESSAGES/LANG); "
             "JSON keeps the English `message` and adds `localized_message`")


def chosen_language(args: argparse.Namespace) -> i18n.Language:
    """The language ``args.language`` names, the environment's for ``auto`` (or no option)."""
    choice = getattr(args, "language", "auto")
    return i18n.choose(choice, i18n.from_environment())
