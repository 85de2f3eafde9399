"""The bookkeeping of the crash tests: what was acknowledged, and checking a reopened store against it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Model:
    """What the store must hold, from acknowledged writes only."""

    live: dict[str, str] = field(default_factory=dict)  # active memory id -> content
    superseded: dict[str, str] = field(default_factory=dict)  # old id -> new id (old still readable)
    prev: dict[str, str] = field(default_factory=dict)  # new id -> old id
    gone: set[str] = field(default_factory=set)
    acked: int = 0
    unacked_applied: int = 0
    unacked_absent: int = 0

    def ack(self, msg: dict[str, Any]) -> None:
        op = msg["op"]
        if op == "batch":
            for mid, content in zip(msg["ids"], msg["contents"], strict=True):
                self.live[mid] = content
        elif op == "correct":
            old, new = msg["old"], msg["new"]
            self.live.pop(old)
            self.live[new] = msg["content"]
            older = self.prev.pop(old, None)
            if older is not None:  # one step of history: the generation before goes
                self.superseded.pop(older, None)
                self.gone.add(older)
            self.superseded[old] = new
            self.prev[new] = old
        elif op == "forget":
            mid = msg["id"]
            self.live.pop(mid)
            self.gone.add(mid)
            older = self.prev.pop(mid, None)
            if older is not None:
                self.superseded.pop(older, None)
                self.gone.add(older)
        else:  # pragma: no cover
            raise AssertionError(op)


def memory(graph: Any, mid: str) -> dict[str, Any] | None:
    rows = graph.store.query("memory/get", id=mid)
    return rows[0]["m"] if rows else None


def by_content(graph: Any, contents: list[str]) -> dict[str, dict[str, Any]]:
    rows = graph.store.raw("MATCH (m:Memory) WHERE m.content IN $c RETURN m", {"c": contents})
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        assert r["m"]["content"] not in out, f"content stored twice: {r['m']['content']!r}"
        out[r["m"]["content"]] = r["m"]
    return out


def resolve_pending(graph: Any, model: Model, begin: dict[str, Any]) -> str:
    """An unacknowledged write must be fully applied or fully absent; fold it into the model."""
    op = begin["op"]
    if op == "batch":
        found = by_content(graph, begin["contents"])
        assert len(found) in (0, len(begin["contents"])), (
            f"a batch of {len(begin['contents'])} was partly written ({len(found)} items) after a kill")
        if not found:
            model.unacked_absent += 1
            return "absent"
        assert all(m["active"] for m in found.values())
        model.ack({"op": "batch", "contents": begin["contents"], "ids": [found[c]["id"] for c in begin["contents"]]})
        model.unacked_applied += 1
        return "applied"
    if op == "correct":
        found = by_content(graph, [begin["content"]])
        old = memory(graph, begin["old"])
        assert old is not None, f"the corrected memory {begin['old']} vanished"
        if not found:
            assert old["active"] and old["superseded_by"] is None, f"half-applied correct: {old}"
            model.unacked_absent += 1
            return "absent"
        new = found[begin["content"]]
        assert new["active"] and new["supersedes"] == old["id"], new
        assert not old["active"] and old["superseded_by"] == new["id"], old
        model.ack({"op": "correct", "old": old["id"], "new": new["id"], "content": begin["content"]})
        model.unacked_applied += 1
        return "applied"
    if op == "forget":
        m = memory(graph, begin["id"])
        if m is not None:
            assert m["active"], m
            model.unacked_absent += 1
            return "absent"
        model.ack({"op": "forget", "id": begin["id"]})
        model.unacked_applied += 1
        return "applied"
    raise AssertionError(op)


def verify(graph: Any, model: Model) -> None:
    """Every acknowledged write is there, nothing else is, and the invariants hold."""
    from keymem.admin.invariants import check_invariants

    for mid, content in model.live.items():
        m = memory(graph, mid)
        assert m is not None, f"acknowledged memory {mid} lost"
        assert m["active"] and m["superseded_by"] is None, m
        assert m["content"] == content, (m["content"], content)
    for old, new in model.superseded.items():
        m = memory(graph, old)
        assert m is not None and not m["active"] and m["superseded_by"] == new, (old, m)
    for mid in model.gone:
        assert memory(graph, mid) is None, f"forgotten memory {mid} is back"
    active = graph.store.raw("MATCH (m:Memory) WHERE m.active RETURN m.id AS id")
    assert {r["id"] for r in active} == set(model.live), "the store holds active memories nobody acknowledged"
    problems = check_invariants(graph)
    assert problems == [], "\n".join(problems)


class Lines:
    """A child's stdout, line by line, on a thread (so reads never block the killer)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        self.lines: list[str] = []
        assert proc.stdout is not None
        self._t = threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True)
        self._t.start()

    def _pump(self, fh: Any) -> None:
        for line in fh:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def wait_for(self, prefix: str, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                return None
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        return None

    def drain(self) -> list[str]:
        self._t.join(timeout=10)
        while True:
            try:
                line = self.q.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return self.lines


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def kill(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def python() -> str:
    return sys.executable


def fold(lines: list[str], model: Model) -> dict[str, Any] | None:
    """Apply the ACKs of one run to the model; return the BEGIN left without an ACK, if any."""
    pending: dict[str, Any] | None = None
    for line in lines:
        tag, _, payload = line.partition(" ")
        if tag == "BEGIN":
            pending = json.loads(payload)
        elif tag == "ACK":
            model.ack(json.loads(payload))
            model.acked += 1
            pending = None
    return pending
