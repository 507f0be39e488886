"""reportingScope "workspace": the closed files of the workspace are checked too."""

from __future__ import annotations

import pytest
from lsp_helpers import initialize, open_document, wait_for_log, wait_for_publish
from lsprotocol import types
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


def _changed_on_disk(client: LanguageClient, *paths) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed) for path in paths]))


async def test_workspace_scope_checks_what_the_command_line_checks(client: LanguageClient, workdir):
    """The files `graphlife check .` leaves out (pyproject's extend-exclude, .gitignore) get no
    diagnostics from the workspace scope either, not even when they change on disk; an edit of
    .gitignore that lets a file in has it checked."""
    (workdir / "pyproject.toml").write_text('[tool.graphlife]\nextend-exclude = ["generated/"]\n')
    (workdir / ".git").mkdir()  # a repository: its .gitignore applies
    (workdir / ".gitignore").write_text("scratch.py\n")
    (workdir / "train.py").write_text(DOUBLE_BACKWARD)
    (workdir / "generated").mkdir()
    (workdir / "generated" / "model_pb.py").write_text(DOUBLE_BACKWARD)
    (workdir / "scratch.py").write_text(DOUBLE_BACKWARD)
    await initialize(client, root=workdir, settings={"debounce": 50, "reportingScope": "workspace"})
    train = await wait_for_publish(client, (workdir / "train.py").as_uri())
    assert [d.code for d in train.diagnostics] == ["GL101"]
    await wait_for_log(client, "reportingScope workspace: checked 1 closed file(s)")

    # Changed on disk, an excluded file is still not checked.
    _changed_on_disk(client, workdir / "generated" / "model_pb.py", workdir / "scratch.py")
    # .gitignore no longer names scratch.py: the next walk checks it.
    (workdir / ".gitignore").write_text("# nothing ignored\n")
    _changed_on_disk(client, workdir / ".gitignore")
    scratch = await wait_for_publish(client, (workdir / "scratch.py").as_uri())
    assert [d.code for d in scratch.diagnostics] == ["GL101"]
    await wait_for_log(client, "reportingScope workspace: checked 2 closed file(s)")
    assert all("generated" not in params.uri for _, params in client.published)
