"""The pytest plugin in a pytest run of its own (pytester): a marked test whose graphs keep
growing across its loop fails with the watch's report; a clean one, and unmarked ones, pass."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_TESTS = '''
import pytest
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def train(keep):
    history = []
    for _ in range(8):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(keep(loss))
    return history


@pytest.mark.no_graph_growth
def test_keeps_losses():
    assert len(train(lambda loss: loss)) == 8


@pytest.mark.no_graph_growth
def test_keeps_numbers():
    assert len(train(lambda loss: loss.item())) == 8


def test_unmarked_keeps_losses():
    assert len(train(lambda loss: loss)) == 8
'''


def test_a_marked_test_whose_graphs_grow_fails_with_the_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_training=_TESTS)
    result = pytester.runpytest_subprocess("-p", "graphlife.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*test_keeps_losses*",
        "*graphlife watch: autograd graphs keep growing*",
        "*test_training.py:11 in train*",
        "*loss = model(torch.randn(8, 4)).pow(2).mean()*",
        "*`history` (local of train() at *test_training.py:*",
    ])
    assert "FAILED test_training.py::test_keeps_losses" in result.stdout.str()


def test_without_the_plugin_the_marker_is_unknown_and_nothing_is_watched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_training=_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:graphlife")
    result.assert_outcomes(passed=3)
