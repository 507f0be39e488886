"""The content hash of a module's text, in a module of its own.

Why apart from :mod:`graphlife.project.sources`: a ``graphlife check`` answered from the
cache of results on disk hashes the file's text and nothing else of the project layer; the
reading and parsing machinery of ``sources`` (the parser, the tree index) would cost that
run more start-up time than the rest of its work.
"""

from __future__ import annotations

import hashlib


def text_digest(text: str) -> str:
    """The content hash of a module's text: the same for a buffer and the saved file holding it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
