"""The editor judges a fix in the project its finding was found in (the document's imports followed).

In the GAN project the discriminator lives in `models.py`: `retain_graph=True` on its
backward looks like a fix of the generator's GL101 when `train.py` is read alone, but the
optimizer step then changes weights the kept graph saved (GL102). The light bulb must not
offer it, and fix-all must not apply it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import initialize, open_document, wait_for_publish
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "bad_gan_losses_module"


async def test_a_fix_wrong_given_another_module_is_not_offered(client: LanguageClient, workdir):
    for name in ("train.py", "models.py", "losses.py"):
        shutil.copy(PROJECT / name, workdir / name)
    await initialize(client)
    uri = open_document(client, workdir / "train.py")
    published = await wait_for_publish(client, uri, version=1)
    diagnostic = next(d for d in published.diagnostics if d.code == "GL101")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [a.title for a in actions]
    assert "Ignore GL101 on this line" in titles  # the menu is there ...
    assert not [t for t in titles if "retain_graph" in t], titles  # ... without the fix the project shows wrong
