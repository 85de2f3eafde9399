"""A mixed workload for the load tests: each client remembers, recalls, reads, corrects, confirms."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any

OPS = ("remember", "recall", "read_memory", "correct", "confirm_memory")
WEIGHTS = (0.25, 0.25, 0.2, 0.15, 0.15)
TOPICS = ("coffee", "python", "travel", "garden", "budget", "music", "kernel", "weather", "Tokyo", "Alice")
WORDS = ("red", "blue", "quick", "slow", "north", "south", "early", "late", "big", "small", "new", "old")


@dataclass
class ClientLog:
    """What one client did and what it expects to find."""

    cid: int
    rng: random.Random
    live: dict[str, str] = field(default_factory=dict)  # memory id -> current content
    superseded: dict[str, str] = field(default_factory=dict)  # old -> new
    latencies: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    errors: list[str] = field(default_factory=list)
    n: int = 0

    def next_call(self) -> tuple[str, dict[str, Any]]:
        """The next (tool, arguments); falls back to remember while this client owns nothing."""
        self.n += 1
        op = self.rng.choices(OPS, WEIGHTS)[0]
        if op in ("read_memory", "correct", "confirm_memory") and not self.live:
            op = "remember"
        if op == "remember":
            topic = self.rng.choice(TOPICS)
            words = " ".join(self.rng.choice(WORDS) for _ in range(5))
            return op, {"content": f"client {self.cid} note {self.n} about {topic}: {words}",
                        "keys": [topic, self.rng.choice(TOPICS), f"client{self.cid}"]}
        if op == "recall":
            return op, {"query": self.rng.choice(TOPICS)}
        mid = self.rng.choice(sorted(self.live))
        if op == "read_memory":
            return op, {"memory_id": mid}
        if op == "correct":
            return op, {"memory_id": mid, "content": f"client {self.cid} correction {self.n}: {self.live[mid]}"[:400]}
        return op, {"memory_id": mid, "evidence": f"checked by client {self.cid} at step {self.n}"}

    def record(self, op: str, args: dict[str, Any], result: dict[str, Any], seconds: float) -> None:
        self.latencies[op].append(seconds)
        if op == "remember":
            self.live[result["memory_id"]] = args["content"]
        elif op == "correct":
            self.live.pop(args["memory_id"])
            self.live[result["memory_id"]] = args["content"]
            self.superseded[args["memory_id"]] = result["memory_id"]
        elif op == "read_memory" and result["content"] != self.live[args["memory_id"]]:
            self.errors.append(f"read_memory {args['memory_id']}: content {result['content']!r} is not the last write")
        elif op == "confirm_memory" and result["memory_id"] != args["memory_id"]:
            self.errors.append(f"confirm_memory returned {result['memory_id']}")


def percentiles(logs: list[ClientLog]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for op in OPS:
        xs = sorted(x for log in logs for x in log.latencies[op])
        if not xs:
            continue
        q = statistics.quantiles(xs, n=100, method="inclusive") if len(xs) > 1 else [xs[0]] * 99
        out[op] = {"n": len(xs), "p50_ms": round(q[49] * 1000, 1), "p95_ms": round(q[94] * 1000, 1),
                   "max_ms": round(xs[-1] * 1000, 1)}
    return out


def check_nothing_lost(logs: list[ClientLog], read: Any, active_ids: set[str]) -> int:
    """Every client's last write of each memory is readable; the active set is exactly theirs."""
    expected: dict[str, str] = {}
    for log in logs:
        expected.update(log.live)
    for mid, content in expected.items():
        got = read(mid)
        assert got is not None, f"lost write: {mid}"
        assert got["content"] == content, (mid, got["content"], content)
    for log in logs:
        for old in log.superseded:
            got = read(old)
            assert got is None or got["superseded_by"] is not None, f"{old} should be superseded"
    assert active_ids == set(expected), (
        f"active memories differ: {len(active_ids - set(expected))} unexpected, {len(set(expected) - active_ids)} missing")
    return len(expected)
