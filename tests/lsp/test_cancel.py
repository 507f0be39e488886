"""The worker-thread cancellation the server relies on to stop stale analyses.

An exception raised into a thread from outside is delicate: it must stop the
job it was meant for, and never surface in the next job that thread runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from graphlife.lsp.cancel import Cancelled, Runner

pytestmark = pytest.mark.asyncio


def _busy(seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(100))
    return "finished"


def _swallowing(seconds: float) -> str:
    """Code like the engine's: broad ``except Exception`` must not eat the cancellation."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:  # noqa: SIM105 - the engine's spelling, which the test is about
            sum(range(100))
        except Exception:  # noqa: BLE001
            pass
    return "finished"


async def test_a_running_job_is_stopped_promptly():
    with ThreadPoolExecutor(max_workers=1) as executor:
        runner = Runner(executor)
        job, future = runner.submit("busy", _swallowing, 10.0)
        await asyncio.sleep(0.2)
        started = time.monotonic()
        runner.cancel(job, "newer version")
        with pytest.raises(Cancelled):
            await future
        assert time.monotonic() - started < 2.0


async def test_the_next_job_on_the_same_thread_is_unaffected():
    with ThreadPoolExecutor(max_workers=1) as executor:
        runner = Runner(executor)
        for _ in range(20):  # cancel at varying moments, including right at the end
            job, future = runner.submit("short", _busy, 0.01)
            await asyncio.sleep(0.009)
            runner.cancel(job, "race")
            with contextlib.suppress(Cancelled):
                await future
            _, after = runner.submit("next", _busy, 0.05)
            assert await after == "finished"


async def test_a_job_cancelled_before_it_starts_never_runs():
    ran = []
    with ThreadPoolExecutor(max_workers=1) as executor:
        runner = Runner(executor)
        _, blocker = runner.submit("blocker", _busy, 0.3)
        job, future = runner.submit("queued", ran.append, "ran")
        runner.cancel(job, "closed")
        assert await blocker == "finished"
        with pytest.raises(Cancelled):
            await future
    assert ran == []
