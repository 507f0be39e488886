"""The leak watch around one block of code (a test's body): counts at every backward and step.

Used by the pytest plugin. Inside a test, cost matters less than an answer: the
site recorder is on for the whole block (every graph node knows its line) and
the watch counts after every backward call and every optimizer step, whatever
a count costs. A loop with neither is not watched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def watching() -> Iterator[list[str]]:
    """Watch the block; the list receives the watch's report (at most one)."""
    import torch  # noqa: PLC0415 - the block is the user's torch code: its torch, imported for it

    from graphlife.runtime.sites import SiteRecorder  # noqa: PLC0415
    from graphlife.runtime.watch import GraphWatch  # noqa: PLC0415

    reports: list[str] = []
    recorder = SiteRecorder(torch)
    recorder.start()
    watch = GraphWatch(torch, budget=0.0, recorder=recorder, report=reports.append)
    backwards = 0

    def after_backward() -> None:
        nonlocal backwards
        backwards += 1
        watch.maybe_count(f"backward {backwards}")

    recorder.on_backward = after_backward
    watch.install()
    try:
        yield reports
    finally:
        watch.uninstall()
        recorder.on_backward = None
        recorder.stop()
