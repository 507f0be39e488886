"""Settings from initializationOptions, workspace/configuration, didChangeConfiguration and pyproject.toml."""

from __future__ import annotations

import pytest
from lsp_helpers import initialize, open_document, vscode_capabilities, wait_for_log, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient
from sources import DOUBLE_BACKWARD

pytestmark = pytest.mark.asyncio


def _gl101(params):
    return [d for d in params.diagnostics if d.code == "GL101"]


async def test_initialization_options_set_the_severity(client: LanguageClient, workdir):
    await initialize(client, init_settings={"severity": {"GL101": "warning"}}, settings=None, debounce_ms=None)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.severity for d in _gl101(published)] == [types.DiagnosticSeverity.Warning]


async def test_workspace_configuration_is_pulled_and_wins_over_initialization_options(client: LanguageClient, workdir):
    await initialize(
        client,
        init_settings={"severity": {"GL101": "warning"}},
        settings={"severity": {"GL1": "hint"}, "debounce": 0},
    )
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.severity for d in _gl101(published)] == [types.DiagnosticSeverity.Hint]


async def test_did_change_configuration_repulls_and_relints(client: LanguageClient, workdir):
    await initialize(client)
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    first = await wait_for_publish(client, uri, version=1)
    assert _gl101(first)

    mark = len(client.published)
    client.set_configuration({"graphlife": {"ignore": ["GL101"], "debounce": 0}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    relinted = await wait_for_publish(client, uri, version=1, after=mark)
    assert _gl101(relinted) == []

    mark = len(client.published)
    client.set_configuration({"graphlife": {"enable": True, "debounce": 0}})
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    again = await wait_for_publish(client, uri, version=1, after=mark)
    assert len(_gl101(again)) == 1


async def test_pyproject_wins_over_the_editor(client: LanguageClient, tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.graphlife]\nseverity = { GL101 = "information" }\n')
    await initialize(client, settings={"severity": {"GL101": "warning"}, "debounce": 0}, root=project)
    uri = open_document(client, project / "src" / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.severity for d in _gl101(published)] == [types.DiagnosticSeverity.Information]


async def test_pyproject_can_turn_a_rule_off(client: LanguageClient, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL101"]\n')
    await initialize(client, root=project)
    uri = open_document(client, project / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert _gl101(published) == []


async def test_broken_settings_are_logged_and_the_rest_still_applies(client: LanguageClient, workdir):
    await initialize(
        client,
        settings={
            "select": 5,
            "severity": {"GL101": "loud", "GL102": "off"},
            "lintOnChange": "yes",
            "debounce": "soon",
        },
    )
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    # the broken keys are skipped: GL101 keeps its own severity
    assert [d.severity for d in _gl101(published)] == [types.DiagnosticSeverity.Error]
    for text in ("`select`", "loud", "lintOnChange", "`debounce`"):
        message = await wait_for_log(client, text)
        assert message.type in (types.MessageType.Warning, types.MessageType.Error)
    assert client.messages == [], "problems go to the log, not to pop-ups"


async def test_broken_pyproject_is_logged_and_editor_settings_still_apply(client: LanguageClient, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.graphlife\nseverity = 3\n")
    await initialize(client, settings={"severity": {"GL101": "warning"}, "debounce": 0}, root=project)
    uri = open_document(client, project / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert [d.severity for d in _gl101(published)] == [types.DiagnosticSeverity.Warning]
    await wait_for_log(client, "pyproject.toml")


async def test_a_non_object_settings_section_is_logged(client: LanguageClient, workdir):
    await initialize(client, init_settings=["not", "an", "object"], debounce_ms=0)
    await wait_for_log(client, "must be an object")
    uri = open_document(client, workdir / "train.py", DOUBLE_BACKWARD)
    published = await wait_for_publish(client, uri, version=1)
    assert _gl101(published)


async def test_editing_pyproject_relints_open_documents(client: LanguageClient, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    await initialize(client, root=project)
    assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in client.registrations)
    uri = open_document(client, project / "train.py", DOUBLE_BACKWARD)
    first = await wait_for_publish(client, uri, version=1)
    assert _gl101(first)

    (project / "pyproject.toml").write_text('[tool.graphlife]\nignore = ["GL1"]\n')
    mark = len(client.published)
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=(project / "pyproject.toml").as_uri(), type=types.FileChangeType.Created)]
        )
    )
    relinted = await wait_for_publish(client, uri, version=1, after=mark)
    assert _gl101(relinted) == []


async def test_each_workspace_folder_gets_its_own_settings(client: LanguageClient, tmp_path):
    """Multi-root: the client answers workspace/configuration per folder (scopeUri); the innermost folder wins."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    client.set_configuration({"graphlife": {"debounce": 0}})
    client.set_configuration({"graphlife": {"ignore": ["GL101"], "debounce": 0}}, scope_uri=second.as_uri())
    params = types.InitializeParams(
        capabilities=vscode_capabilities(),
        root_uri=tmp_path.as_uri(),
        workspace_folders=[
            types.WorkspaceFolder(uri=first.as_uri(), name="first"),
            types.WorkspaceFolder(uri=second.as_uri(), name="second"),
        ],
    )
    await client.initialize_session(params)
    await wait_for_log(client, "language server ready")
    in_first = open_document(client, first / "train.py", DOUBLE_BACKWARD)
    in_second = open_document(client, second / "train.py", DOUBLE_BACKWARD)
    assert len(_gl101(await wait_for_publish(client, in_first, version=1))) == 1
    assert _gl101(await wait_for_publish(client, in_second, version=1)) == []
