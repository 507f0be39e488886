"""Every quick fix offered on every bad fixture, resolved and applied, removes its finding.

One server per test module (per xdist worker): starting a server per fixture
would cost more than the fixtures themselves. Each fixture is its own document.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import apply_text_edits, edits_for_uri, open_document, replace_all, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def _actions(client, uri, diagnostic):
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )


async def _recheck(client, uri, new_text, version, old_text):
    mark = len(client.published)
    replace_all(client, uri, new_text, version, old_text)
    return await wait_for_publish(client, uri, version=version, after=mark, timeout=60)


def _bad_fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("GL*/bad_*.py"))


@pytest.mark.parametrize("path", _bad_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_every_quick_fix_removes_its_finding(shared_client: LanguageClient, tmp_path, path: Path):
    """For each finding on a bad fixture, each offered fix, resolved and applied, removes that finding."""
    from fixturelib import KNOWN_MISSES

    if f"{path.parent.name}/{path.name}" in KNOWN_MISSES:
        pytest.skip(f"the engine does not catch this fixture yet: {KNOWN_MISSES[f'{path.parent.name}/{path.name}']}")
    source = path.read_text(encoding="utf-8")
    uri = open_document(shared_client, tmp_path / path.name, source)
    published = await wait_for_publish(shared_client, uri, version=1, timeout=30)
    assert published.diagnostics, f"{path.name} is a bad fixture: the server must report it"
    version = 1
    for diagnostic in published.diagnostics:
        actions = await _actions(shared_client, uri, diagnostic)
        fixes = [a for a in actions if a.diagnostics and a.diagnostics[0].range == diagnostic.range
                 and a.diagnostics[0].code == diagnostic.code and not a.title.startswith("Ignore ")]
        # at most one preferred fix, and never one that changes memory or what trains
        assert len([a for a in fixes if a.is_preferred]) <= 1
        assert not [a.title for a in fixes if a.title.endswith(" (unsafe)") and a.is_preferred]
        for action in fixes:
            resolved = await shared_client.code_action_resolve_async(action)
            edits = edits_for_uri(resolved.edit, uri)
            assert edits, f"{diagnostic.code} fix {action.title!r} resolved to no edit"
            fixed = apply_text_edits(source, edits)
            version += 1
            after = await _recheck(shared_client, uri, fixed, version, source)
            # The finding the fix was for is gone. (Torch stops at the first error, so the next
            # statement that would raise may be reported now: that is a different finding.)
            still = [d for d in after.diagnostics if d.code == diagnostic.code and d.range == diagnostic.range]
            assert not still, f"{action.title!r} did not remove {diagnostic.code} at {diagnostic.range}"
            version += 1
            await _recheck(shared_client, uri, source, version, fixed)  # back to the original for the next fix
    shared_client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
