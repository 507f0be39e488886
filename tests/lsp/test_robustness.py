"""Bad input never takes the server down, and the server never imports torch or runs the user's code."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_helpers import (
    SERVER_COMMAND,
    TORCH_MARKER,
    initialize,
    open_document,
    replace_all,
    wait_for_log,
    wait_for_publish,
)
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import CLEAN, DOUBLE_BACKWARD

pytestmark = pytest.mark.asyncio


async def _still_serving(client: LanguageClient, folder) -> None:
    """The server still answers: a new document gets its diagnostics."""
    uri = open_document(client, folder / f"alive_{time.monotonic_ns()}.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1, timeout=30)
    assert "GL101" in [d.code for d in published.diagnostics]


async def test_capabilities_advertise_what_vscode_needs(client: LanguageClient):
    result = await initialize(client)
    caps = result.capabilities
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.text_document_sync.save
    assert caps.hover_provider
    assert caps.code_action_provider.resolve_provider is True
    assert "source.fixAll.graphlife" in caps.code_action_provider.code_action_kinds
    assert types.CodeActionKind.QuickFix in caps.code_action_provider.code_action_kinds
    selector = caps.notebook_document_sync.notebook_selector[0]
    assert selector.notebook == "jupyter-notebook"
    assert [c.language for c in selector.cells] == ["python"]
    assert result.server_info.name == "graphlife"


async def test_a_syntax_error_keeps_the_other_blocks_diagnostics(client: LanguageClient, workdir):
    source = DOUBLE_BACKWARD + "\n\ndef broken(:\n    pass\n"
    await initialize(client)
    uri = open_document(client, workdir / "broken.py", source)
    published = await wait_for_publish(client, uri, version=1)
    assert "GL101" in [d.code for d in published.diagnostics]
    message = await wait_for_log(client, "syntax error")
    assert "broken.py:9" in message.message


async def test_a_file_that_does_not_parse_at_all_is_logged(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "nonsense.py", "def (((\n" * 50)
    published = await wait_for_publish(client, uri, version=1)
    # Shown where the user looks (graphlife.showSyntaxErrors), and in the log.
    assert published.diagnostics
    assert all(d.message.startswith("SyntaxError") and d.severity == types.DiagnosticSeverity.Error
               for d in published.diagnostics)
    await wait_for_log(client, "syntax error")
    await _still_serving(client, workdir)


async def test_a_50000_line_file_neither_blocks_nor_kills_the_server(client: LanguageClient, workdir):
    """Other documents and requests are served while it is analyzed; it ends with diagnostics or a clear log line."""
    body = "".join(f"x_{i} = torch.ones(3) * {i}\n" for i in range(50_000))
    await initialize(client)
    uri = open_document(client, workdir / "huge.py", "import torch\n" + body)
    await asyncio.sleep(1.0)  # its analysis is running now
    started = time.monotonic()
    await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)
        )
    )
    assert time.monotonic() - started < 6, "hover must not wait for the whole analysis of a huge file"
    await _still_serving(client, workdir)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        published = [p for _, p in client.published if p.uri == uri]
        stopped = [m for m in client.log_messages if "stopped the analysis" in m.message and "huge.py" in m.message]
        if published or stopped:
            break
        await asyncio.sleep(0.1)
    if published:
        assert list(published[-1].diagnostics) == []
    else:
        assert stopped, "the analysis neither finished nor was stopped with a message"
        assert stopped[0].type == types.MessageType.Warning
    await _still_serving(client, workdir)


async def test_text_decoded_from_invalid_utf8_is_analyzed(client: LanguageClient, workdir):
    """Lone surrogates (what a bad decoder leaves for non-UTF-8 bytes) neither crash nor hide findings."""
    source = 'banner = "caf\udce9"\n' + DOUBLE_BACKWARD
    await initialize(client)
    uri = open_document(client, workdir / "latin1.py", source)
    published = await wait_for_publish(client, uri, version=1)
    assert "GL101" in [d.code for d in published.diagnostics]
    await wait_for_log(client, "not valid UTF-8")


async def test_a_document_closed_mid_analysis_gets_no_late_diagnostics(slow_client: LanguageClient, workdir):
    await initialize(slow_client, debounce_ms=0)
    uri = open_document(slow_client, workdir / "train.py", DOUBLE_BACKWARD)
    await asyncio.sleep(0.4)  # the (1.5 s) analysis is running
    slow_client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await asyncio.sleep(2.5)
    for_uri = [p for _, p in slow_client.published if p.uri == uri]
    assert for_uri, "closing publishes an empty list to clear the document"
    assert all(list(p.diagnostics) == [] for p in for_uri), "nothing may be published for a closed document"
    await wait_for_log(slow_client, "the document was closed")
    # and the server still works (requests for the closed document get empty answers)
    hover = await slow_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=3)
        )
    )
    assert hover is None
    await _still_serving(slow_client, workdir)


async def test_a_change_for_an_unknown_document_is_survived(client: LanguageClient, workdir):
    await initialize(client)
    replace_all(client, (workdir / "never_opened.py").as_uri(), "x = 1\n", 2, "")
    await _still_serving(client, workdir)
    assert client.messages == []


async def test_never_imports_torch_nor_runs_user_code(no_torch_client: LanguageClient, workdir):
    """torch on the server's path is booby-trapped; the user's module would write a file if run."""
    ran = workdir / "user-code-ran"
    source = (
        "import torch\n"
        f"open({str(ran)!r}, 'w').write('ran')\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "loss = (w * w).sum()\n"
        "loss.backward()\n"
        "loss.backward()\n"
        "if __name__ == '__main__':\n"
        f"    open({str(ran)!r}, 'a').write('main')\n"
    )
    TORCH_MARKER.unlink(missing_ok=True)
    await initialize(no_torch_client)
    uri = open_document(no_torch_client, workdir / "train.py", source)
    published = await wait_for_publish(no_torch_client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    await no_torch_client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start)
    )
    actions = await no_torch_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    for action in actions or []:
        await no_torch_client.code_action_resolve_async(action)
    assert not TORCH_MARKER.exists(), "the language server imported torch"
    assert not ran.exists(), "the language server ran the user's code"


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def _read_response(stream, request_id) -> dict:
    while True:
        message = _read_message(stream)
        if message.get("id") == request_id and "method" not in message:
            return message


async def test_raw_invalid_utf8_bytes_on_the_wire_are_survived():
    """A message body that is not UTF-8 is logged and skipped; the next request is answered."""
    process = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                      "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
        process.stdin.flush()
        assert "capabilities" in _read_response(process.stdout, 1)["result"]
        bad = b'{"jsonrpc": "2.0", "method": "initialized", "params": {"x": "\xff\xfe"}}'
        process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(bad) + bad)
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        process.stdin.flush()
        assert _read_response(process.stdout, 2).get("result", "missing") is None
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=5)
        process.stdin.close()
        process.stdout.close()


async def test_tcp_mode_for_debugging_the_server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        with connection, connection.makefile("rwb") as stream:
            stream.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
            stream.flush()
            assert _read_response(stream, 1)["result"]["serverInfo"]["name"] == "graphlife"
    finally:
        process.kill()
        process.wait(timeout=5)


async def test_the_lsp_package_does_not_import_torch():
    """Importing the whole server stack leaves torch unimported (checked in a fresh interpreter)."""
    code = (
        "import sys, graphlife.lsp.server, graphlife.lsp.hover, graphlife.lsp.code_actions, graphlife.checker\n"
        "from graphlife.checker import check_source\n"
        "check_source(open(sys.argv[1]).read())\n"
        "print('torch' in sys.modules)\n"
    )
    fixture = sorted((Path(__file__).resolve().parents[1] / "fixtures").glob("GL1*/bad_*.py"))[0]
    out = subprocess.run([sys.executable, "-c", code, str(fixture)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


async def test_clean_file_gets_an_empty_list(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "clean.py", CLEAN)
    published = await wait_for_publish(client, uri, version=1)
    assert list(published.diagnostics) == []
