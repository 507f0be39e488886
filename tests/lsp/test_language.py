"""The server speaks the editor's language: the ``locale`` of ``initialize`` (VS Code sends
its display language), overridden by the ``graphlife.language`` setting."""

from __future__ import annotations

import pytest
from lsp_helpers import initialize, open_document, replace_all, wait_for_log, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD, DOUBLE_BACKWARD_LINE

pytestmark = pytest.mark.asyncio


def _gl101(published: types.PublishDiagnosticsParams) -> types.Diagnostic:
    return next(d for d in published.diagnostics if d.code == "GL101")


async def _hover_text(client: LanguageClient, uri: str, line: int = DOUBLE_BACKWARD_LINE, character: int = 7) -> str:
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character)))
    assert hover is not None
    return hover.contents.value


async def _action_titles(client: LanguageClient, uri: str, diagnostic: types.Diagnostic) -> list[str]:
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    return [action.title for action in actions or []]


async def test_a_chinese_editor_reads_diagnostics_hovers_and_fixes_in_chinese(client: LanguageClient, workdir):
    await initialize(client, locale="zh-cn")
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    diagnostic = _gl101(await wait_for_publish(client, uri, version=1))
    assert "计算图" in diagnostic.message and "第 4 行" in diagnostic.message, diagnostic.message
    related = [info.message for info in diagnostic.related_information or []]
    assert "计算图在此构建（`w * w`）" in related and "这次反向传播释放了计算图" in related

    text = await _hover_text(client, uri)
    assert "**GL101** backward-through-freed-graph · 错误" in text
    assert "**torch 的报错：**" in text
    assert "Trying to backward through the graph a second time" in text  # torch's own words, as it prints them
    assert "完整文档：`graphlife rules GL101`" in text
    story = await _hover_text(client, uri, 3, 1)  # `loss = (w * w).sum()`: the tensor's graph-lifetime story
    assert "**`loss`** — 计算图生命周期（graphlife）" in story and "- 计算图构建于第 4 行（2 个节点）" in story, story

    titles = await _action_titles(client, uri, diagnostic)
    assert "在这一行忽略 GL101" in titles and "在这个文件中忽略 GL101" in titles
    assert any(title.startswith("用 `retain_graph=True` 保留计算图") and title.endswith("（不安全）")
               for title in titles)


async def test_the_setting_overrides_the_locale_and_a_change_republishes(client: LanguageClient, workdir):
    await initialize(client, locale="zh-cn", settings={"language": "en", "debounce": 0})
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    english = _gl101(await wait_for_publish(client, uri, version=1))
    assert english.message.startswith("`loss` backpropagates through the graph built at line 4"), english.message
    assert "Ignore GL101 on this line" in await _action_titles(client, uri, english)

    mark = len(client.published)
    client.set_configuration({"graphlife": {"language": "zh-cn", "debounce": 0}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    chinese = _gl101(await wait_for_publish(client, uri, version=1, after=mark))
    assert "计算图" in chinese.message
    assert "· 错误" in await _hover_text(client, uri)


async def test_a_wrong_language_setting_is_logged_and_falls_back(client: LanguageClient, workdir):
    await initialize(client, settings={"language": "klingon", "debounce": 0})
    await wait_for_log(client, "`language` must be one of auto, en, zh-cn")
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    diagnostic = _gl101(await wait_for_publish(client, uri, version=1))
    assert diagnostic.message.startswith("`loss` backpropagates")  # no locale sent: English


async def test_an_edit_above_moves_the_lines_the_chinese_message_names(client: LanguageClient, workdir):
    """The unit cache replays the unchanged code's findings at their new lines: the typed line
    arguments move, in every language the message is shown in."""
    await initialize(client, locale="zh-cn")
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    before = _gl101(await wait_for_publish(client, uri, version=1))
    assert "第 4 行" in before.message and "第 5 行" in before.message
    replace_all(client, uri, "# a comment above\n" + DOUBLE_BACKWARD, 2, DOUBLE_BACKWARD)
    after = _gl101(await wait_for_publish(client, uri, version=2))
    assert "第 5 行" in after.message and "第 6 行" in after.message and "第 4 行" not in after.message, after.message


async def test_a_notebooks_messages_name_cells_in_chinese(client: LanguageClient, workdir):
    from test_notebook import _open  # the notebook the notebook tests open

    await initialize(client, locale="zh-cn")
    _, cells = _open(client, workdir)
    last = await wait_for_publish(client, cells[3], version=1)
    gl101 = _gl101(last)
    # the graph built in cell 3 (line 1) and freed there (line 2): each named by its cell
    assert "第 3 个单元格第 1 行" in gl101.message and "第 3 个单元格第 2 行" in gl101.message, gl101.message
