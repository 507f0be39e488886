"""Seeded, time-bounded fuzzing of the language server: its copy of a document never drifts.

Random incremental edits (CR LF, CR and LF line breaks, emoji, so UTF-16 positions
differ from code points, form feeds, U+2028, U+0085 and ``\\v``) are interleaved with
hover, code actions, resolve and cancellation, as a fast typist with a busy
editor would send them. The client keeps its own copy, computed here from LSP's
rules and not with the server's code. At the end the server is alive, answered
every request, logged no error, holds the client's text, and its diagnostics are
those of ``graphlife check`` on that text.

``GRAPHLIFE_FUZZ_SECONDS`` and ``GRAPHLIFE_FUZZ_SEED`` change the budget and the seed.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from raw_lsp import RawServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SECONDS = float(os.environ.get("GRAPHLIFE_FUZZ_SECONDS", "20"))
SEED = int(os.environ.get("GRAPHLIFE_FUZZ_SEED", "21"))
#: Error codes a request may get back instead of a result: cancelled, content modified.
EXPECTED_ERRORS = {-32800, -32801}
ODD = ["\x0c", "\u2028", "\u2029", "\x85", "\x0b", "\x1c"]
EMOJI = ["😀", "🐍", "🔥", "é", "日本"]
BREAKS = ["\n", "\r\n", "\r"]
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def lsp_lines(text: str) -> list[tuple[int, str]]:
    """(offset, content) of each LSP line: split at LF, CR LF and CR only."""
    lines, start = [], 0
    for match in LINE_BREAK.finditer(text):
        lines.append((start, text[start:match.start()]))
        start = match.end()
    lines.append((start, text[start:]))
    return lines


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position(text: str, offset: int) -> dict[str, int]:
    """The LSP position (UTF-16 character) of code-point ``offset``."""
    for number, (start, content) in reversed(list(enumerate(lsp_lines(text)))):
        if start <= offset:
            return {"line": number, "character": utf16(content[: offset - start])}
    raise AssertionError(offset)


def not_inside_crlf(text: str, offset: int) -> int:
    """A client never puts a position between the CR and the LF of one line break."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


