"""What graphlife could not analyze is shown, not only logged: a syntax error (the block
around it is skipped, so its findings vanish) and work the checker skipped."""

from __future__ import annotations

import pytest
from lsp_helpers import initialize, open_document, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD
from test_notebook import _open as open_notebook

pytestmark = pytest.mark.asyncio

# A stray indent in a class the loop does not use: the class is skipped, the GL101 stays.
BROKEN_CLASS = DOUBLE_BACKWARD + """
class Model:
    def forward(self, x):
        return x
          y = 2
"""
BROKEN_LINE = 10  # 0-based line of `y = 2`


async def test_a_syntax_error_is_an_error_diagnostic_and_the_rest_is_still_checked(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", BROKEN_CLASS)
    published = await wait_for_publish(client, uri, version=1)
    syntax = [d for d in published.diagnostics if d.message.startswith("SyntaxError")]
    assert len(syntax) == 1, published.diagnostics
    assert syntax[0].severity == types.DiagnosticSeverity.Error
    assert syntax[0].source == "graphlife"
    assert syntax[0].range.start.line == BROKEN_LINE
    assert "did not analyze" in syntax[0].message
    assert any(d.code == "GL101" for d in published.diagnostics)


async def test_show_syntax_errors_off_hides_them(client: LanguageClient, workdir):
    await initialize(client, settings={"debounce": 50, "showSyntaxErrors": False})
    uri = open_document(client, workdir / "train.py", BROKEN_CLASS)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.code for d in published.diagnostics] == ["GL101"], published.diagnostics
    assert not client.log_messages or all("unknown setting" not in m.message for m in client.log_messages)


async def test_a_syntax_error_in_a_notebook_cell_lands_on_that_cell(client: LanguageClient, workdir):
    await initialize(client)
    code = types.NotebookCellKind.Code
    _, cells = open_notebook(client, workdir, [(code, "import torch\n"), (code, "def f(:\n    pass\n")])
    published = await wait_for_publish(client, cells[1])
    assert [d.range.start.line for d in published.diagnostics if d.message.startswith("SyntaxError")] == [0]


async def test_skipped_work_is_an_information_diagnostic(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "data.py", "import torch\nx = 1\x00\n")
    published = await wait_for_publish(client, uri, version=1)
    assert len(published.diagnostics) == 1, published.diagnostics
    info = published.diagnostics[0]
    assert info.severity == types.DiagnosticSeverity.Information
    assert info.range.start.line == 0
    assert "did not analyze all of this file" in info.message
    assert "NUL bytes" in info.message
