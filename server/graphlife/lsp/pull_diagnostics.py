"""Pull diagnostics (``textDocument/diagnostic``, LSP 3.17) for clients that prefer them.

The server pushes diagnostics (``textDocument/publishDiagnostics``) by default: every
client supports that, and it is the only way to show bugs the analysis of one document
finds in another file that is not open. A client that supports both and is given both
shows each finding twice (VS Code and Neovim keep pushed and pulled diagnostics apart),
so pull is chosen per session, at ``initialize``:

- when the client supports pull and not push, or
- when it supports pull and asks for it with the initialization option
  ``"diagnosticMode": "pull"``.

In pull mode the server stops pushing and, after each analysis, asks the client to pull
again (``workspace/diagnostic/refresh``) when the client offers that. A pull waits for
the analysis of the document's current text (as hover does), and answers with what every
open document's analysis says about that document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from graphlife.lsp.documents import current_stamp, key_for
from graphlife.lsp.settings import from_initialization_options

if TYPE_CHECKING:
    from graphlife.lsp.server import GraphlifeServer

#: Seconds a pull waits for a running analysis of the document before answering with what is known.
PULL_WAIT = 10.0


def wants_pull(params: types.InitializeParams) -> bool:
    """Whether this session serves pulled diagnostics instead of pushing them."""
    text_document = params.capabilities.text_document
    if text_document is None or text_document.diagnostic is None:
        return False
    if text_document.publish_diagnostics is None:
        return True
    options: Any = from_initialization_options(params.initialization_options)
    raw = params.initialization_options
    asked = [source.get("diagnosticMode") for source in (options, raw) if isinstance(source, Mapping)]
    return "pull" in asked


def on_initialize(server: GraphlifeServer, params: types.InitializeParams) -> None:
    """Register ``textDocument/diagnostic`` before the server's capabilities are computed,
    when :func:`wants_pull` says so (pygls builds them after the initialize handler)."""
    if not wants_pull(params):
        return
    workspace = params.capabilities.workspace
    refresh = bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support)
    server.linter.serve_pulls(refresh)

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                    types.DiagnosticOptions(identifier="graphlife", inter_file_dependencies=True,
                                            workspace_diagnostics=False))
    async def document_diagnostic(params: types.DocumentDiagnosticParams) -> types.RelatedFullDocumentDiagnosticReport:
        uri = params.text_document.uri
        key = key_for(server.workspace, uri)
        analysis = await server.linter.fresh(key, wait=PULL_WAIT) if current_stamp(server.workspace, key) else None
        return types.RelatedFullDocumentDiagnosticReport(items=server.linter.diagnostics_for(uri, analysis))
