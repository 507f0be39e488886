"""A small Debug Adapter Protocol client over a socket, for driving real debugpy sessions.

The VS Code client does the same thing (evaluate the probe in the top frame on
``stopped``); these tests check the probe through the very path the editor
uses: ``evaluate`` with ``context: "repl"`` and ``format: {"rawString": true}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

PROBE = Path(__file__).resolve().parents[2] / "server" / "graphlife" / "debug" / "probe.py"


def probe_expression(exception: str | None = None, function: str = "snapshot_json", arg: str | None = None) -> str:
    """The expression the client evaluates in the stopped frame (leaves no name behind)."""
    extra = f", exception={exception!r}" if exception else ""
    if arg is not None:
        extra = f", {arg!r}"
    return (f"__import__('runpy').run_path({str(PROBE)!r})[{function!r}]"
            f"({{**globals(), **locals()}}{extra})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DapSession:
    """One debuggee started under ``debugpy --listen --wait-for-client`` and a client attached to it."""

    def __init__(self, script: Path, timeout: float = 60.0):
        self.timeout = timeout
        self.port = _free_port()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-Xfrozen_modules=off", "-m", "debugpy", "--listen", f"127.0.0.1:{self.port}",
             "--wait-for-client", str(script)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(script.parent),
        )
        self.sock = self._connect()
        self.seq = 0
        self.responses: dict[int, dict] = {}
        self.events: queue.Queue[dict] = queue.Queue()
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.1)

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while True:
                head, sep, rest = buf.partition(b"\r\n\r\n")
                if not sep:
                    break
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                if len(rest) < length:
                    break
                message = json.loads(rest[:length])
                buf = rest[length:]
                if message["type"] == "response":
                    with self.cond:
                        self.responses[message["request_seq"]] = message
                        self.cond.notify_all()
                elif message["type"] == "event":
                    self.events.put(message)

    def send(self, command: str, **arguments) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def response(self, seq: int) -> dict:
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while seq not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no response to request {seq}")
                self.cond.wait(left)
            return self.responses.pop(seq)

    def request(self, command: str, **arguments) -> dict:
        reply = self.response(self.send(command, **arguments))
        if not reply.get("success"):
            raise RuntimeError(f"{command} failed: {reply.get('message')} {reply.get('body')}")
        return reply.get("body") or {}

    def wait_event(self, name: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {name} event")
            event = self.events.get(timeout=left)
            if event["event"] == name:
                return event

    def start(self, breakpoints: dict[Path, list[int]], exceptions: list[str] = ()) -> None:
        """initialize, attach, breakpoints, configurationDone (the order VS Code uses)."""
        self.request("initialize", clientID="graphlife-tests", adapterID="debugpy", linesStartAt1=True,
                     columnsStartAt1=True, pathFormat="path", supportsRunInTerminalRequest=False)
        attach = self.send("attach", justMyCode=True, connect={"host": "127.0.0.1", "port": self.port})
        self.wait_event("initialized")
        for path, lines in breakpoints.items():
            self.request("setBreakpoints", source={"path": str(path)}, breakpoints=[{"line": n} for n in lines])
        self.request("setExceptionBreakpoints", filters=list(exceptions))
        self.request("configurationDone")
        self.response(attach)

    def top_frame(self, thread_id: int) -> dict:
        return self.request("stackTrace", threadId=thread_id, startFrame=0, levels=20)["stackFrames"][0]

    def evaluate(self, expression: str, frame_id: int) -> str:
        body = self.request("evaluate", expression=expression, frameId=frame_id, context="repl",
                            format={"rawString": True})
        return body["result"]

    def finish(self, thread_id: int) -> tuple[str, str]:
        """Continue to the end (past any further stop); the debuggee's stdout and stderr."""
        try:
            self.request("continue", threadId=thread_id)
            deadline = time.monotonic() + self.timeout
            while self.proc.poll() is None and time.monotonic() < deadline:
                try:
                    event = self.events.get(timeout=0.5)
                except queue.Empty:
                    continue
                if event["event"] == "stopped":
                    self.request("continue", threadId=event["body"]["threadId"])
                elif event["event"] in ("terminated", "exited"):
                    break
            with contextlib.suppress(OSError, RuntimeError, TimeoutError):
                self.request("disconnect", terminateDebuggee=False)
            out, err = self.proc.communicate(timeout=self.timeout)
        finally:
            self.close()
        return out.decode(errors="replace"), err.decode(errors="replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def marked_line(script: Path, marker: str = "# stop here") -> int:
    """The 1-based line holding ``marker`` (where the test sets its breakpoint)."""
    for number, text in enumerate(script.read_text().splitlines(), 1):
        if marker in text:
            return number
    raise LookupError(marker)


def last_exception_line(stderr: str) -> str | None:
    lines = [line for line in stderr.splitlines() if line and not line.startswith((" ", "\t", "Traceback"))]
    errors = [line for line in lines if line.split(":", 1)[0].endswith("Error")]
    return errors[-1] if errors else None
