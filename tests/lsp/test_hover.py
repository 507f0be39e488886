"""Hover: the rule's explanation with torch's real message, and the graph-lifetime story."""

from __future__ import annotations

import re

import pytest
from lsp_helpers import initialize, open_document, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE

pytestmark = pytest.mark.asyncio


async def _hover(client, uri, line, character):
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )


async def test_hover_on_a_finding_explains_it_with_the_torch_message(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")

    hover = await _hover(client, uri, DOUBLE_BACKWARD_LINE, 7)  # on `backward`
    assert hover is not None
    assert hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert "Trying to backward through the graph a second time" in text
    assert diagnostic.message in text
    assert "GL101" in text
    assert hover.range == diagnostic.range


async def test_hover_on_a_tensor_tells_its_graph_story(client: LanguageClient, workdir):
    """On `loss` at the first backward: built at line 4 (from `w`, which requires grad), freed here."""
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=1)
    hover = await _hover(client, uri, 4, 1)  # `loss` in the first `loss.backward()`
    assert hover is not None, "the graph-lifetime story of `loss` should show on hover"
    text = hover.contents.value
    assert "line 4" in text, text  # where its graph was built
    assert re.search(r"backward at lines? 5\b", text), text  # the backward that consumes it


async def test_hover_on_a_backward_call_tells_what_it_frees(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=1)
    hover = await _hover(client, uri, 4, 6)  # `.backward(` of the first backward
    assert hover is not None
    assert "line 4" in hover.contents.value


async def test_no_hover_where_there_is_nothing_to_say(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=1)
    assert await _hover(client, uri, 1, 0) is None  # the blank line
    assert await _hover(client, uri, 0, 2) is None  # `import torch`
