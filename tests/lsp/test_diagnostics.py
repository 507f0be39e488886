"""Diagnostics as the editor sees them: content, versions, positions, debounce, never stale."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import (
    initialize,
    open_document,
    replace_all,
    utf16_len,
    wait_for_log,
    wait_for_publish,
)
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import (
    CLEAN,
    DOUBLE_BACKWARD,
    DOUBLE_BACKWARD_LINE,
    EMOJI,
    EMOJI_LINE,
    EMOJI_PREFIX,
    MANUAL_UPDATE,
    MANUAL_UPDATE_LINE,
    big_file,
)

pytestmark = pytest.mark.asyncio


def _codes(params: types.PublishDiagnosticsParams) -> list[str]:
    return [d.code for d in params.diagnostics]


async def test_double_backward_is_reported_with_everything_vscode_shows(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)

    gl101 = [d for d in published.diagnostics if d.code == "GL101"]
    assert len(gl101) == 1, published.diagnostics
    diagnostic = gl101[0]
    assert diagnostic.source == "graphlife"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range.start == types.Position(line=DOUBLE_BACKWARD_LINE, character=0)
    assert diagnostic.range.end.line == DOUBLE_BACKWARD_LINE
    # No link to a site that does not exist: graphlife's metadata names no documentation site
    # (tests/lsp/test_rule_links.py: one that does gets its rule's section).
    assert diagnostic.code_description is None
    # where the graph was freed: the first backward, one line up
    assert diagnostic.related_information, "GL101 should point at the backward that freed the graph"
    assert any(r.location.uri == uri and r.location.range.start.line == 4 for r in diagnostic.related_information)


async def test_manual_update_of_a_leaf_is_reported(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "sgd.py", MANUAL_UPDATE)
    published = await wait_for_publish(client, uri, version=1)
    gl103 = [d for d in published.diagnostics if d.code == "GL103"]
    assert len(gl103) == 1, published.diagnostics
    assert gl103[0].range.start.line == MANUAL_UPDATE_LINE
    assert gl103[0].severity == types.DiagnosticSeverity.Error


async def test_edits_republish_with_the_new_version_and_moved_ranges(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    first = await wait_for_publish(client, uri, version=1)
    assert "GL101" in _codes(first)

    # VS Code sends an incremental change: insert two lines at the top.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
                    ),
                    text="# a comment\n# another\n",
                )
            ],
        )
    )
    second = await wait_for_publish(client, uri, version=2)
    gl101 = [d for d in second.diagnostics if d.code == "GL101"]
    assert [d.range.start.line for d in gl101] == [DOUBLE_BACKWARD_LINE + 2]

    # Fixing the bug clears the diagnostic.
    replace_all(client, uri, CLEAN, 3, "# a comment\n# another\n" + DOUBLE_BACKWARD)
    third = await wait_for_publish(client, uri, version=3)
    assert "GL101" not in _codes(third)


async def test_close_clears_the_diagnostics(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=1)
    mark = len(client.published)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    cleared = await wait_for_publish(client, uri, after=mark)
    assert list(cleared.diagnostics) == []


async def test_positions_are_utf16_code_units(client: LanguageClient, workdir):
    """Two emoji (two UTF-16 units each) before the call move its start by 4 units, not 2 characters."""
    await initialize(client)
    uri = open_document(client, workdir / "emoji.py", EMOJI)
    published = await wait_for_publish(client, uri, version=1)
    gl101 = [d for d in published.diagnostics if d.code == "GL101"]
    assert len(gl101) == 1, published.diagnostics
    start = gl101[0].range.start
    assert start.line == EMOJI_LINE
    assert start.character == utf16_len(EMOJI_PREFIX) == len(EMOJI_PREFIX) + 2
    assert gl101[0].range.end.character == start.character + len("loss.backward()")


async def test_typing_is_debounced_to_one_analysis_of_the_last_version(client: LanguageClient, workdir):
    await initialize(client, debounce_ms=400)
    uri = open_document(client, workdir / "train.py", CLEAN)
    await wait_for_publish(client, uri, version=1)
    mark = len(client.published)
    text = CLEAN
    for version in range(2, 7):  # five keystrokes, 50 ms apart: well inside the 400 ms debounce
        new_text = text + "#"
        replace_all(client, uri, new_text, version, text)
        text = new_text
        await asyncio.sleep(0.05)
    await wait_for_publish(client, uri, version=6, after=mark)
    await asyncio.sleep(0.6)
    versions = [p.version for _, p in client.published[mark:] if p.uri == uri]
    assert versions == [6]


async def test_a_slow_analysis_overtaken_by_an_edit_is_dropped(slow_client: LanguageClient, workdir):
    """Each analysis takes 1.5 s here; version 2 arrives while version 1 is being analyzed."""
    await initialize(slow_client, debounce_ms=0)
    uri = open_document(slow_client, workdir / "train.py", DOUBLE_BACKWARD)
    await asyncio.sleep(0.5)  # the analysis of version 1 is running now
    replace_all(slow_client, uri, CLEAN, 2, DOUBLE_BACKWARD)
    published = await wait_for_publish(slow_client, uri, version=2, timeout=30)
    assert "GL101" not in _codes(published)
    await asyncio.sleep(0.5)
    versions = [p.version for _, p in slow_client.published if p.uri == uri]
    assert versions == [2], "the result for version 1 must never be published"
    await wait_for_log(slow_client, "stopped a stale analysis")  # and it did not keep running


async def test_lint_on_change_off_waits_for_save(client: LanguageClient, workdir):
    await initialize(client, settings={"debounce": 0, "lintOnChange": False})
    uri = open_document(client, workdir / "train.py", CLEAN)
    await wait_for_publish(client, uri, version=1)
    mark = len(client.published)
    replace_all(client, uri, DOUBLE_BACKWARD, 2, CLEAN)
    await asyncio.sleep(0.8)
    assert [p for _, p in client.published[mark:] if p.uri == uri] == []
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    saved = await wait_for_publish(client, uri, version=2, after=mark)
    assert "GL101" in _codes(saved)


async def test_unneeded_retain_graph_is_faded_out(client: LanguageClient, workdir):
    source = (
        "import torch\n\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "loss = (w * w).sum()\n"
        "loss.backward(retain_graph=True)\n"
    )
    await initialize(client)
    uri = open_document(client, workdir / "retain.py", source)
    published = await wait_for_publish(client, uri, version=1)
    gl202 = [d for d in published.diagnostics if d.code == "GL202"]
    assert len(gl202) == 1, published.diagnostics
    assert list(gl202[0].tags) == [types.DiagnosticTag.Unnecessary]
    assert gl202[0].severity == types.DiagnosticSeverity.Information


async def test_a_large_file_is_analyzed_and_reported(client: LanguageClient, workdir):
    """~2,100 lines with 20 double backwards: every one reported (inside the server's time box)."""
    source = big_file(200)
    await initialize(client)
    uri = open_document(client, workdir / "big.py", source)
    published = await wait_for_publish(client, uri, version=1, timeout=60)
    assert _codes(published).count("GL101") == 20


async def test_positions_follow_a_negotiated_utf32_encoding(client: LanguageClient, workdir):
    """A client that offers only UTF-32 gets code-point columns: emoji count one each."""
    from lsp_helpers import vscode_capabilities

    caps = vscode_capabilities()
    caps.general.position_encodings = [types.PositionEncodingKind.Utf32]
    result = await initialize(client, capabilities=caps)
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf32
    uri = open_document(client, workdir / "emoji.py", EMOJI)
    published = await wait_for_publish(client, uri, version=1)
    gl101 = [d for d in published.diagnostics if d.code == "GL101"]
    assert [d.range.start.character for d in gl101] == [len(EMOJI_PREFIX)]


async def test_a_save_lets_the_analysis_of_the_same_text_finish(slow_client: LanguageClient, workdir):
    """Saving right after an edit must not throw away an analysis of exactly that text."""
    await initialize(slow_client, debounce_ms=0)
    uri = open_document(slow_client, workdir / "train.py", DOUBLE_BACKWARD)
    await asyncio.sleep(0.5)  # the (1.5 s) analysis of version 1 is running
    slow_client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    published = await wait_for_publish(slow_client, uri, version=1, timeout=30)
    assert "GL101" in _codes(published)
    assert not any("stopped a stale analysis" in m.message for m in slow_client.log_messages)