class Fuzzer:
    """The client side: its text, its version, the requests still unanswered."""

    def __init__(self, server: RawServer, uri: str, text: str, seed: int) -> None:
        self.server, self.uri, self.text = server, uri, text
        self.random = random.Random(seed)
        self.version = 1
        self.pending: dict[Any, str] = {}
        self.counts: Counter[str] = Counter()
        self.undo: tuple[int, int] | None = None

    def offset(self) -> int:
        return not_inside_crlf(self.text, self.random.randrange(len(self.text) + 1))

    def edit(self, start: int, end: int, new_text: str, past_line_end: bool = False) -> None:
        """Replace ``text[start:end]`` by ``new_text``, sent as one incremental change."""
        rng = {"start": position(self.text, start), "end": position(self.text, end)}
        if past_line_end:  # LSP: a character past the line's end means the line's end
            rng["start"]["character"] = rng["end"]["character"] = rng["end"]["character"] + 7
        self.text = self.text[:start] + new_text + self.text[end:]
        self.version += 1
        self.server.change(self.uri, self.version, rng, new_text)
        self.counts["edits"] += 1

    def random_edit(self) -> None:
        """One edit that keeps the program valid, or junk that the next edit takes back."""
        if self.undo is not None:
            start, end = self.undo
            self.undo = None
            self.edit(start, end, "")
            return
        lines = lsp_lines(self.text)
        number = self.random.randrange(len(lines))
        start, content = lines[number]
        choice = self.random.randrange(7)
        if choice == 0:  # a comment line with emoji and odd breaks
            comment = f"# fz {self.random.choice(EMOJI)}{self.random.choice(ODD)}x{self.random.choice(BREAKS)}"
            self.edit(start, start, comment)
        elif choice == 1:  # a comment at the line's end, sometimes sent one past it
            comment = f"  # {self.random.choice(EMOJI)} {self.random.choice(ODD)}"
            end = start + len(content)
            self.edit(end, end, comment, past_line_end=self.random.random() < 0.5)
        elif choice == 2 and number + 1 < len(lines):  # another line break style
            end = start + len(content)
            self.edit(end, lines[number + 1][0], self.random.choice(BREAKS))
        elif choice == 3:  # junk (a syntax error for one version), taken back next time
            junk = "".join(self.random.choice(["(", ":", "'", *EMOJI, *ODD, "\r\n", "x"]) for _ in range(3))
            at = self.offset()
            self.edit(at, at, junk)
            self.undo = (at, at + len(junk))
        elif choice == 4:  # the bug and its fix, in turn
            bug, fixed = "D(fake)", "D(fake.detach())"
            at = self.text.find(bug)
            if at >= 0:
                self.edit(at, at + len(bug), fixed)
            elif (at := self.text.find(fixed)) >= 0:
                self.edit(at, at + len(fixed), bug)
        elif choice == 5 and content.startswith("# fz"):  # a fuzz comment line goes again
            end = lines[number + 1][0] if number + 1 < len(lines) else len(self.text)
            self.edit(start, end, "")
        else:  # a range over several lines replaced by itself
            first, second = sorted((self.offset(), self.offset()))
            self.edit(first, second, self.text[first:second])

    def request(self, method: str, params: dict[str, Any], kind: str) -> Any:
        message = self.server.request_message(method, params)
        self.server.send(message)
        self.pending[message["id"]] = kind
        self.counts[kind] += 1
        return message["id"]

    def random_request(self) -> None:
        at = position(self.text, self.offset())
        if self.random.random() < 0.1:
            at["character"] += 50  # past the line's end
        document = {"uri": self.uri}
        choice = self.random.randrange(4)
        if choice == 0:
            self.request("textDocument/hover", {"textDocument": document, "position": at}, "hover")
        elif choice in (1, 2):
            if choice == 2 and (bug := self.text.rfind("loss_g.backward()")) >= 0:
                at = position(self.text, bug)  # the line of the finding: there are fixes to resolve
            end = position(self.text, self.offset())
            first, last = sorted((at, end), key=lambda p: (p["line"], p["character"]))
            params = {"textDocument": document, "range": {"start": first, "end": last}, "context": {"diagnostics": []}}
            msg_id = self.request("textDocument/codeAction", params, "codeAction")
            if choice == 2:  # wait for the list and resolve its first action
                actions = self.answer(msg_id).get("result") or []
                if actions:
                    self.request("codeAction/resolve", actions[0], "resolve")
        else:  # asked then cancelled at once: it must still be answered (cancelled or not)
            msg_id = self.request("textDocument/hover", {"textDocument": document, "position": at}, "cancelled")
            self.server.notify("$/cancelRequest", {"id": msg_id})

    def answer(self, msg_id: Any) -> dict[str, Any]:
        response = self.server.response(msg_id, timeout=60)
        kind = self.pending.pop(msg_id)
        error = response.get("error")
        assert error is None or error["code"] in EXPECTED_ERRORS, (kind, error)
        return response

    def drain(self) -> None:
        for msg_id in list(self.pending):
            self.answer(msg_id)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def check_findings(path: Path) -> Counter[tuple[str, int, str]]:
    result = subprocess.run(
        [sys.executable, "-m", "graphlife", "check", "--format", "json", "--no-cache", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    return Counter((f["code"], f["line"], f["message"]) for f in json.loads(result.stdout)["findings"])


def test_random_edits_and_requests_leave_the_server_alive_and_in_step(tmp_path: Path) -> None:
    source = (FIXTURES / "GL101" / "bad_gan_discriminator_no_detach.py").read_text(encoding="utf-8")
    source = source.replace("LATENT = 8\n", "LATENT = 8  # 😀 latent\x0c\r\n\u2028# odd\r").replace("\n\n", "\r\n\n")
    path = tmp_path / "gan.py"
    uri = path.as_uri()
    server = RawServer(GRAPHLIFE_LSP_TEST_STATE="1")
    try:
        server.initialize(tmp_path.as_uri())
        server.open(uri, source)
        fuzzer = Fuzzer(server, uri, source, SEED)
        rss_start = rss_kb(server.process.pid)
        started = time.monotonic()
        while time.monotonic() - started < SECONDS:
            for _ in range(fuzzer.random.randrange(1, 6)):
                fuzzer.random_edit()
            for _ in range(fuzzer.random.randrange(0, 4)):
                fuzzer.random_request()
            if len(fuzzer.pending) > 40:
                fuzzer.drain()
        if fuzzer.undo is not None:
            fuzzer.random_edit()
        fuzzer.drain()
        elapsed = time.monotonic() - started

        assert server.process.poll() is None
        state = server.request("$/graphlife/testState", {"uri": uri})["result"]
        assert state["text"] == fuzzer.text
        assert state["futures"] <= 2

        version = fuzzer.version
        server.wait(
            lambda: any(n["method"] == "textDocument/publishDiagnostics" and n["params"].get("version") == version
                        for n in server.notifications),
            60, f"diagnostics of version {version}",
        )
        published = [n["params"] for n in server.notifications
                     if n["method"] == "textDocument/publishDiagnostics" and n["params"].get("version") == version][-1]
        # Findings carry their rule's code; a syntax error or skipped work (graphlife.showSyntaxErrors,
        # lsp/unanalyzed.py) has none and is not a finding of `graphlife check`.
        served = Counter((d["code"], d["range"]["start"]["line"] + 1, d["message"]) for d in published["diagnostics"]
                         if "code" in d)
        path.write_bytes(fuzzer.text.encode("utf-8"))
        assert served == check_findings(path)

        errors = [n["params"]["message"] for n in server.notifications
                  if n["method"] == "window/logMessage" and n["params"]["type"] == 1]
        assert errors == []
        rss_end = rss_kb(server.process.pid)
        assert server.stop() == 0
    finally:
        server.kill()
    requests = sum(count for kind, count in fuzzer.counts.items() if kind != "edits")
    print(f"\nfuzz: seed {SEED}, {fuzzer.counts['edits']} edits, {requests} requests ({dict(fuzzer.counts)}), "
          f"{elapsed:.1f} s, {len(served)} findings at the end, RSS {rss_start // 1024} -> {rss_end // 1024} MB, "
          "crashes 0")
