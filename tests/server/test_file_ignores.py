"""`# graphlife: ignore-file[GL101]` silences a rule in one file (the editor's "Ignore GL101 in
this file" writes it)."""

from __future__ import annotations

from graphlife.checker import check_source
from graphlife.file_ignores import file_ignores, ignore_file_comment, parse_comment

BUG = """\
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
loss.backward()
"""


def _codes(source: str) -> list[str]:
    return [finding.code for finding in check_source(source).findings]


def test_the_comment_silences_its_rules_in_the_file():
    assert _codes(BUG) == ["GL101"]
    assert _codes(ignore_file_comment(["GL101"]) + "\n" + BUG) == []
    assert _codes("# graphlife: ignore-file[GL1]\n" + BUG) == []  # a prefix
    assert _codes("# graphlife: ignore-file\n" + BUG) == []  # every rule
    assert _codes(BUG + "# graphlife: ignore-file[GL101]\n") == []  # any line


def test_other_rules_and_other_comments_do_not():
    assert _codes("# graphlife: ignore-file[GL201]\n" + BUG) == ["GL101"]
    assert _codes("# graphlife: ignore[GL101]\n" + BUG) == ["GL101"]  # a line's comment covers its line
    assert _codes('"""\n# graphlife: ignore-file[GL101]\n"""\n' + BUG) == ["GL101"]  # text in a string


def test_parsing():
    assert parse_comment("#graphlife:ignore-file[gl101 , GL2]").codes == ("GL101", "GL2")
    assert parse_comment("# ruff: noqa") is None
    assert parse_comment("# graphlife: ignore[GL101]") is None
    assert not file_ignores(["x = 1  # graphlife: ignore-file[GL101]"])  # not on a line of its own
