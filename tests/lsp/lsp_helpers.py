"""Helpers for the language-server tests: the real server process over stdio, driven like VS Code.

Every test starts ``python -m graphlife lsp`` (the command the extension runs)
and talks to it with VS Code's client capabilities plus the notebook
synchronization capability current VS Code has. The client records every
``publishDiagnostics`` in order (``client.published``) so tests can check
versions and that nothing stale arrives, not only the last state.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER_COMMAND = [sys.executable, "-m", "graphlife", "lsp"]

#: A `torch` that must never be imported by the server: importing it leaves a marker file.
FAKE_TORCH_DIR = Path(tempfile.mkdtemp(prefix="graphlife-fake-torch-"))
TORCH_MARKER = FAKE_TORCH_DIR / "torch-was-imported"
(FAKE_TORCH_DIR / "torch").mkdir(exist_ok=True)
(FAKE_TORCH_DIR / "torch" / "__init__.py").write_text(
    f"open({str(TORCH_MARKER)!r}, 'w').write('imported')\nraise ImportError('the language server imported torch')\n"
)


def _record_publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append((time.monotonic(), params))


def _register_capability(client: LanguageClient, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)


def make_client() -> LanguageClient:
    """pytest-lsp's test client, recording every diagnostics notification in order."""
    client = LanguageClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_publish
    features[types.CLIENT_REGISTER_CAPABILITY] = _register_capability
    register_lsp_features(client, features)
    client.published = []
    client.registrations = []
    return client


def server_env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRAPHLIFE_LSP_TEST_DELAY_MS", None)
    env.update(extra)
    return env


def vscode_capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities as pytest-lsp records them, plus notebook sync (VS Code >= 1.74 has it)."""
    caps = client_capabilities("visual-studio-code")
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(
            dynamic_registration=True, execution_summary_support=True
        )
    )
    return caps


async def stop(client: LanguageClient) -> None:
    with contextlib.suppress(Exception):  # the test already reported what matters
        await asyncio.wait_for(client.shutdown_session(), 15)


async def initialize(
    client: LanguageClient,
    *,
    init_settings: dict | None = None,
    settings: dict | None = None,
    root: Path | None = None,
    capabilities: types.ClientCapabilities | None = None,
    debounce_ms: int | None = 50,
    rule_command: str | None = None,
    turn_off_command: str | None = None,
    locale: str | None = None,
) -> types.InitializeResult:
    """``initialize`` + ``initialized`` and wait until the server said it is ready.

    ``init_settings`` go in ``initializationOptions.settings``; ``settings`` are what
    the client answers to ``workspace/configuration`` for the ``graphlife`` section.
    A short debounce keeps the suite fast unless a test is about the debounce.
    ``rule_command``, ``turn_off_command``: the client's commands for a rule page and for
    adding a code to ``graphlife.ignore`` (VS Code's client names both). ``locale``: the
    client's display language, as VS Code sends it (``zh-cn``).
    """
    if settings is None:
        settings = {} if debounce_ms is None else {"debounce": debounce_ms}
    client.set_configuration({"graphlife": settings})
    options: dict | None = {"settings": init_settings} if init_settings is not None else None
    if rule_command is not None:
        options = {**(options or {}), "ruleDocumentationCommand": rule_command}
    if turn_off_command is not None:
        options = {**(options or {}), "turnOffRuleCommand": turn_off_command}
    params = types.InitializeParams(
        capabilities=capabilities or vscode_capabilities(),
        initialization_options=options,
        root_uri=root.as_uri() if root else None,
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if root else None,
        locale=locale,
    )
    result = await client.initialize_session(params)
    await wait_for_log(client, "language server ready")
    return result


async def wait_for_log(client: LanguageClient, text: str, timeout: float = 20.0) -> types.LogMessageParams:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for message in client.log_messages:
            if text in message.message:
                return message
        await asyncio.sleep(0.02)
    raise AssertionError(f"no log message containing {text!r}; got: {[m.message for m in client.log_messages]}")


async def wait_for_publish(
    client: LanguageClient,
    uri: str,
    *,
    version: int | None = None,
    after: int = 0,
    timeout: float = 20.0,
) -> types.PublishDiagnosticsParams:
    """The first diagnostics notification for ``uri`` (with ``version``) among ``client.published[after:]``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _, params in client.published[after:]:
            if params.uri == uri and (version is None or params.version == version):
                return params
        await asyncio.sleep(0.01)
    seen = [(p.uri, p.version, len(p.diagnostics)) for _, p in client.published]
    raise AssertionError(f"no diagnostics for {uri} version {version}; published: {seen}")


def open_document(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    """didOpen of a file (written to disk too, so pyproject.toml lookup sees where it lives)."""
    if text is None:
        text = path.read_text(encoding="utf-8")
    elif not path.exists():
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int, old_text: str) -> None:
    """An incremental didChange replacing the whole old text (VS Code sends ranges, not full text)."""
    lines = old_text.split("\n")
    end = types.Position(line=len(lines) - 1, character=utf16_len(lines[-1]))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line=0, character=0), end=end), text=text
                )
            ],
        )
    )


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def utf16_to_index(line: str, units: int) -> int:
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions) the way an editor does: from the last to the first."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        return before + utf16_to_index(line, position.character)

    ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
    for edit in ordered:
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def edits_for_uri(edit: types.WorkspaceEdit | None, uri: str) -> list[types.TextEdit]:
    """The text edits a workspace edit makes to one document (``documentChanges`` or ``changes``)."""
    if edit is None:
        return []
    out: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
            out.extend(change.edits)
    if edit.changes:
        out.extend(edit.changes.get(uri, []))
    return out


async def wait_for_diagnostics(
    client: LanguageClient,
    uri: str,
    wanted,
    *,
    after: int = 0,
    timeout: float = 20.0,
) -> types.PublishDiagnosticsParams:
    """The first diagnostics notification for ``uri`` among ``client.published[after:]`` whose
    diagnostics satisfy ``wanted`` (a predicate on the list)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _, params in client.published[after:]:
            if params.uri == uri and wanted(params.diagnostics):
                return params
        await asyncio.sleep(0.01)
    seen = [(round(t - deadline + timeout, 2), p.uri.rsplit("/", 1)[-1], p.version, [d.code for d in p.diagnostics])
            for t, p in client.published[after:]]
    raise AssertionError(f"no diagnostics for {uri} as wanted; published since (seconds after the wait began): {seen}")
