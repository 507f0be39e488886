"""Broken frames and params over real pipes: the server answers afterwards and still exits on ``exit``.

A client with a bug (or a proxy that cuts a message) must cost the user one
message, not the language server for the rest of the session.
"""

from __future__ import annotations

import json

import pytest
from raw_lsp import RawServer, frame

SOURCE = "import torch\n\nx = torch.ones(2, requires_grad=True)\n"


@pytest.fixture
def server():
    process = RawServer(GRAPHLIFE_LSP_TEST_STATE="1")
    try:
        assert "result" in process.initialize()
        yield process
    finally:
        process.kill()


def answers(server: RawServer) -> bool:
    """The server still answers a request with a result."""
    return server.request("$/graphlife/testState", {}, timeout=30)["result"]["futures"] >= 0


def broken_then_valid(server: RawServer, broken: bytes) -> dict:
    """Send ``broken`` and a valid request glued after it; the valid request's response."""
    message = server.request_message("$/graphlife/testState", {})
    server.send_raw(broken + frame(message))
    return server.response(message["id"])


def test_content_length_too_short_costs_only_that_message(server: RawServer) -> None:
    body = json.dumps(server.request_message("shutdown")).encode()
    response = broken_then_valid(server, b"Content-Length: %d\r\n\r\n" % (len(body) - 7) + body)
    assert "result" in response
    assert answers(server)
    assert server.stop() == 0


def test_content_length_too_long_still_finds_the_next_message(server: RawServer) -> None:
    bad = server.request_message("$/graphlife/testState", {})
    body = json.dumps(bad).encode()
    response = broken_then_valid(server, b"Content-Length: %d\r\n\r\n" % (len(body) + 9) + body)
    assert "result" in response
    assert "result" in server.response(bad["id"])  # the message itself was whole: it is answered too
    assert server.stop() == 0


def test_a_message_without_headers_and_stray_bytes_are_skipped(server: RawServer) -> None:
    headerless = json.dumps(server.request_message("shutdown")).encode()
    assert "result" in broken_then_valid(server, headerless + b"\r\n\x00\xffgarbage\r\n\r\n")
    assert "result" in broken_then_valid(server, b"Content-Length: 12\r\n")  # its blank line missing
    assert "result" in broken_then_valid(server, b"Content-Length: x\r\n\r\n")
    assert "result" in broken_then_valid(server, b"Content-Length: 5\r\n\r\nnot json at all\r\n")
    assert server.stop() == 0


def test_a_huge_content_length_is_refused_not_read(server: RawServer) -> None:
    response = broken_then_valid(server, b"Content-Length: 99999999999999\r\n\r\n{\"jsonrpc\": \"2.0\"}")
    assert "result" in response
    assert server.process.poll() is None
    assert b"over the limit" in server.stderr
    assert server.stop() == 0


def test_params_that_do_not_deserialize_get_invalid_params(server: RawServer) -> None:
    response = server.request("textDocument/hover", {"textDocument": 5, "position": "here"})
    assert response["error"]["code"] == -32602
    response = server.request("textDocument/codeAction", [1, 2, 3])
    assert response["error"]["code"] == -32602
    not_jsonrpc = {"id": 777, "method": "textDocument/hover", "params": {}}
    server.send(not_jsonrpc)
    assert server.response(777)["error"]["code"] == -32600
    assert answers(server)
    assert server.stop() == 0


def test_incremental_edits_follow_lsp_line_breaks(server: RawServer) -> None:
    """Form feed, U+2028, U+0085 and a vertical tab are no line breaks in LSP; a character
    past a CRLF line's end means the line's end, before CR LF."""
    uri = "file:///tmp/graphlife-odd-breaks.py"
    text = "a = 1\x0c\n# \u2028 \x85 \x0b\r\nb = 2\r\nc = 3\n"
    server.open(uri, text)
    edits = [
        ({"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}}, "B"),
        ({"start": {"line": 1, "character": 99}, "end": {"line": 1, "character": 99}}, "  # end"),
        ({"start": {"line": 3, "character": 5}, "end": {"line": 3, "character": 5}}, "!"),
        ({"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}}, "d = 4\n"),
    ]
    for version, (rng, new_text) in enumerate(edits, start=2):
        server.change(uri, version, rng, new_text)
    held = server.request("$/graphlife/testState", {"uri": uri})["result"]["text"]
    assert held == "a = 1\x0c\n# \u2028 \x85 \x0b  # end\r\nB = 2\r\nc = 3!\nd = 4\n"
    assert server.stop() == 0


def test_finished_futures_are_not_kept(server: RawServer) -> None:
    uri = "file:///tmp/graphlife-burst.py"
    server.open(uri, SOURCE)
    for version in range(2, 302):
        server.change(uri, version, {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "#\n")
        server.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    state = server.request("$/graphlife/testState", {"uri": uri})["result"]
    assert state["text"] == "#\n" * 300 + SOURCE
    assert state["futures"] <= 2, f"{state['futures']} futures kept after 600 messages"
    assert server.stop() == 0


def test_a_client_response_that_does_not_deserialize_fails_the_wait_at_once() -> None:
    """The server asks for the settings; a client answers with an error that is not an error
    object. The server's wait ends with that error (not after its time-out) and it goes on."""
    server = RawServer(GRAPHLIFE_LSP_TEST_STATE="1")
    server.configuration_reply = lambda request: {"jsonrpc": "2.0", "id": request["id"], "error": "not an object"}
    try:
        server.initialize(configuration=True)

        def logged(text: str) -> bool:
            logs = [n["params"]["message"] for n in server.notifications if n["method"] == "window/logMessage"]
            return any(text in message for message in logs)

        server.wait(lambda: logged("language server ready"), 30, "the server to be ready")
        assert logged("the client's response could not be read")
        assert answers(server)
        assert server.stop() == 0
    finally:
        server.kill()
