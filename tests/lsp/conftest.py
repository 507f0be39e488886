"""pytest-lsp fixtures: each test gets a fresh ``python -m graphlife lsp`` process over stdio."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import FAKE_TORCH_DIR, SERVER_COMMAND, initialize, make_client, server_env_with, stop
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client, server_env=server_env_with())
)
async def client(lsp_client: LanguageClient):
    """A server that is not initialized yet: tests call :func:`initialize` with their settings."""
    yield
    await stop(lsp_client)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env=server_env_with(GRAPHLIFE_LSP_TEST_DELAY_MS="1500"),
    )
)
async def slow_client(lsp_client: LanguageClient):
    """A server whose every analysis takes 1.5 s longer: makes "overtaken by a newer version" certain."""
    yield
    await stop(lsp_client)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env=server_env_with(GRAPHLIFE_LSP_TEST_DELAY_MS="12000"),
    )
)
async def runaway_client(lsp_client: LanguageClient):
    """A server whose every analysis takes 12 s longer: past the checker's time box (5 s) + 5 s."""
    yield
    await stop(lsp_client)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env=server_env_with(PYTHONPATH=os.pathsep.join([str(FAKE_TORCH_DIR), os.environ.get("PYTHONPATH", "")])),
    )
)
async def no_torch_client(lsp_client: LanguageClient):
    """A server that finds a booby-trapped ``torch`` first on its path."""
    yield
    await stop(lsp_client)


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client, server_env=server_env_with()),
)
async def shared_client(lsp_client: LanguageClient):
    """One initialized server for a whole test module (tests use distinct documents)."""
    await initialize(lsp_client)
    yield
    await stop(lsp_client)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A project folder with no pyproject.toml (the defaults apply)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
