"""Shared by every test: only what all of them need (tests/ is on sys.path via pytest.ini)."""

from __future__ import annotations

from importlib import metadata


def pytest_report_header(config):
    """Say which torch judges the fixtures (without importing it in the controller)."""
    try:
        return f"torch (the oracle): {metadata.version('torch')}"
    except metadata.PackageNotFoundError:
        return "torch (the oracle): not installed"
