"""The hover's stories are told once per version of a file, all of them from one watched run:
the mouse moves from name to name, and on a file of thousands of lines a watched run of the
whole file takes a second or more."""

from __future__ import annotations

from graphlife.analysis import stories
from graphlife.analysis.stories import Stories, story_at

SOURCE = """\
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
"""

#: The server's time box is wall time (2 s): on a loaded test machine the first run, which also
#: loads the engine's tables, can pass it, and the story would be missing for that reason alone.
#: These tests are about how often the file runs, so the box is made wide.
BUDGET = 600.0


def test_a_story_is_told_once_per_version(monkeypatch):
    runs = []
    real_run = stories._run

    def counting_run(*args, **kwargs):
        runs.append(args[0])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(stories, "_run", counting_run)
    told = Stories(SOURCE, time_budget=BUDGET)
    first = told.at(5, 2)  # `loss` in `loss.backward()`
    assert first is not None and "line 4" in first
    assert told.at(5, 3) == first  # the same name, another character of it
    assert told.at(5, 1) == first
    assert len(runs) == 1
    assert told.at(1, 1) is None  # `import`: nothing to tell, nothing run
    assert len(runs) == 1
    assert story_at(SOURCE, 5, 2, time_budget=BUDGET) == first  # the uncached path says the same


def test_every_name_of_a_version_is_told_from_one_run(monkeypatch):
    """A name not hovered before does not run the file again (watching one expression per run
    made each new name cost a run of the whole file)."""
    runs = []
    real_run = stories._run

    def counting_run(*args, **kwargs):
        runs.append(args[0])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(stories, "_run", counting_run)
    told = Stories(SOURCE, time_budget=BUDGET)
    w_story = told.at(3, 1)  # `w` where it is made
    loss_story = told.at(4, 1)  # `loss` where it is assigned
    backward_story = told.at(5, 7)  # the word `backward`
    assert w_story is not None and "requires grad: **yes**; a leaf" in w_story
    assert loss_story is not None and "consumed (and freed) by the backward at line 5" in loss_story
    assert backward_story is not None and "walks" in backward_story
    assert len(runs) == 1


def test_a_built_version_keeps_its_stories_not_the_engine():
    """The server keeps a version's stories while the document is open: the told text, not the
    syntax tree and the engine's states (tens of megabytes on a large file)."""
    told = Stories(SOURCE, time_budget=BUDGET)
    told.build()
    assert told.built and told.runs == 1
    kept = told._index
    assert kept is not None
    values = [*kept.told.values(), *(spot for spots in kept.spots.values() for spot in spots)]
    assert all(isinstance(value, (str, stories._Spot)) for value in values)


def test_the_cursor_finds_its_expression_without_walking_the_file_again(monkeypatch):
    """After the first hover of a version, finding the expression under the cursor looks only at
    that line's candidates (a walk of a 5,000-line tree costs a tenth of a second per hover)."""
    told = Stories(SOURCE, time_budget=BUDGET)
    told.at(1, 1)  # parses and indexes
    walks = []
    real_walk = stories.ast.walk

    def walk(node):
        if isinstance(node, stories.ast.Module):  # a walk of the whole file (the engine may walk parts)
            walks.append(node)
        return real_walk(node)

    monkeypatch.setattr(stories.ast, "walk", walk)
    assert told.at(5, 2) is not None
    assert told.at(4, 1) is not None  # `loss` where it is assigned
    assert told.at(5, 7) is not None  # the word `backward`
    assert walks == []
