"""``--statistics``: how many findings of each rule, most frequent first (as ruff prints it)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from graphlife.output.report import RunResult


def write_statistics_table(result: RunResult, out: TextIO) -> None:
    rows = result.counts_by_code()
    if not rows:
        if not result.quiet:
            files = result.files_checked()
            out.write(f"All checks passed ({files} file{'s' if files != 1 else ''}).\n")
        return
    width = max(len(str(count)) for _, _, count in rows)
    for code, name, count in rows:
        out.write(f"{count:>{width}}  {code:<12} {name}\n")


def statistics_json(result: RunResult) -> list[dict[str, object]]:
    return [{"code": code, "name": name, "count": count} for code, name, count in result.counts_by_code()]


def write_statistics_json(result: RunResult, out: TextIO) -> None:
    json.dump(statistics_json(result), out, indent=2)
    out.write("\n")
