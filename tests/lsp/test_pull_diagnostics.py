"""Pull diagnostics (`textDocument/diagnostic`) for the clients that ask for them, and push
for the others (a client given both would show every finding twice); `graphlife lsp --stdio`."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_lsp
from lsp_helpers import (
    SERVER_COMMAND,
    initialize,
    make_client,
    open_document,
    replace_all,
    server_env_with,
    stop,
    vscode_capabilities,
    wait_for_publish,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from sources import CLEAN, DOUBLE_BACKWARD

pytestmark = pytest.mark.asyncio


def pull_capable() -> types.ClientCapabilities:
    """VS Code's capabilities with pull diagnostics and their refresh, as VS Code 1.80+ has them."""
    caps = vscode_capabilities()
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=True,
                                                                       related_document_support=False)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


async def _pull(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert report.kind == "full"
    return list(report.items)


async def _wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_client_that_asks_for_pull_gets_pulled_diagnostics_and_no_pushes(client: LanguageClient, workdir):
    result = await initialize(client, init_settings={"diagnosticMode": "pull", "debounce": 50},
                              capabilities=pull_capable())
    assert result.capabilities.diagnostic_provider is not None
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    assert [d.code for d in await _pull(client, uri)] == ["GL101"]
    # the analysis finished, and asked the client to pull again (pytest-lsp counts the requests)
    await _wait_for(lambda: client.diagnostic_refresh_count > 0)
    seen = client.diagnostic_refresh_count
    replace_all(client, uri, CLEAN, 2, DOUBLE_BACKWARD)
    await _wait_for(lambda: client.diagnostic_refresh_count > seen)
    assert await _pull(client, uri) == []
    assert not [p for _, p in client.published if p.uri == uri]  # nothing pushed: no finding twice
    assert not [m for m in client.log_messages if "unknown setting" in m.message]


async def test_a_client_that_supports_both_keeps_push_by_default(client: LanguageClient, workdir):
    result = await initialize(client, capabilities=pull_capable())
    assert result.capabilities.diagnostic_provider is None
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.code for d in published.diagnostics] == ["GL101"]


async def test_a_client_without_push_gets_pull(client: LanguageClient, workdir):
    caps = pull_capable()
    caps.text_document.publish_diagnostics = None
    result = await initialize(client, capabilities=caps)
    assert result.capabilities.diagnostic_provider is not None
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    assert [d.code for d in await _pull(client, uri)] == ["GL101"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[*SERVER_COMMAND, "--stdio"], client_factory=make_client,
                                              server_env=server_env_with()))
async def stdio_client(lsp_client: LanguageClient):
    """The server started as vscode-languageclient and other clients start it: with `--stdio`."""
    yield
    await stop(lsp_client)


async def test_the_server_accepts_the_stdio_flag(stdio_client: LanguageClient, workdir):
    await initialize(stdio_client)
    uri = open_document(stdio_client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(stdio_client, uri, version=1)
    assert [d.code for d in published.diagnostics] == ["GL101"]


async def test_pulled_diagnostics_show_syntax_errors_too(client: LanguageClient, workdir):
    """What the editor shows does not depend on push or pull: a syntax error is a diagnostic."""
    await initialize(client, init_settings={"diagnosticMode": "pull", "debounce": 50}, capabilities=pull_capable())
    uri = open_document(client, workdir / "broken.py", DOUBLE_BACKWARD + "def f(:\n    pass\n")
    pulled = await _pull(client, uri)
    assert [d.code for d in pulled if d.code] == ["GL101"]
    assert [d.range.start.line for d in pulled if d.message.startswith("SyntaxError")] == [6]
