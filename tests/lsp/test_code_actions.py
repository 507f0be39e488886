"""Quick fixes (resolved lazily), fix-all and "ignore on this line", applied and re-checked by the server."""

from __future__ import annotations

import pytest
from lsp_helpers import (
    apply_text_edits,
    edits_for_uri,
    initialize,
    open_document,
    replace_all,
    wait_for_publish,
)
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE, MANUAL_UPDATE

pytestmark = pytest.mark.asyncio

FIX_ALL = "source.fixAll.graphlife"


async def _actions(client, uri, diagnostic, only=None):
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
        )
    )


async def _recheck(client, uri, new_text, version, old_text):
    mark = len(client.published)
    replace_all(client, uri, new_text, version, old_text)
    return await wait_for_publish(client, uri, version=version, after=mark)


async def test_ignore_action_writes_the_comment_and_silences_the_finding(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")

    actions = await _actions(client, uri, diagnostic)
    ignore = [a for a in actions if a.title == "Ignore GL101 on this line"]
    assert len(ignore) == 1
    assert ignore[0].kind == types.CodeActionKind.QuickFix
    assert ignore[0].edit is None, "edits are resolved lazily"
    resolved = await client.code_action_resolve_async(ignore[0])
    new_text = apply_text_edits(DOUBLE_BACKWARD, edits_for_uri(resolved.edit, uri))
    assert new_text.splitlines()[DOUBLE_BACKWARD_LINE] == "loss.backward()  # graphlife: ignore[GL101]"

    after = await _recheck(client, uri, new_text, 2, DOUBLE_BACKWARD)
    assert "GL101" not in [d.code for d in after.diagnostics]


async def test_ignore_action_extends_an_existing_ignore_comment(client: LanguageClient, workdir):
    lines = DOUBLE_BACKWARD.splitlines()
    lines[DOUBLE_BACKWARD_LINE] += "  # graphlife: ignore[GL202]"
    text = "\n".join(lines) + "\n"
    await initialize(client)
    uri = open_document(client, workdir / "train.py", text)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    actions = await _actions(client, uri, diagnostic)
    ignore = next(a for a in actions if a.title == "Ignore GL101 on this line")
    resolved = await client.code_action_resolve_async(ignore)
    new_text = apply_text_edits(text, edits_for_uri(resolved.edit, uri))
    assert new_text.splitlines()[DOUBLE_BACKWARD_LINE] == "loss.backward()  # graphlife: ignore[GL202, GL101]"


async def test_quick_fixes_are_listed_preferred_first_and_resolve_lazily(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "sgd.py", MANUAL_UPDATE)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL103")
    actions = await _actions(client, uri, diagnostic)
    fixes = [a for a in actions if not a.title.startswith("Ignore ")]
    assert fixes, "GL103 carries a fix (wrap the update in torch.no_grad())"
    assert fixes[0].is_preferred is True
    assert all(a.kind == types.CodeActionKind.QuickFix and a.edit is None for a in fixes)
    resolved = await client.code_action_resolve_async(fixes[0])
    new_text = apply_text_edits(MANUAL_UPDATE, edits_for_uri(resolved.edit, uri))
    assert "torch.no_grad()" in new_text
    after = await _recheck(client, uri, new_text, 2, MANUAL_UPDATE)
    assert "GL103" not in [d.code for d in after.diagnostics]


async def test_fix_all_is_exactly_graphlife_fix(client: LanguageClient, workdir):
    from graphlife.fixes import fix_source

    await initialize(client)
    path = workdir / "sgd.py"
    uri = open_document(client, path, MANUAL_UPDATE)
    published = await wait_for_publish(client, uri, version=1)
    assert published.diagnostics
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=[FIX_ALL]),
        )
    )
    fix_all = [a for a in actions if a.kind == FIX_ALL]
    assert len(fix_all) == 1
    resolved = await client.code_action_resolve_async(fix_all[0])
    new_text = apply_text_edits(MANUAL_UPDATE, edits_for_uri(resolved.edit, uri))
    assert new_text == fix_source(MANUAL_UPDATE, str(path))
    assert new_text != MANUAL_UPDATE


async def test_no_source_actions_in_the_light_bulb_only_quick_fixes(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    actions = await _actions(client, uri, diagnostic, only=[types.CodeActionKind.Refactor])
    assert not actions


# GL201: `history` keeps every iteration's graph; its fixes store `loss.detach()` (safe) or
# `loss.item()`.
KEPT_GRAPH = """\
import torch
model = torch.nn.Linear(3, 1)
history = []
for i in range(3):
    loss = model(torch.randn(3)).sum()
    loss.backward()
    history.append(loss)
"""


async def test_the_menu_offers_fix_all_ignore_in_file_and_turn_off(client: LanguageClient, workdir):
    await initialize(client, turn_off_command="graphlife.turnOffRule")
    uri = open_document(client, workdir / "loop.py", "#!/usr/bin/env python\n" + KEPT_GRAPH)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL201")
    titles = [a.title for a in await _actions(client, uri, diagnostic)]
    assert titles[-3:] == ["Fix all graphlife problems", "Ignore GL201 in this file", "Turn off GL201 in settings"]
    actions = {a.title: a for a in await _actions(client, uri, diagnostic)}
    turn_off = actions["Turn off GL201 in settings"]
    # A code action carrying a command; lsprotocol's converter reads it as a bare Command (the
    # fields overlap) whose `command` is the nested command as text.
    nested = turn_off.command if isinstance(turn_off.command, str) else repr(turn_off.command)
    assert "'command': 'graphlife.turnOffRule'" in nested and "'arguments': ['GL201']" in nested, nested
    assert actions["Fix all graphlife problems"].kind == types.CodeActionKind.QuickFix

    text = "#!/usr/bin/env python\n" + KEPT_GRAPH
    resolved = await client.code_action_resolve_async(actions["Ignore GL201 in this file"])
    new_text = apply_text_edits(text, edits_for_uri(resolved.edit, uri))
    assert new_text.splitlines()[:2] == ["#!/usr/bin/env python", "# graphlife: ignore-file[GL201]"]
    after = await _recheck(client, uri, new_text, 2, text)
    assert not after.diagnostics


async def test_turn_off_is_offered_only_when_the_client_has_the_command(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "loop.py", KEPT_GRAPH)
    published = await wait_for_publish(client, uri, version=1)
    titles = [a.title for a in await _actions(client, uri, published.diagnostics[0])]
    assert "Ignore GL201 in this file" in titles
    assert not any(title.startswith("Turn off") for title in titles)


# GL101 with the backwards apart: the only fix keeps the graph alive (`retain_graph=True`).
RETAIN_ONLY = """\
import torch

w = torch.randn(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
print(w.grad)
loss.backward()
"""


async def test_an_unsafe_fix_is_marked_never_preferred_and_never_in_fix_all(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "twice.py", RETAIN_ONLY)
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    actions = await _actions(client, uri, diagnostic)
    fixes = [a for a in actions if not a.title.startswith("Ignore ")]
    assert [a.title for a in fixes] == ["Keep the graph with `retain_graph=True` (keeps its memory alive) (unsafe)"]
    assert not fixes[0].is_preferred
    resolved = await client.code_action_resolve_async(fixes[0])
    assert "retain_graph=True" in apply_text_edits(RETAIN_ONLY, edits_for_uri(resolved.edit, uri))

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=[FIX_ALL]),
        )
    )
    for fix_all in [a for a in actions if a.kind == FIX_ALL]:
        resolved = await client.code_action_resolve_async(fix_all)
        assert resolved.edit is None, "fix-all applied an unsafe fix"
