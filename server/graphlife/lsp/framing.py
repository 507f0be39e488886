"""LSP base protocol framing: a byte stream in, message bodies out, resynchronising after errors.

Why not pygls' own loop: it matches ``Content-Length`` only at the very start of
a header line, so after one body of the wrong length the next header is glued
to the rest of that body and never matches again: the server stops answering,
even ``shutdown`` and ``exit``. It also reads a body of any announced size in
one allocation, so a huge ``Content-Length`` kills the process.

Here the stream is scanned for the next ``Content-Length:`` header whatever
comes before it (stray bytes are skipped and logged), a body over
:data:`MAX_BODY_BYTES` is refused without being read into memory, and a body
that is not one JSON value gives its bytes back to the scanner, so the message
that a wrong length swallowed is still found.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

logger = logging.getLogger("graphlife.lsp")

#: The header every LSP message starts with.
MARKER = b"Content-Length:"
#: End of the header block.
HEADER_END = b"\r\n\r\n"
#: A header block longer than this is not one (LSP defines two short headers).
MAX_HEADER_BYTES = 4096
#: The largest message body accepted (a 5 MB source JSON-escaped, with room to spare).
MAX_BODY_BYTES = 64 * 1024 * 1024
#: Bytes asked of the stream at a time.
CHUNK_BYTES = 64 * 1024

#: Reads at most ``n`` bytes, at least one unless the stream ended (then ``b""``).
ReadChunk = Callable[[int], Awaitable[bytes]]
#: Called with a description of each framing problem (the server logs it for the user).
Report = Callable[[str], None]


class FrameReader:
    """Bodies of LSP messages from a byte stream; ``None`` once the stream has ended."""

    def __init__(self, read_chunk: ReadChunk, report: Report) -> None:
        self._read_chunk = read_chunk
        self._report = report
        self._buffer = bytearray()
        self._ended = False

    async def _fill(self) -> bool:
        """Read more into the buffer; ``False`` when the stream has ended."""
        if self._ended:
            return False
        chunk = await self._read_chunk(CHUNK_BYTES)
        if not chunk:
            self._ended = True
            return False
        self._buffer += chunk
        return True

    def give_back(self, data: bytes) -> None:
        """Put ``data`` in front of what is still unread (a body that was not a message)."""
        self._buffer[:0] = data

    async def _find_marker(self) -> bool:
        """Drop everything before the next ``Content-Length:``; ``False`` at the end of the stream."""
        skipped = 0
        while True:
            at = self._buffer.find(MARKER)
            if at >= 0:
                skipped += at
                stray = bytes(self._buffer[:at])
                del self._buffer[:at]
                break
            keep = len(MARKER) - 1  # a marker may be split across two reads
            if len(self._buffer) > keep:
                skipped += len(self._buffer) - keep
                del self._buffer[: len(self._buffer) - keep]
            if not await self._fill():
                skipped += len(self._buffer)
                self._buffer.clear()
                stray = b""
                break
        if skipped and not _only_other_headers(stray, skipped):
            self._report(f"skipped {skipped} bytes that were not a message")
        return bool(self._buffer)

    async def _header_block(self) -> bytes | None:
        """The header block at the front of the buffer (which starts with the marker), or
        ``None`` when it is not one (then the marker's first byte is dropped)."""
        while True:
            end = self._buffer.find(HEADER_END)
            if 0 <= end <= MAX_HEADER_BYTES:
                block = bytes(self._buffer[:end])
                del self._buffer[: end + len(HEADER_END)]
                return block
            if end > MAX_HEADER_BYTES or len(self._buffer) > MAX_HEADER_BYTES + len(HEADER_END):
                self._report("a Content-Length header without the blank line that ends the headers")
                del self._buffer[:1]
                return None
            if not await self._fill():
                return None

    async def next_body(self) -> bytes | None:
        """The next message body, or ``None`` once the stream has ended."""
        while True:
            if not await self._find_marker():
                return None
            block = await self._header_block()
            if block is None:
                if self._ended and not self._buffer:
                    return None
                continue
            length = _content_length(block, self._report)
            if length is None:
                self._report(f"a malformed header block: {block[:200]!r}")
                continue
            if length > MAX_BODY_BYTES:
                self._report(
                    f"a message of {length:,} bytes is over the limit of {MAX_BODY_BYTES:,}: skipped"
                )
                continue
            while len(self._buffer) < length:
                if not await self._fill():
                    self._report(f"the stream ended {length - len(self._buffer)} bytes before the message's end")
                    return None
            body = bytes(self._buffer[:length])
            del self._buffer[:length]
            return body


def _content_length(block: bytes, report: Report) -> int | None:
    """The length a header block announces, or ``None`` if it is not a number. The last
    ``Content-Length`` wins: an earlier one belongs to a message whose blank line was missing."""
    at = block.rfind(MARKER)
    if at > 0:
        report(f"skipped {at} bytes of a message without the blank line after its headers")
    value = block[at + len(MARKER):].split(b"\r\n", 1)[0].strip()
    if not value.isdigit() or len(value) > 15:
        return None
    return int(value)


def _only_other_headers(stray: bytes, skipped: int) -> bool:
    """Whether what was skipped is only headers LSP allows before ``Content-Length`` (``Content-Type``)."""
    if skipped != len(stray):
        return False
    lines = [line for line in stray.split(b"\r\n") if line]
    return bool(lines) and all(line.startswith(b"Content-Type:") for line in lines)


def decode_body(body: bytes) -> tuple[Any, bytes] | None:
    """The JSON value at the start of ``body`` and the bytes after it, or ``None`` when there
    is none. A body whose announced length was too long holds the start of the next message
    after the JSON value; those bytes go back to the :class:`FrameReader`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    stripped = text.lstrip()
    try:
        value, end = json.JSONDecoder().raw_decode(stripped)
    except (json.JSONDecodeError, RecursionError):
        return None
    rest = stripped[end:]
    return value, rest.encode("utf-8") if rest.strip() else b""
