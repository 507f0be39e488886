"""Messages for the user's output channel (``window/logMessage``), never pop-ups.

Problems with the user's input (a syntax error, a broken setting, a huge file)
are expected while typing; they belong in the log, where the client's
"Show logs" command finds them, not in notification toasts. The same text also
goes to stderr through :mod:`logging` so that a server started by hand (or with
``--tcp``) shows it too.
"""

from __future__ import annotations

import logging
import traceback

from lsprotocol import types
from pygls.lsp.server import LanguageServer

logger = logging.getLogger("graphlife.lsp")

_LEVELS = {
    types.MessageType.Error: logging.ERROR,
    types.MessageType.Warning: logging.WARNING,
    types.MessageType.Info: logging.INFO,
    types.MessageType.Log: logging.DEBUG,
}


def log(server: LanguageServer, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
    """Send ``message`` to the client's log; never raises (a dead client must not kill a handler)."""
    logger.log(_LEVELS.get(kind, logging.INFO), message)
    try:
        server.window_log_message(types.LogMessageParams(type=kind, message=f"graphlife: {message}"))
    except Exception:  # the transport may already be closed
        logger.debug("could not send log message", exc_info=True)


def log_exception(server: LanguageServer, what: str, exc: BaseException) -> None:
    """An unexpected failure inside the server: log it with its traceback and keep serving."""
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))
    log(server, f"{what} failed: {exc!r} (the server keeps running)\n{details}", types.MessageType.Error)
