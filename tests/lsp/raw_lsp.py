"""The real ``python -m graphlife lsp`` over pipes, driven byte by byte.

pytest-lsp's client only sends well-formed messages; the protocol tests need to
send broken frames, so this helper writes raw bytes to the server's stdin and
parses its stdout into messages in a thread.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from lsp_helpers import SERVER_COMMAND, server_env_with


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawServer:
    """A server process, its messages (``messages``, in order) and helpers to send and wait."""

    def __init__(self, **env: str) -> None:
        self.process = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=server_env_with(**env),
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        #: The whole response to the server's ``workspace/configuration`` requests, when set.
        self.configuration_reply: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self._ids = itertools.count(1)
        self.stderr = bytearray()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.startswith(b"Content-Length:"):
                    length = int(line.split(b":")[1])
                if line == b"\r\n" and length is not None:
                    break
            self.messages.put(json.loads(stream.read(length)))

    def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := stream.read1(4096):
            self.stderr += chunk

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(frame(message))

    def request_message(self, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            message["params"] = params
        return message

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send a request and wait for its response (the whole message, ``result`` or ``error``)."""
        message = self.request_message(method, params)
        self.send(message)
        return self.response(message["id"], timeout)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def open(self, uri: str, text: str) -> None:
        document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": document})

    def change(self, uri: str, version: int, rng: dict[str, Any], text: str) -> None:
        """One incremental ``didChange``: ``rng`` (an LSP range) replaced by ``text``."""
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": rng, "text": text}]},
        )

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The response to ``msg_id`` (the whole message, ``result`` or ``error``)."""
        self.wait(lambda: msg_id in self.responses, timeout, f"a response to {msg_id!r}")
        return self.responses.pop(msg_id)

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Handle the server's messages until ``condition()`` holds: responses go to ``responses``,
        notifications to ``notifications``, and the server's own requests are answered."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stderr = self.stderr.decode(errors="replace")
                raise AssertionError(f"waited {timeout} s for {what}; server stderr:\n{stderr}")
            try:
                message = self.messages.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if "method" in message and "id" in message:  # the server asks (configuration, registration)
                if message["method"] == "workspace/configuration" and self.configuration_reply is not None:
                    self.send(self.configuration_reply(message))
                    continue
                items = (message.get("params") or {}).get("items", [])
                result: Any = [{} for _ in items] if message["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "method" in message:
                self.notifications.append(message)
            else:
                self.responses[message.get("id")] = message

    def initialize(self, root: str | None = None, configuration: bool = False) -> dict[str, Any]:
        """``initialize`` (UTF-16 positions, lazily resolved code actions, ``workspace/configuration``
        when asked) and ``initialized``."""
        capabilities: dict[str, Any] = {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}},
        }
        if configuration:
            capabilities["workspace"] = {"configuration": True}
        response = self.request("initialize", {"processId": os.getpid(), "rootUri": root, "capabilities": capabilities})
        self.notify("initialized", {})
        return response

    def stop(self, timeout: float = 20.0) -> int:
        """``shutdown`` then ``exit``; the process's exit code."""
        self.request("shutdown")
        self.notify("exit", None)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
