"""The ``graphlife`` command (``graphlife.cli:main``, and ``python -m graphlife``).

Why this module is nearly empty: the console script imports it before anything runs, so
whatever it imports every run pays for. A plain ``graphlife check FILE...`` of files already
checked is answered from the cache of results by :mod:`graphlife.fast_check`, which loads
almost nothing; every other command, and a check it cannot answer, is the full command
line (:mod:`graphlife.cli_full`, whose docstring says what each command does).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        from graphlife.fast_check import answer  # noqa: PLC0415

        status = answer(argv[1:])
        if status is not None:
            return status
    from graphlife.cli_full import main as full_main  # noqa: PLC0415

    return full_main(argv)
