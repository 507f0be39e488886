"""The language server's incremental checker, following imports: the same findings as a full
check after an edit of the checked file *or of a module it imports*.

The unit cache replays a unit of the checked file whose code did not change; what the unit
read of another module (a flag, a constant) is not code of the checked file, so a change
there must make the checker start over. Each test compares every version with
:func:`graphlife.checker.check_source` given the same project.
"""

from __future__ import annotations

from pathlib import Path

from graphlife.checker import check_source
from graphlife.incremental import IncrementalChecker
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import SourceCache

TRAIN_WITH_FLAG = """\
import torch

from cfg import IN_PLACE


def step():
    x = torch.randn(3, requires_grad=True)
    y = torch.sigmoid(x)
    if IN_PLACE:
        y.mul_(2)
    y.sum().backward()


step()
"""

LAYERS = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        y = torch.sigmoid(self.linear(x))
        y.mul_(2)
        return y
"""

TRAIN_WITH_BLOCK = """\
import torch

from layers import Block


def evaluate():
    with torch.no_grad():
        return torch.randn(2).sum()


block = Block(4)
for _ in range(3):
    loss = block(torch.randn(2, 4)).sum()
    loss.backward()
"""


def _outcome(result) -> list[tuple]:
    return [(f.code, f.severity, f.span, f.message, f.related, f.fixes) for f in result.findings]


def _check_both(checker: IncrementalChecker, source: str, entry: Path, buffers: dict[str, str],
                sources: SourceCache) -> list[tuple]:
    incremental = checker.check(source, modules=ProjectModules(str(entry), buffers=buffers, sources=sources),
                                path=str(entry))
    full = check_source(source, str(entry), modules=ProjectModules(str(entry), buffers=buffers, sources=sources))
    assert _outcome(incremental) == _outcome(full)
    return _outcome(incremental)


def test_a_changed_imported_value_is_not_replayed_from_the_cache(tmp_path: Path):
    entry = tmp_path / "train.py"
    entry.write_text(TRAIN_WITH_FLAG)
    flag = tmp_path / "cfg.py"
    flag.write_text("IN_PLACE = True\n")
    checker, sources = IncrementalChecker(), SourceCache()
    codes = []
    for value in ("True", "False", "True"):  # the module's open buffer, as the editor has it
        outcome = _check_both(checker, TRAIN_WITH_FLAG, entry, {str(flag): f"IN_PLACE = {value}\n"}, sources)
        codes.append([code for code, *_ in outcome])
    assert codes == [["GL102"], [], ["GL102"]]
    # and on disk, without a buffer
    flag.write_text("IN_PLACE = False  # off\n")
    assert _check_both(checker, TRAIN_WITH_FLAG, entry, {}, sources) == []


def test_an_unchanged_project_still_replays(tmp_path: Path):
    entry = tmp_path / "train.py"
    entry.write_text(TRAIN_WITH_FLAG)
    (tmp_path / "cfg.py").write_text("IN_PLACE = True\n")
    checker, sources = IncrementalChecker(), SourceCache()
    _check_both(checker, TRAIN_WITH_FLAG, entry, {}, sources)
    _check_both(checker, TRAIN_WITH_FLAG, entry, {}, sources)  # e.g. analyzed again after a save
    assert checker.statistics["replayed"] == 1 and checker.statistics["ran"] == 0


def test_edits_of_the_checked_file_keep_findings_in_the_imported_module_where_they_are(tmp_path: Path):
    entry = tmp_path / "train.py"
    entry.write_text(TRAIN_WITH_BLOCK)
    layers = tmp_path / "layers.py"
    layers.write_text(LAYERS)
    checker, sources = IncrementalChecker(), SourceCache()
    first = _check_both(checker, TRAIN_WITH_BLOCK, entry, {}, sources)
    assert [(code, span.path, span.line) for code, _, span, *_ in first] == [("GL102", str(layers), 12)]
    moved = "# a comment\n\n" + TRAIN_WITH_BLOCK.replace("    with torch.no_grad():",
                                                         "    x = 1\n    with torch.no_grad():")
    second = _check_both(checker, moved, entry, {}, sources)
    assert [(code, span.path, span.line) for code, _, span, *_ in second] == [("GL102", str(layers), 12)]
