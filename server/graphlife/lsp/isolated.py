"""A big document's checker process: ``python -m graphlife.lsp.isolated``.

Why a separate process for files over :data:`graphlife.lsp.linting.ISOLATE_CHARS`:

- **The event loop.** ``ast.parse`` and ``compile`` hold the GIL for a whole
  block; the first parse of a 50,000-line file would freeze the server (hover,
  typing in other files, cancellation) for seconds, whichever thread ran it.
- **The time box.** A thread cannot be stopped reliably inside C code; a process
  can always be killed. A runaway analysis is killed when it overruns the
  checker's time box plus a grace, and the next version starts a new process.
- **Memory.** The trees and abstract states of a huge file live in this
  process's heap, not the server's: closing the document ends the process and
  the operating system gets all of it back.
- **Protection.** A crash here (a segfault in the parser, the out-of-memory
  killer) ends this process only; the server logs it and starts another.

Why it lives as long as the document: it keeps the document's
:class:`graphlife.incremental.IncrementalChecker` between versions, so that after
an edit only the blocks that changed are parsed again and only the units whose
code changed run again (a tenth of a second on 20,000 lines, where a full check
costs seconds). Each request carries the whole new text (half a megabyte is a
millisecond on a pipe); the checker's block parser finds what changed, so
nothing depends on the editor's edits arriving in order.

The check follows the document's imports into the user's other modules, as the
server's own checks do: each request carries the document's path and the open
documents' texts (they win over the disk); the process reads the rest of the
project from disk through a parse cache of its own, and answers with the files it
read and the lines of those its findings name (the server converts positions
there and re-analyzes the document when one of them changes).

The protocol, one request at a time: the server writes a frame (8-byte length,
then a pickle of ``{"source", "config", "time_budget", "path", "buffers",
"files_appeared"}``) to stdin and reads one frame back from stdout:
``{"result": CheckResult, "units": statistics, "dependencies", "other_lines"}``, or
``{"error": traceback}`` when the checker raised (the process keeps serving; the
checker starts over on the next version). End of stdin means the server is done
with the document. Only the server writes to this process's stdin, so
unpickling is safe here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import select
import signal
import struct
import sys
import time
import traceback
from typing import Any, BinaryIO

from graphlife.checker import check_source
from graphlife.incremental import IncrementalChecker
from graphlife.lsp.memory import mostly_new, release_memory
from graphlife.lsp.project import other_lines, unreadable_notes
from graphlife.project.provider import ProjectModules
from graphlife.project.sources import SourceCache

#: Frames on the pipes: an 8-byte big-endian length, then a pickle of that length.
HEADER = struct.Struct(">Q")

#: Test knob shared with the in-process checker: an artificial delay (ms) in each analysis.
TEST_DELAY_VARIABLE = "GRAPHLIFE_LSP_TEST_DELAY_MS"

#: Seconds without a request after a cold analysis before the heap is trimmed (trimming a big
#: heap takes about as long as an incremental analysis: not while the user is typing).
IDLE_TRIM_SECONDS = 1.0


def encode(message: Any) -> bytes:
    """One frame holding ``message``."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def decode_length(header: bytes) -> int:
    return HEADER.unpack(header)[0]


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """``size`` bytes from an unbuffered stream (a pipe gives them in pieces); ``None`` at its end."""
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def read_message(stream: BinaryIO) -> Any | None:
    """The next frame's message from an unbuffered stream; ``None`` at the end of the stream."""
    header = _read_exactly(stream, HEADER.size)
    if header is None:
        return None
    body = _read_exactly(stream, decode_length(header))
    if body is None:
        return None
    return pickle.loads(body)  # noqa: S301 - only the server writes to this pipe


def _quiet_for(stream: BinaryIO, seconds: float) -> bool:
    """Whether no request arrives within ``seconds`` (where pipes cannot be polled: yes)."""
    try:
        return not select.select([stream], [], [], seconds)[0]
    except (OSError, ValueError):
        return True


def answer(checker: IncrementalChecker, request: dict[str, Any], sources: SourceCache | None = None) -> dict[str, Any]:
    """Check one version of the document with the checker that saw the previous ones."""
    delay = float(os.environ.get(TEST_DELAY_VARIABLE, "0") or 0) / 1000.0
    if delay:
        time.sleep(delay)
    config = request["config"]
    path = request.get("path")
    try:
        modules = ProjectModules(path, config.src if config is not None else (),
                                 buffers=request.get("buffers") or {}, sources=sources)
        result = checker.check(request["source"], config, time_budget=request["time_budget"], modules=modules,
                               path=path)
    except Exception:  # noqa: BLE001 - reported to the server, which logs it; the process keeps serving
        return {"error": traceback.format_exc(limit=12)}
    result.notes.extend(unreadable_notes(modules))
    return {"result": result, "units": checker.statistics, "dependencies": modules.dependencies(),
            "other_lines": other_lines(result, modules)}


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer requests (``requests`` unbuffered, so that it can be polled) until the server closes the pipe."""
    checker = IncrementalChecker()
    sources = SourceCache()  # the project's modules, parsed once while unchanged
    files_appeared = 0
    trim = False  # a cold analysis left garbage worth giving back
    while True:
        if trim and _quiet_for(requests, IDLE_TRIM_SECONDS):
            release_memory()
            trim = False
        request = read_message(requests)
        if request is None:
            return
        if request.get("files_appeared", 0) != files_appeared:
            files_appeared = request.get("files_appeared", 0)
            checker.invalidate_project()
        reply = answer(checker, request, sources)
        replies.write(encode(reply))
        replies.flush()
        trim = trim or ("units" in reply and mostly_new(reply["units"]))


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when the server dies, however it dies (no orphan keeps
    a core busy with a runaway analysis); a server gone already means there is nothing to do."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the end of stdin still stops it when idle
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent and os.getppid() != parent:
        sys.exit(0)


def _warm_up() -> None:
    """Load the rules and the engine's tables before the first request arrives."""
    check_source("x = 1\n", None)


def main() -> None:
    _die_with(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    # The replies get their own copy of stdout; file descriptor 1 becomes stderr, so that a
    # stray print() anywhere in the engine cannot corrupt a frame.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _warm_up()
    with open(0, "rb", buffering=0, closefd=False) as requests:
        serve(requests, replies)


if __name__ == "__main__":
    main()
