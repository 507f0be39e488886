"""Shared by every test: only what all of them need (tests/ is on sys.path via pytest.ini)."""

from __future__ import annotations

import os
from importlib import metadata


def pytest_report_header(config):
    """Say which torch judges the fixtures (without importing it in the controller)."""
    try:
        return f"torch (the oracle): {metadata.version('torch')}"
    except metadata.PackageNotFoundError:
        return "torch (the oracle): not installed"


def pytest_configure(config):
    """The tests expect graphlife's default language, English: a developer whose shell speaks
    Chinese (LANG=zh_CN.UTF-8) would otherwise get Chinese messages from every `graphlife check`
    the tests run (the tests of the Chinese set the language themselves)."""
    from graphlife import i18n

    if i18n.from_environment() != i18n.ENGLISH:
        os.environ.pop("LANGUAGE", None)
        os.environ["LC_ALL"] = "C.UTF-8"
