"""pytest plugin: fail a test whose autograd graphs keep growing across its loop (opt-in by marker).

Enable it with ``pytest -p graphlife.pytest_plugin`` (or ``-p graphlife`` when graphlife
is installed: its entry point), then mark the tests to watch::

    @pytest.mark.no_graph_growth
    def test_training_loop_keeps_no_graph():
        for batch in batches:
            loss = model(batch).mean()
            loss.backward()
            opt.step()

While a marked test runs, the leak watch (:mod:`graphlife.runtime.watch`) counts the
live graphs after every backward and every optimizer step, with the site recorder on;
when the graphs that outlived their step keep growing, the test fails with the watch's
report: where the growing graphs were built and what keeps them alive. Unmarked tests
run untouched, and the plugin imports torch only when a marked test runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

MARKER = "no_graph_growth"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: fail the test when its autograd graphs keep growing across a loop (graphlife's leak watch)",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker(MARKER) is None:
        return (yield)
    from graphlife.runtime.scoped_watch import watching  # noqa: PLC0415 - torch only for marked tests

    with watching() as reports:
        result = yield
    if reports:
        pytest.fail(reports[0], pytrace=False)
    return result
