"""Documents over the server's size limit are checked in a checker process of their own.

That process keeps the document's incremental checker between edits
(``graphlife/lsp/isolated.py``). These tests hold it to the promises made there:
after every edit the diagnostics are a full check's of the new text, one process
serves all the edits, and a process that dies mid-analysis (killed from outside,
as the out-of-memory killer would) is replaced without wedging the server, with
a clear line in the log.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time

import pytest
from lsp_helpers import initialize, open_document, wait_for_log, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD, padded_big_file

from graphlife.checker import check_source
from graphlife.lsp.linting import ISOLATE_CHARS

pytestmark = pytest.mark.asyncio

#: Seconds to wait for a big document's diagnostics (the first check of a new process included).
WAIT = 90.0


def _published(params: types.PublishDiagnosticsParams) -> list[tuple]:
    return sorted(
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message)
        for d in params.diagnostics
    )


def _full_check(source: str) -> list[tuple]:
    """What the diagnostics must be: a full check of ``source`` (ASCII: characters are UTF-16 units)."""
    return sorted(
        (f.code, f.span.line - 1, f.span.column - 1, f.span.end_line - 1, f.span.end_column - 1, f.message)
        for f in check_source(source).findings
    )


def _change_line(client: LanguageClient, uri: str, version: int, lines: list[str], line: int, text: str | None) -> None:
    """Replace line ``line`` with ``text`` (``None``: delete it), as an incremental change."""
    start = types.Position(line=line, character=0)
    if text is None:
        end, new = types.Position(line=line + 1, character=0), ""
        del lines[line]
    else:
        end, new = types.Position(line=line, character=len(lines[line])), text
        lines[line] = text
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=new)],
        )
    )


def _starts(client: LanguageClient) -> list[int]:
    """The pids of the checker processes the server started, from its log."""
    return [
        int(match.group(1))
        for message in client.log_messages
        if (match := re.search(r"started a checker process \(pid (\d+)\)", message.message))
    ]


async def test_a_big_document_gets_a_full_checks_diagnostics_after_each_edit(client: LanguageClient, workdir):
    source = padded_big_file(ISOLATE_CHARS + 10_000)
    assert len(source) > ISOLATE_CHARS
    await initialize(client)
    uri = open_document(client, workdir / "big.py", source)
    first = await wait_for_publish(client, uri, version=1, timeout=WAIT)
    assert _published(first) == _full_check(source)
    assert any(code == "GL101" for code, *_ in _published(first))

    lines = source.split("\n")
    bugs = [i for i, text in enumerate(lines) if text == "    loss.backward()" and lines[i - 1] == text]
    step = next(i for i, text in enumerate(lines) if text.startswith("def step_5("))
    edits = [
        (bugs[3], None),  # fix one double backward: every line below moves up
        (step + 4, "    loss.backward(); loss.backward()"),  # a new one in a clean function
        (step + 2, "    out = batch * w + 5 + 0"),  # an edit that changes no finding
    ]
    for version, (line, text) in enumerate(edits, start=2):
        _change_line(client, uri, version, lines, line, text)
        published = await wait_for_publish(client, uri, version=version, timeout=WAIT)
        assert _published(published) == _full_check("\n".join(lines)), f"version {version}"

    assert len(_starts(client)) == 1, "one checker process serves every version (and keeps its caches)"


async def test_a_checker_process_killed_mid_analysis_does_not_wedge_the_server(slow_client: LanguageClient, workdir):
    """Every analysis takes 1.5 s longer here: the process is surely busy when it is killed."""
    source = padded_big_file(ISOLATE_CHARS + 10_000)
    await initialize(slow_client, debounce_ms=0)
    uri = open_document(slow_client, workdir / "big.py", source)
    await wait_for_log(slow_client, "started a checker process")
    os.kill(_starts(slow_client)[0], signal.SIGKILL)

    died = await wait_for_log(slow_client, "stopped unexpectedly", timeout=WAIT)
    assert died.type == types.MessageType.Warning
    assert "big.py" in died.message and "SIGKILL" in died.message
    published = await wait_for_publish(slow_client, uri, version=1, timeout=WAIT)
    assert _published(published) == _full_check(source), "a new process checked the text again"
    assert len(set(_starts(slow_client))) == 2

    # The server answers the next requests: a hover on the big document, another document's diagnostics.
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    hover = await slow_client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start)
    )
    assert hover is not None and "GL101" in hover.contents.value
    small = open_document(slow_client, workdir / "small.py", DOUBLE_BACKWARD)
    answered = await wait_for_publish(slow_client, small, version=1, timeout=WAIT)
    assert "GL101" in [d.code for d in answered.diagnostics]


async def test_a_checker_process_that_died_between_edits_is_replaced_for_the_next_one(client: LanguageClient, workdir):
    source = padded_big_file(ISOLATE_CHARS + 10_000)
    await initialize(client, debounce_ms=0)
    uri = open_document(client, workdir / "big.py", source)
    await wait_for_publish(client, uri, version=1, timeout=WAIT)
    os.kill(_starts(client)[0], signal.SIGKILL)

    lines = source.split("\n")
    bug = next(i for i, text in enumerate(lines) if text == "    loss.backward()" and lines[i - 1] == text)
    _change_line(client, uri, 2, lines, bug, None)
    published = await wait_for_publish(client, uri, version=2, timeout=WAIT)
    assert _published(published) == _full_check("\n".join(lines))
    await wait_for_log(client, "stopped unexpectedly")
    assert len(set(_starts(client))) == 2


async def test_a_runaway_analysis_in_a_checker_process_is_killed_at_the_time_box(
    runaway_client: LanguageClient, workdir
):
    """Each analysis takes 12 s here; the server stops it at the time box (5 s) + 5 s by killing the
    process, keeps answering, and the next version gets a new process."""
    source = padded_big_file(ISOLATE_CHARS + 10_000)
    await initialize(runaway_client, debounce_ms=0)
    uri = open_document(runaway_client, workdir / "big.py", source)
    await wait_for_log(runaway_client, "started a checker process")
    stopped = await wait_for_log(runaway_client, "stopped the analysis of", timeout=WAIT)
    assert stopped.type == types.MessageType.Warning and "big.py" in stopped.message and "ran over" in stopped.message
    await _gone(_starts(runaway_client)[0])
    started = time.monotonic()
    position = types.Position(line=3, character=4)
    hover = await runaway_client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=position)
    )
    assert hover is None and time.monotonic() - started < 5, "no retry of a text whose analysis was stopped"
    lines = source.split("\n")
    _change_line(runaway_client, uri, 2, lines, 0, "import torch  # edited")
    await _wait_for(lambda: len(_starts(runaway_client)) == 2, "a new checker process for the next version")
    crashes = [m for m in runaway_client.log_messages if "stopped unexpectedly" in m.message]
    assert not crashes, "a kill of ours is no crash"


async def test_closing_a_big_document_ends_its_checker_process(client: LanguageClient, workdir):
    source = padded_big_file(ISOLATE_CHARS + 10_000)
    await initialize(client, debounce_ms=0)
    uri = open_document(client, workdir / "big.py", source)
    await wait_for_publish(client, uri, version=1, timeout=WAIT)
    pid = _starts(client)[0]
    mark = len(client.published)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await wait_for_publish(client, uri, after=mark)
    await _gone(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is still a running process (a zombie awaiting its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def _wait_for(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def _gone(pid: int, timeout: float = WAIT) -> None:
    """Wait for the process to end (a kill is delivered asynchronously)."""
    deadline = time.monotonic() + timeout
    while _alive(pid):
        assert time.monotonic() < deadline, f"the checker process {pid} of a closed document is still running"
        await asyncio.sleep(0.02)
