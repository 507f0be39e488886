"""The JSON-RPC layer of the server: every request answered, nothing kept after it is done.

Why a subclass of pygls' protocol, and its own stdio loop:

- A request whose params do not deserialize got no answer at all from pygls
  (the error was only logged), and the client waited for ever. JSON-RPC asks for
  an ``InvalidParams`` error (-32602); a request that is not JSON-RPC at all gets
  ``InvalidRequest`` (-32600).
- pygls keeps the future of every notification it runs (``didChange``, ...) and
  of every step of its own generator handlers in its table of requests in
  flight, and never removes them: under a long burst the process grows without
  end. Here a future leaves the table when it is done.
- pygls builds its ``Workspace`` itself; its documents split lines unlike LSP
  (see :mod:`.text_sync`), so the workspace is made line-exact after ``initialize``.
- Framing errors are handled by :mod:`.framing` (pygls' loop never recovered).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol, lsp_method

from graphlife.lsp.framing import FrameReader, decode_body
from graphlife.lsp.text_sync import line_exact

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger("graphlife.lsp")


#: With this environment variable set to 1 (tests only), the server answers :data:`TEST_STATE`.
TEST_STATE_ENV = "GRAPHLIFE_LSP_TEST_STATE"
#: A request for what tests cannot see from outside: a document's text as the server
#: holds it, and how many futures the protocol still keeps.
TEST_STATE = "$/graphlife/testState"


class GraphlifeProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, answering every request and forgetting finished futures."""

    def _register_builtin_features(self) -> None:
        super()._register_builtin_features()
        if os.environ.get(TEST_STATE_ENV) == "1":
            self.fm.add_builtin_feature(TEST_STATE, self.test_state)

    def test_state(self, params: Any) -> dict[str, Any]:
        """The text of ``params["uri"]`` as the server holds it, and the futures still kept."""
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        text = self.workspace.get_text_document(uri).source if uri else None
        return {"text": text, "futures": len(self._request_futures)}

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], Any],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        def forget_then_callback(future: Future[Any]) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, forget_then_callback, args, kwargs)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        line_exact(self._workspace)
        return result

    def receive(self, data: Any) -> None:
        """Handle one decoded JSON value from the client; a request always gets an answer."""
        if not isinstance(data, dict):
            self.refuse(None, JsonRpcInvalidRequest("a message must be a JSON object"))
            return
        is_request = "method" in data and "id" in data
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            why = str(exc.__cause__)[:300]
            if is_request:
                logger.error("could not read the params of %r", data.get("method"))
                self.refuse(data["id"], JsonRpcInvalidParams(f"invalid params for {data.get('method')!r}: {why}"))
            elif "id" in data and "method" not in data:
                # A response the client sent to one of the server's requests: whoever waits
                # for it gets an error now, instead of waiting for an answer that will not come.
                logger.error("could not read the client's response to request %r", data["id"])
                message = f"the client's response could not be read: {why}"
                self._handle_response(data["id"], None, ResponseError(code=JsonRpcInvalidParams.CODE, message=message))
            else:
                logger.error("could not read the params of %r", data.get("method"))
            return
        if isinstance(message, dict):  # no "jsonrpc" member: not JSON-RPC 2.0
            if is_request:
                self.refuse(data["id"], JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            else:
                logger.error("ignored a message that is not JSON-RPC 2.0")
            return
        try:
            self.handle_message(message)
        except Exception:  # a bug in one message's handling must not end the loop
            logger.exception("could not handle %r", data.get("method"))

    def refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer request ``msg_id`` with ``error`` (an id that is not a number or string is null)."""
        if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
            msg_id = None
        logger.error("answered request %r with an error: %s", msg_id, error.message)
        self._send_response(msg_id, None, error.to_response_error())


def _reading_thread(stdin: BinaryIO, loop: asyncio.AbstractEventLoop) -> Callable[[int], asyncio.Future[bytes]]:
    """A function that reads one chunk from ``stdin`` in a daemon thread (a blocked read
    never keeps the process alive after ``exit``), one read at a time."""
    requests: list[tuple[int, asyncio.Future[bytes]]] = []
    wake = threading.Condition()

    def serve() -> None:
        while True:
            with wake:
                while not requests:
                    wake.wait()
                size, future = requests.pop(0)
            try:
                data = stdin.read1(size) if hasattr(stdin, "read1") else stdin.read(size)
            except (OSError, ValueError):
                data = b""
            loop.call_soon_threadsafe(_resolve, future, data)

    threading.Thread(target=serve, name="graphlife-lsp-stdin", daemon=True).start()

    def read_chunk(size: int) -> asyncio.Future[bytes]:
        future: asyncio.Future[bytes] = loop.create_future()
        with wake:
            requests.append((size, future))
            wake.notify()
        return future

    return read_chunk


def _resolve(future: asyncio.Future[bytes], data: bytes) -> None:
    if not future.done():
        future.set_result(data)


async def _serve(server: LanguageServer, stdin: BinaryIO, stop: threading.Event) -> None:
    protocol = server.protocol
    assert isinstance(protocol, GraphlifeProtocol)

    def report(problem: str) -> None:
        logger.error("LSP input: %s", problem)

    reader = FrameReader(_reading_thread(stdin, asyncio.get_running_loop()), report)
    while not stop.is_set():
        body = await reader.next_body()
        if body is None:
            break
        decoded = decode_body(body)
        if decoded is None:
            report(f"a message body of {len(body)} bytes is not JSON; looking for the next message")
            reader.give_back(body)
            continue
        data, rest = decoded
        if rest:
            report(f"{len(rest)} bytes after a message's JSON (a wrong Content-Length); reading them again")
            reader.give_back(rest)
        protocol.receive(data)


def serve_stdio(server: LanguageServer) -> None:
    """Serve LSP on stdin/stdout until ``exit`` or the end of stdin (``LanguageServer.start_io``
    with :class:`GraphlifeProtocol`'s recovering reader)."""
    stop = threading.Event()
    server._stop_event = stop  # pygls' shutdown sets it
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, sys.stdin.buffer, stop))
    except BrokenPipeError:
        logger.error("the connection to the client is lost; the server stops")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
