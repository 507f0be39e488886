"""The cycle collector runs less often while a file is checked, and is as it was after.

Why it matters to a user: the collector walked the objects of a check about two hundred
times per 5,000-line file (a fifth of the check); a check must still leave the process's
setting as it found it (the language server, a pytest run, a notebook host own it).
"""

from __future__ import annotations

import gc
import threading

from graphlife.analysis import collector
from graphlife.analysis.blocks import parse_tolerant
from graphlife.checker import check_source, run_checks

TRAIN = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * 2).sum()\nloss.backward()\n"


def thresholds_seen_by_the_parser(source: str) -> tuple[list[tuple[int, int, int]], object]:
    seen: list[tuple[int, int, int]] = []

    def parse(text: str):  # the pipeline's first step: it runs inside the check
        seen.append(gc.get_threshold())
        return parse_tolerant(text)

    result = run_checks(source, None, 30.0, parse)
    return seen, result


def test_a_check_raises_the_threshold_and_gives_it_back():
    before = gc.get_threshold()
    seen, result = thresholds_seen_by_the_parser(TRAIN)
    assert seen[0][0] == max(before[0], collector.CHECK_THRESHOLD)
    assert seen[0][1:] == before[1:]
    assert gc.get_threshold() == before
    assert not result.syntax_errors


def test_a_collector_turned_off_stays_off():
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        seen, _ = thresholds_seen_by_the_parser(TRAIN)
        assert seen[0][0] == 0
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_checks_on_threads_give_the_threshold_back_once_all_ended():
    before = gc.get_threshold()
    errors: list[BaseException] = []

    def check_a_few() -> None:
        try:
            for _ in range(5):
                check_source(TRAIN, "train.py")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=check_a_few) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert gc.get_threshold() == before
