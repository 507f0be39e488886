"""The content hash of a module's text, in a module of its own.

Why apart from :mod:`graphlife.project.sources`: a ``graphlife check`` answered from the
cache of results on disk hashes the file's text and nothing else of the project layer; the
reading and parsing machinery of ``sources`` (the parser, the tree index) would cost that
run more start-up time than the rest of its work.

Why ``_sha256`` first: ``hashlib`` loads OpenSSL's library (about a third of the start-up of
a check answered from the cache, on top of Python's own); CPython's built-in SHA-256 gives the
same digests. ``hashlib`` is the fallback where a build leaves that module out.
"""

from __future__ import annotations

try:
    from _sha256 import sha256  # type: ignore[import-not-found]  # CPython's, without a stub
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha256


def text_digest(text: str) -> str:
    """The content hash of a module's text: the same for a buffer and the saved file holding it."""
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = ["sha256", "text_digest"]
