"""Hover: the rule's explanation with torch's real message, and the graph-lifetime story."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from lsp_helpers import initialize, open_document, replace_all, wait_for_publish
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


async def test_the_hover_is_short_and_links_to_the_rule_page(client: LanguageClient, workdir):
    """The message once (the editor shows the diagnostic's in the same hover: not again), what
    torch will do, the rule's documentation behind a link (the client's command), none of the
    manual and nothing written for test authors."""
    await initialize(client, init_settings={}, rule_command="graphlife.showRuleDocumentation")
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    text = (await _hover(client, uri, DOUBLE_BACKWARD_LINE, 7)).contents.value
    assert diagnostic.message not in text, text
    assert diagnostic.related_information[0].message not in text, text
    assert "**torch:** `RuntimeError: Trying to backward through the graph a second time" in text
    assert "command:graphlife.showRuleDocumentation?%5B%22GL101%22%5D" in text
    for manual in ("## What it does", "## Example", "Fixture line", "github.com"):
        assert manual not in text, text
    assert "· error" in text  # the squiggle's severity
    assert len(text.splitlines()) < 25, text


async def test_the_hover_says_the_severity_the_squiggle_has(client: LanguageClient, workdir):
    await initialize(client, settings={"debounce": 50, "severity": {"GL101": "information"}})
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert published.diagnostics[0].severity == types.DiagnosticSeverity.Information
    text = (await _hover(client, uri, DOUBLE_BACKWARD_LINE, 7)).contents.value
    assert "· information" in text and "error" not in text.split("\n")[0], text


async def test_without_a_client_command_the_link_names_the_cli(client: LanguageClient, workdir):
    """No web address unless graphlife's metadata names one (the package here names none)."""
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert all(d.code_description is None for d in published.diagnostics)
    text = (await _hover(client, uri, DOUBLE_BACKWARD_LINE, 7)).contents.value
    assert "`graphlife rules GL101`" in text and "http" not in text, text


async def test_the_rule_page_comes_from_the_server(client: LanguageClient, workdir):
    await initialize(client)
    page = await client.protocol.send_request_async("graphlife/ruleDocumentation", {"code": "GL102"})
    markdown = page["markdown"] if isinstance(page, dict) else page.markdown
    assert markdown.startswith("# GL102 inplace-modifies-saved-tensor")
    assert "## What it does" in markdown and "Fixture line" not in markdown
    assert "output 0 of Sigmoid," in markdown  # as torch 2.13 prints it
    assert await client.protocol.send_request_async("graphlife/ruleDocumentation", {"code": "GL999"}) is None


async def test_enable_false_switches_hover_and_code_actions_off(client: LanguageClient, workdir):
    await initialize(client, settings={"debounce": 50, "enable": False})
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert not published.diagnostics
    assert await _hover(client, uri, DOUBLE_BACKWARD_LINE, 7) is None
    assert await _hover(client, uri, 4, 1) is None  # a tensor's story too
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=DOUBLE_BACKWARD_LINE, character=0),
                          end=types.Position(line=DOUBLE_BACKWARD_LINE, character=0)),
        context=types.CodeActionContext(diagnostics=[]),
    ))
    assert not actions


STORIES_TOLD = "told the graph-lifetime stories of"


def _story_runs(client: LanguageClient) -> int:
    return sum(STORIES_TOLD in message.message for message in client.log_messages)


async def _until_story_runs(client: LanguageClient, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _story_runs(client) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{count} story runs were expected: {[m.message for m in client.log_messages]}")
        await asyncio.sleep(0.02)


async def test_hovers_on_new_names_do_not_run_the_file_again(client: LanguageClient, workdir):
    """The stories of a version come from one watched run: a hover on a name not hovered before
    looks its story up (each such hover used to run the whole file again: 1.4 s on a
    5,000-line file). A new version is run once more."""
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=1)
    told = []
    for line, character in [(2, 0), (3, 0), (4, 1), (4, 6)]:  # `w`, `loss =`, `loss.`, `.backward(`
        hover = await _hover(client, uri, line, character)
        assert hover is not None, (line, character)
        told.append(hover.contents.value)
    assert "requires grad: **yes**; a leaf" in told[0]
    assert all("line 4" in text for text in told[1:]), told
    assert _story_runs(client) == 1, [m.message for m in client.log_messages]

    # A save analyzes the same text again (the linter's last result is reused): no new run either.
    mark = len(client.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await wait_for_publish(client, uri, version=1, after=mark)
    assert await _hover(client, uri, 3, 0) is not None
    assert _story_runs(client) == 1, [m.message for m in client.log_messages]

    edited = DOUBLE_BACKWARD.replace("(w * w)", "(w * 2)")
    replace_all(client, uri, edited, 2, DOUBLE_BACKWARD)
    await wait_for_publish(client, uri, version=2)
    assert await _hover(client, uri, 3, 0) is not None
    assert await _hover(client, uri, 2, 0) is not None
    assert _story_runs(client) == 2, [m.message for m in client.log_messages]


async def test_stories_are_told_ahead_only_in_documents_the_user_hovers(client: LanguageClient, workdir):
    """Telling a version's stories is a watched run of the whole file. A document hovered once
    gets each new version's stories ahead (the next hover finds them told); one never hovered
    costs no run per version."""
    await initialize(client)
    hovered = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, hovered, version=1)
    assert await _hover(client, hovered, 3, 0) is not None
    assert _story_runs(client) == 1

    quiet = open_document(client, workdir / "other.py", DOUBLE_BACKWARD)
    await wait_for_publish(client, quiet, version=1)
    replace_all(client, hovered, DOUBLE_BACKWARD.replace("(w * w)", "(w * 2)"), 2, DOUBLE_BACKWARD)
    await wait_for_publish(client, hovered, version=2)
    await _until_story_runs(client, 2)  # version 2 of the hovered document, told without a hover
    names = [message.message for message in client.log_messages if STORIES_TOLD in message.message]
    assert not any("other.py" in name for name in names), names
