"""Rule links point only where there is a page: the editor's command, or a site graphlife's
metadata names; else the CLI's command in plain text."""

from __future__ import annotations

from email.message import Message

import pytest

from graphlife.lsp import rule_links
from graphlife.rules import rule_by_code


def _metadata_with(*urls: str):
    def fake(name: str) -> Message:
        message = Message()
        for url in urls:
            message["Project-URL"] = url
        return message

    return fake


@pytest.fixture
def gl101():
    rule_links.documentation_url.cache_clear()
    yield rule_by_code("GL101")
    rule_links.documentation_url.cache_clear()


def test_a_documentation_site_in_the_metadata_is_linked(monkeypatch, gl101):
    monkeypatch.setattr(rule_links.metadata, "metadata",
                        _metadata_with("Source, https://example.org/src", "Documentation, https://example.org/docs/"))
    assert rule_links.web_url(gl101) == "https://example.org/docs/rules.md#gl101-backward-through-freed-graph"
    assert rule_links.documentation_link(gl101, None) == (
        "[GL101 documentation](https://example.org/docs/rules.md#gl101-backward-through-freed-graph)")


def test_no_site_no_web_link(monkeypatch, gl101):
    monkeypatch.setattr(rule_links.metadata, "metadata", _metadata_with("Source, https://example.org/src"))
    assert rule_links.web_url(gl101) is None
    assert rule_links.documentation_link(gl101, None) == "Full documentation: `graphlife rules GL101`"


def test_the_editor_command_wins(gl101):
    link = rule_links.documentation_link(gl101, "graphlife.showRuleDocumentation")
    assert link == "[GL101 documentation](command:graphlife.showRuleDocumentation?%5B%22GL101%22%5D)"
