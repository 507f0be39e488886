"""reportingScope "workspace": the closed files of the workspace are checked too."""

from __future__ import annotations

import pytest
from lsp_helpers import initialize, open_document, wait_for_publish
from pytest_lsp import LanguageClient
from sources import CLEAN, DOUBLE_BACKWARD

pytestmark = pytest.mark.asyncio


async def test_closed_files_get_diagnostics_in_workspace_scope(client: LanguageClient, workdir):
    (workdir / "train.py").write_text(DOUBLE_BACKWARD)
    (workdir / "pkg").mkdir()
    (workdir / "pkg" / "loop.py").write_text(DOUBLE_BACKWARD)
    (workdir / ".venv").mkdir()
    (workdir / ".venv" / "skipped.py").write_text(DOUBLE_BACKWARD)
    await initialize(client, root=workdir, settings={"debounce": 50, "reportingScope": "workspace"})
    train = await wait_for_publish(client, (workdir / "train.py").as_uri())
    loop = await wait_for_publish(client, (workdir / "pkg" / "loop.py").as_uri())
    assert [d.code for d in train.diagnostics] == ["GL101"]
    assert [d.code for d in loop.diagnostics] == ["GL101"]
    assert all(".venv" not in params.uri for _, params in client.published)

    # Opened, the file is the linter's: one GL101, from its buffer; closed again, the workspace's.
    mark = len(client.published)
    uri = open_document(client, workdir / "train.py", CLEAN)
    opened = await wait_for_publish(client, uri, version=1, after=mark)
    assert not opened.diagnostics


async def test_file_scope_reports_only_open_files(client: LanguageClient, workdir):
    (workdir / "train.py").write_text(DOUBLE_BACKWARD)
    await initialize(client, root=workdir)
    uri = open_document(client, workdir / "other.py", CLEAN)
    await wait_for_publish(client, uri, version=1)
    assert all(params.uri != (workdir / "train.py").as_uri() for _, params in client.published)
