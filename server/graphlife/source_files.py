"""Reading a user's Python file, and writing a fix back, without ever losing what is in it.

Why a module of its own: `graphlife fix` rewrites the user's files, and a file is the one
thing the tool must never damage. So:

- only regular files are read (a FIFO named ``train.py`` would block the run forever), and
  their size is checked before a byte is read (a data dump in ``.py`` is not analyzed);
- a file is decoded as Python decodes it (its PEP 263 coding cookie, its UTF-8 BOM), and the
  fix is encoded back the same way: a Latin-1 file stays Latin-1, a BOM stays, and since
  decoding keeps ``\\r\\n`` as it is, so do the file's newlines;
- the fixed text goes to a temporary file in the same folder, which then replaces the file in
  one step (``os.replace``): on a full disk or any other failure the user's file is as it
  was; the new file keeps the old one's permission bits;
- a file without any write permission is not fixed (its owner made it read-only), with a
  message, and the run goes on with the other files.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass

from graphlife.project.limits import MAX_SOURCE_BYTES
from graphlife.text_lines import detect_encoding


class SourceError(ValueError):
    """Why a file cannot be read or written (one line, for the user)."""


@dataclass(frozen=True)
class SourceText:
    """A file's text and how it is encoded on disk (``utf-8-sig``: with a BOM)."""

    text: str
    encoding: str


def check_readable(path: str) -> None:
    """Raise :class:`SourceError` unless ``path`` is a regular file of at most
    :data:`MAX_SOURCE_BYTES` (asked of the file system before a byte is read)."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise SourceError("not a regular file (a pipe, a device or a socket); not read")
    if info.st_size > MAX_SOURCE_BYTES:
        raise SourceError(f"file is larger than {MAX_SOURCE_BYTES // 1_000_000} MB; not analyzed")


def read_source_file(path: str) -> SourceText:
    """The text of a regular Python file of at most :data:`MAX_SOURCE_BYTES`, decoded as Python
    decodes it; :class:`SourceError` says why not (``OSError`` for the file system's reasons)."""
    check_readable(path)
    with open(path, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    return decode_source(data)


def decode_source(data: bytes) -> SourceText:
    """Bytes of Python source (a file's, or standard input's for ``graphlife check -``) decoded
    as Python decodes them; :class:`SourceError` says why not."""
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceError(f"file is larger than {MAX_SOURCE_BYTES // 1_000_000} MB; not analyzed")
    if b"\x00" in data:
        raise SourceError("binary file (NUL bytes)")
    try:
        encoding = detect_encoding(data)
        return SourceText(data.decode(encoding), encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"not valid text in its declared encoding: {exc}") from exc


def write_fixed_source(path: str, text: str, encoding: str) -> None:
    """Replace the file at ``path`` with ``text`` encoded as it was read, in one step; the file
    is unchanged when this raises (:class:`SourceError` or ``OSError``)."""
    info = os.stat(path)
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise SourceError("the file is read-only; not fixed")
    try:
        data = text.encode(encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        raise SourceError(f"the fix cannot be written in the file's encoding ({encoding}): {exc}") from exc
    folder = os.path.dirname(os.path.abspath(path))
    import tempfile  # noqa: PLC0415 - here: a check that fixes nothing need not load it (start-up time)

    handle = tempfile.NamedTemporaryFile(dir=folder, prefix=".graphlife-fix-", delete=False)  # noqa: SIM115
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, stat.S_IMODE(info.st_mode))
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)  # the user's file was not touched; neither is a stray copy left
        raise
