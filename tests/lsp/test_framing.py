"""The framing layer alone: messages come out whole however the bytes are cut, and broken
frames cost only themselves (the server-level tests are in test_protocol_robustness.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from graphlife.lsp import framing
from graphlife.lsp.framing import FrameReader, decode_body


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def message(number: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"n": number, "text": "é😀"}}).encode()


def read_all(data: bytes, chunk: int) -> tuple[list, list[str]]:
    """Every decoded message of ``data`` fed ``chunk`` bytes at a time, as the server's loop
    decodes them, and the problems reported."""
    problems: list[str] = []

    async def run() -> list:
        position = 0

        async def read_chunk(size: int) -> bytes:
            nonlocal position
            piece = data[position:position + min(size, chunk)]
            position += len(piece)
            return piece

        reader = FrameReader(read_chunk, problems.append)
        out = []
        while (body := await reader.next_body()) is not None:
            decoded = decode_body(body)
            if decoded is None:
                reader.give_back(body)
                continue
            value, rest = decoded
            if rest:
                reader.give_back(rest)
            out.append(value["params"]["n"])
        return out

    return asyncio.run(run()), problems


@pytest.mark.parametrize("chunk", [1, 3, 7, 64 * 1024])
def test_messages_come_out_whole_however_the_stream_is_cut(chunk: int) -> None:
    data = b"".join(frame(message(n)) for n in range(5))
    data = data.replace(b"\r\n\r\n", b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", 1)
    assert read_all(data, chunk) == ([0, 1, 2, 3, 4], [])


@pytest.mark.parametrize("chunk", [1, 5, 64 * 1024])
def test_each_broken_frame_costs_at_most_itself(chunk: int) -> None:
    data = b"".join([
        frame(message(0)),
        b"\x00\xffnoise\r\n",                                     # stray bytes
        frame(message(1), len(message(1)) - 4),                   # too short: lost
        frame(message(2)),
        frame(message(3), len(message(3)) + 6),                   # too long: recovered
        message(4),                                               # no header: lost
        frame(message(5)),
        b"Content-Length: 10\r\n" + frame(message(6)),            # no blank line: its successor is read
        b"Content-Length: 99999999999999\r\n\r\n" + message(7),   # over the limit: refused unread
        frame(message(8)),
    ])
    numbers, problems = read_all(data, chunk)
    assert numbers == [0, 2, 3, 5, 6, 8]
    assert any("over the limit" in p for p in problems)


def test_a_huge_length_is_not_read_into_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "MAX_BODY_BYTES", 100)
    big = json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"n": -1, "pad": "x" * 200}}).encode()
    numbers, problems = read_all(frame(big) + frame(message(1)), 64 * 1024)
    assert numbers == [1]
    assert any("over the limit" in p for p in problems)
