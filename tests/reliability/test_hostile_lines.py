"""Every request line gets an answer, over stdio and over the daemon socket (issue 12, item 2).

The SDK client cannot produce these lines, so the tests write raw bytes: to a ``keymem`` stdio
server's stdin (a real subprocess bridged to a real daemon) and to the daemon's Unix socket.
Before the fix, a JSON-RPC line with a lone surrogate escape (``"\\ud800"``, which JavaScript's
``JSON.stringify`` emits for a broken pair) in any string was dropped by the mcp 2.3 stdio
transport and its client waited forever although the id was readable; a line that was not
JSON got no -32700 either; and the daemon closed the connection after a line that was not JSON.

Required now: a parse error (-32700, id null) when no id can be read, an invalid-params error
(-32602) naming the field when it can, -32600 for other invalid requests, and the server keeps
serving on the same stream; nothing of the refused lines is stored.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time
from typing import Any

import pytest

from keymem.server.protocol import read_token
from tests.e2e.support import SERVER_CMD, Keymem

pytestmark = pytest.mark.timeout(180)

ANSWER_S = 20.0  # generous on a loaded machine; before the fix the answers never came


def line(obj: dict[str, Any]) -> bytes:
    """A JSON line as a JavaScript client would write it: lone surrogates stay \\uXXXX escapes."""
    return json.dumps(obj, ensure_ascii=True).encode() + b"\n"


def call(rid: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}}


class Stdio:
    """A keymem stdio server read and written as raw bytes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(SERVER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.buf = b""
        self.answers: dict[Any, dict[str, Any]] = {}
        self.nulls: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _read_one(self, deadline: float) -> bool:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return False
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\n")
        msg = json.loads(raw)
        if msg.get("id") is None:
            self.nulls.append(msg)
        else:
            self.answers[msg["id"]] = msg
        return True

    def wait(self, ids: list[Any], nulls: int = 0) -> None:
        deadline = time.monotonic() + ANSWER_S
        while not (all(i in self.answers for i in ids) and len(self.nulls) >= nulls):
            if not self._read_one(deadline):
                missing = [i for i in ids if i not in self.answers]
                raise AssertionError(f"no answer within {ANSWER_S:.0f} s for ids {missing} "
                                     f"({len(self.nulls)} of {nulls} id-null answers)")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def test_stdio_answers_every_line(km: Keymem) -> None:
    s = Stdio(km.env)
    try:
        s.send(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        s.wait([1])
        s.send(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        s.send(line(call(2, "remember", {"content": "half a pair \ud800 here", "keys": ["surrogate"]})))
        s.send(line(call("three", "remember_batch", {"items": [
            {"content": "fine", "keys": ["fine"]}, {"content": "fine too", "keys": ["ok", "bad \udfff key"]}]})))
        s.send(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"remember",'
               b'"arguments":{"content":"caf\xe9 latin-1","keys":["cafe"]}}}\n')
        s.send(b"this line is not JSON at all\n")
        s.send(line({"jsonrpc": "2.0", "id": "\ud800", "method": "tools/list"}))
        s.send(b'{"jsonrpc":"2.0","id":6}\n')
        s.send(b"[1, 2, 3]\n")
        s.wait([2, "three", 4, 6], nulls=3)
        a = s.answers
        assert a[2]["error"]["code"] == -32602 and "params.arguments.content" in a[2]["error"]["message"], a[2]
        assert "lone surrogate" in a[2]["error"]["message"]
        assert a["three"]["error"]["code"] == -32602, a["three"]
        assert "params.arguments.items[1].keys[1]" in a["three"]["error"]["message"], a["three"]
        assert a[4]["error"]["code"] == -32602 and "params.arguments.content" in a[4]["error"]["message"], a[4]
        assert "UTF-8" in a[4]["error"]["message"]
        assert a[6]["error"]["code"] == -32600, a[6]
        assert sorted(n["error"]["code"] for n in s.nulls) == [-32700, -32700, -32600], s.nulls
        # still serving: a valid call after all of that, and nothing of the refused ones was stored
        s.send(line(call(7, "remember", {"content": "written after the hostile lines", "keys": ["after"]})))
        s.send(line(call(8, "recall", {"query": "surrogate"})))
        s.send(line({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        s.wait([7, 8, 9])
        assert not a[7]["result"]["isError"], a[7]
        assert len(a[9]["result"]["tools"]) == 10
        s.send(line(call(10, "browse_keys", {})))
        s.wait([10])
        keys = {k["key"] for k in a[10]["result"]["structuredContent"]["keys"]}
        assert keys == {"after"}, keys
    finally:
        s.close()


class Raw:
    """The daemon's socket, written as raw bytes."""

    def __init__(self, km: Keymem) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(ANSWER_S)
        self.sock.connect(str(km.data_dir / "daemon.sock"))
        self.token = read_token(km.data_dir)
        self.buf = b""

    def ask(self, data: bytes) -> dict[str, Any]:
        self.sock.sendall(data)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            assert chunk, f"the daemon closed the connection after {data[:80]!r}"
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\n")
        return json.loads(raw)  # type: ignore[no-any-return]

    def request(self, rid: Any, method: str, params: dict[str, Any]) -> bytes:
        return line({"id": rid, "token": self.token, "method": method, "params": params})


def test_daemon_socket_answers_every_line(daemon: Keymem) -> None:
    r = Raw(daemon)
    try:
        bad = r.ask(b"not json at all\n")
        assert bad["id"] is None and not bad["ok"] and bad["error"]["type"] == "ProtocolError", bad
        bad = r.ask(b"[1, 2]\n")
        assert bad["id"] is None and bad["error"]["type"] == "ProtocolError", bad
        bad = r.ask(r.request(2, "remember", {"content": "a lone \ud800 surrogate", "keys": ["k"]}))
        assert bad["id"] == 2 and bad["error"]["type"] == "InvalidInput", bad
        assert "params.content" in bad["error"]["message"] and "lone surrogate" in bad["error"]["message"], bad
        raw = r.request(3, "remember", {"content": "fine", "keys": ["caf-latin1"]}).replace(b"caf-", b"caf\xe9")
        bad = r.ask(raw)
        assert bad["id"] == 3 and bad["error"]["type"] == "InvalidInput", bad
        assert "params.keys[0]" in bad["error"]["message"] and "UTF-8" in bad["error"]["message"], bad
        bad = r.ask(r.request("\udc00", "ping", {}))
        assert bad["id"] is None and bad["error"]["type"] == "InvalidInput", bad
        ok = r.ask(r.request(5, "ping", {}))  # the same connection still serves
        assert ok["id"] == 5 and ok["ok"], ok
        ok = r.ask(r.request(6, "browse_keys", {}))
        assert ok["ok"] and ok["result"]["keys"] == [], ok  # nothing refused was stored
    finally:
        r.sock.close()
