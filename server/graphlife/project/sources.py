"""Read and parse the user's modules, each once while it is unchanged.

Why a cache, keyed as it is: an analysis may import the same modules from many entry files,
and the language server re-analyzes on every edit. A file is re-read only when its
``(mtime_ns, size)`` changes, and re-parsed only when its text changed too (a ``touch`` or a
``git checkout`` of the same content costs a read and a hash, not a parse). An open editor
buffer wins over the disk: its text is what the user sees.

A module that cannot be used (too big, binary, not text in its declared encoding, nothing
parses) is :class:`Unreadable` with the reason; the engine then treats the import as it
treats a library's. A syntax error is not fatal: as for the checked file, the top-level
blocks that parse are kept (:func:`graphlife.analysis.blocks.parse_tolerant`).
"""

from __future__ import annotations

import ast
import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from graphlife.analysis.blocks import parse_tolerant
from graphlife.analysis.tree_index import TreeIndex
from graphlife.project.digests import text_digest
from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.text_lines import detect_encoding, source_lines


@dataclass(frozen=True, eq=False)
class ParsedSource:
    """A module's text, parsed (blocks that did not parse are left out of ``tree``)."""

    path: str
    text: str
    tree: ast.Module
    lines: list[str]
    index: TreeIndex
    digest: str
    syntax_errors: tuple[tuple[int, int, str], ...]


@dataclass(frozen=True)
class Unreadable:
    """A file that cannot be analyzed, and why. ``digest`` identifies the content that was
    judged (so that a change to the file is seen), like :attr:`ParsedSource.digest`."""

    path: str
    reason: str
    digest: str


class UndecodableSource(ValueError):
    """The bytes are not Python source text: NUL bytes, or not valid in their declared encoding."""


def decode_source(data: bytes) -> str:
    """Decode a file's bytes as Python does: a UTF-8 BOM or a PEP 263 coding cookie, else UTF-8."""
    if b"\x00" in data:
        raise UndecodableSource("binary file (NUL bytes)")
    try:
        encoding = detect_encoding(data)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise UndecodableSource(f"not valid text in its declared encoding: {exc}") from exc


def _bytes_digest(data: bytes) -> str:
    return "bytes:" + hashlib.sha256(data).hexdigest()


#: The digest of a file that could not be read at all (gone, no permission).
MISSING_DIGEST = "missing"


def read_text(path: str, stat: os.stat_result) -> str | Unreadable:
    """The text of the file at ``path`` (``stat`` taken just before), or why it cannot be used."""
    if stat.st_size > MAX_SOURCE_BYTES:
        return Unreadable(path, f"larger than {MAX_SOURCE_BYTES // 1_000_000} MB",
                          f"size:{stat.st_size}:{stat.st_mtime_ns}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        return Unreadable(path, f"cannot read: {exc.strerror or exc}", MISSING_DIGEST)
    try:
        return decode_source(data)
    except UndecodableSource as exc:
        return Unreadable(path, str(exc), _bytes_digest(data))


def file_digest(path: str) -> str:
    """The digest :meth:`SourceCache.load` gives the file at ``path`` now, without parsing it:
    what a result cached on disk compares with the digest recorded when it was computed."""
    try:
        stat = os.stat(path)
    except OSError:
        return MISSING_DIGEST
    text = read_text(path, stat)
    return text.digest if isinstance(text, Unreadable) else text_digest(text)


@dataclass
class _Entry:
    stat_key: tuple[int, int] | None  # (mtime_ns, size) of the file read; None for a buffer
    result: ParsedSource | Unreadable


class SourceCache:
    """Parsed modules by absolute path (at most ``max_files``, the least recently used go
    first). Shared by the analyses of one process; safe to use from several threads."""

    def __init__(self, max_files: int = 2000) -> None:
        self._max_files = max_files
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, path: str, buffer_text: str | None = None) -> ParsedSource | Unreadable:
        """The module at ``path``: the open buffer's text when given, else the file on disk."""
        path = os.path.abspath(path)
        if buffer_text is not None:
            return self._from_text(path, buffer_text, None)
        try:
            stat = os.stat(path)
        except OSError as exc:
            return Unreadable(path, f"cannot read: {exc.strerror or exc}", MISSING_DIGEST)
        stat_key = (stat.st_mtime_ns, stat.st_size)
        cached = self._get(path)
        if cached is not None and cached.stat_key == stat_key:
            return cached.result
        text = read_text(path, stat)
        if isinstance(text, Unreadable):
            # A read that failed may succeed next time: only a judged content is kept.
            return text if text.digest == MISSING_DIGEST else self._store(path, stat_key, text)
        return self._from_text(path, text, stat_key)

    def _from_text(self, path: str, text: str, stat_key: tuple[int, int] | None) -> ParsedSource | Unreadable:
        digest = text_digest(text)
        cached = self._get(path)
        if cached is not None and cached.result.digest == digest:
            return self._store(path, stat_key, cached.result)
        return self._store(path, stat_key, parse_source(path, text, digest))

    def _get(self, path: str) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None:
                self._entries.move_to_end(path)
            return entry

    def _store(self, path: str, stat_key: tuple[int, int] | None,
               result: ParsedSource | Unreadable) -> ParsedSource | Unreadable:
        with self._lock:
            self._entries[path] = _Entry(stat_key, result)
            self._entries.move_to_end(path)
            while len(self._entries) > self._max_files:
                self._entries.popitem(last=False)
        return result


def parse_source(path: str, text: str, digest: str | None = None) -> ParsedSource | Unreadable:
    """Parse a module's text, keeping the top-level blocks that parse."""
    digest = digest or text_digest(text)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return Unreadable(path, f"larger than {MAX_SOURCE_BYTES // 1_000_000} MB", digest)
    if "\x00" in text:
        return Unreadable(path, "binary file (NUL bytes)", digest)
    tree, errors = parse_tolerant(text)
    if tree is None:
        reason = errors[0][2] if errors else "nothing parses"
        return Unreadable(path, reason, digest)
    return ParsedSource(path, text, tree, source_lines(text), TreeIndex.of_module(tree), digest, tuple(errors))
