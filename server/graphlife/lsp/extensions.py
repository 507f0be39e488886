"""Features added to the server by modules of their own, without editing :mod:`.server`.

:func:`graphlife.lsp.server.create_server` calls :data:`INITIALIZE_HOOKS` from its
``initialize`` handler (before pygls computes the server's capabilities, so a hook may
register a feature that depends on the client's capabilities or options).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from graphlife.lsp import pull_diagnostics

if TYPE_CHECKING:
    from graphlife.lsp.server import GraphlifeServer

InitializeHook = Callable[["GraphlifeServer", types.InitializeParams], None]

INITIALIZE_HOOKS: tuple[InitializeHook, ...] = (pull_diagnostics.on_initialize,)
