"""Soak: one daemon at default settings, a long mixed session, zero errors (issue 12, item 1).

Before the checkpoint policy the daemon's 256 MiB buffer pool filled after ~7,700 write
transactions (``read_memory`` alone was one each) and every later call failed. Here one reader
client streams ``read_memory`` (half of them through a key: a Hebbian write each) while a
second client alternates writes (remember / correct / confirm_memory) and ``recall``. Required:
zero errors, the daemon's RSS flat once the store stops growing (the curve is printed and
written to ``soak_figures.json``), no more than 64 MiB above a fresh daemon's on the same store
after a short warm-up (so what the session holds is its data, not leaked state), and after a clean stop the store reopens at the default pool with every
access count exact and the invariants clean.

Sizes (``SOAK_READS``, ``SOAK_WRITES``, ``SOAK_RECALLS``) default to a run of a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants
from keymem.server import client
from keymem.store.db import Store
from tests.e2e.support import Keymem, keymem_env
from tests.reliability.conftest import open_graph

READS = int(os.environ.get("SOAK_READS", "20000"))
WRITES = int(os.environ.get("SOAK_WRITES", "3000"))
RECALLS = int(os.environ.get("SOAK_RECALLS", "3000"))
SEED_MEMORIES = 400
WORDS = ["harbour", "lantern", "orchard", "pepper", "violin", "glacier", "meadow", "copper", "falcon", "thimble",
         "cobalt", "saffron", "quarry", "ember", "lagoon", "walnut", "marble", "juniper", "canyon", "velvet"]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.fixture
def default_km(short_dir: Path, minilm_dir: Path) -> Iterator[Keymem]:
    """A data dir with keymem's default settings (the default 256 MiB buffer pool)."""
    env = keymem_env(short_dir / "data", minilm_dir)
    env.pop("KEYMEM_BUFFER_POOL_MB")
    k = Keymem(short_dir / "data", env)
    try:
        yield k
    finally:
        k.stop_all()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_soak_one_daemon_default_settings(default_km: Keymem, minilm_embedder: Any, tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    km = default_km
    settings = km.settings()
    assert settings.buffer_pool_mb == 256
    client.start_daemon(settings, env=km.env).close()
    pid = int(km.wait_daemon_ready()["pid"])
    seed = client.DaemonClient(settings, start=False)
    targets: list[tuple[str, str]] = []
    for start in range(0, SEED_MEMORIES, 100):
        done = seed.call("remember_batch", {"items": [
            {"content": f"soak memory {i}: the {WORDS[i % 20]} near the {WORDS[(i * 7) % 20]}",
             "keys": [f"soak {i}", WORDS[i % 20]]} for i in range(start, start + 100)]})
        targets += [(r["memory_id"], r["keys"][0]["key_id"]) for r in done["results"]]
    seed.close()

    errors: list[str] = []
    reads: dict[str, int] = {}
    progress = {"reads": 0, "writes": 0, "recalls": 0}
    stop = threading.Event()
    curve: list[dict[str, Any]] = []
    t0 = time.monotonic()

    def reader() -> None:
        c = client.DaemonClient(settings, start=False)
        rng = random.Random(1)
        try:
            for i in range(READS):
                mid, kid = targets[rng.randrange(len(targets))]
                try:
                    view = c.call("read_memory", {"memory_id": mid, "via_key_id": kid if i % 2 else None,
                                                  "namespace": None}, retry=False)
                    reads[mid] = reads.get(mid, 0) + 1
                    if view["access_count"] != reads[mid]:
                        errors.append(f"read {i}: access_count {view['access_count']} after {reads[mid]} reads")
                except Exception as exc:
                    errors.append(f"read {i}: {type(exc).__name__}: {exc}")
                progress["reads"] = i + 1
        finally:
            c.close()

    def writer() -> None:
        c = client.DaemonClient(settings, start=False)
        rng = random.Random(2)
        own: list[str] = []
        recalls = 0
        try:
            for i in range(max(WRITES, RECALLS)):
                try:
                    if i < WRITES:
                        roll = rng.random()
                        if roll < 0.2 and own:
                            j = rng.randrange(len(own))
                            own[j] = c.call("correct", {"memory_id": own[j], "content": f"corrected note {i}"},
                                            retry=False)["memory_id"]
                        elif roll < 0.4:
                            c.call("confirm_memory", {"memory_id": rng.choice(targets)[0], "evidence": f"seen {i}"},
                                   retry=False)
                        else:
                            words = " ".join(rng.choice(WORDS) for _ in range(8))
                            own.append(c.call("remember", {"content": f"note {i}: {words}",
                                                           "keys": [rng.choice(WORDS), f"note {i}"]},
                                              retry=False)["memory_id"])
                        progress["writes"] = i + 1
                    if i < RECALLS:
                        c.call("recall", {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)}"}, retry=False)
                        recalls += 1
                        progress["recalls"] = recalls
                except Exception as exc:
                    errors.append(f"write/recall {i}: {type(exc).__name__}: {exc}")
        finally:
            c.close()

    def sampler() -> None:
        while not stop.wait(2.0):
            curve.append({"s": round(time.monotonic() - t0, 1), "rss_mb": round(rss_kb(pid) / 1024, 1), **progress})

    threads = [threading.Thread(target=f, daemon=True) for f in (reader, writer)]
    watch = threading.Thread(target=sampler, daemon=True)
    watch.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watch.join()
    wall = time.monotonic() - t0
    assert client.stop(settings, timeout=60)

    rss = [p["rss_mb"] for p in curve]
    third = max(1, len(rss) // 3)
    shown = curve[:: max(1, len(curve) // 25)]
    figures: dict[str, Any] = {
        "reads": READS, "writes": WRITES, "recalls": RECALLS, "seed_memories": SEED_MEMORIES,
        "wall_s": round(wall, 1), "errors": len(errors),
        "rss_mb": {"first": rss[0] if rss else None, "after_warmup": rss[third - 1] if rss else None,
                   "max": max(rss, default=None), "last": rss[-1] if rss else None},
        "curve": shown,
    }
    (tmp_path / "soak_figures.json").write_text(json.dumps(figures, indent=2))
    print(f"\nsoak: {json.dumps({k: v for k, v in figures.items() if k != 'curve'})}")
    print("rss curve (s, MiB, reads, writes, recalls): "
          + "; ".join(f"{p['s']:.0f} {p['rss_mb']:.0f} {p['reads']} {p['writes']} {p['recalls']}" for p in shown))
    assert errors == [], f"{len(errors)} errors, first: {errors[:3]}"
    # Once the writer is done the store stops growing: from there on (reads only) RSS stays within
    # 16 MiB of the highest it had reached before (it may dip when a rebuild or checkpoint frees).
    done = [p["writes"] >= WRITES and p["recalls"] >= RECALLS for p in curve]
    tail = [r for r, d in zip(rss, done, strict=True) if d]
    before = [r for r, d in zip(rss, done, strict=True) if not d]
    if len(tail) >= 5 and before:
        assert max(tail) <= max(before) + 16, ("RSS grew during the read-only tail", max(before), max(tail))

    with caplog.at_level(logging.WARNING, logger="keymem.store"):
        Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb).close()  # no retry with a larger pool
    assert not caplog.records, caplog.text
    g = open_graph(settings, minilm_embedder)
    try:
        assert g.store.buffer_pool_mb == 256
        rows = g.store.raw("MATCH (m:Memory) RETURN m.id AS id, m.access_count AS n")
        counts = {r["id"]: r["n"] for r in rows}
        assert {mid: counts[mid] for mid in reads} == reads  # a clean stop kept every access
        assert check_invariants(g) == []
    finally:
        g.close()

    # What the session left behind beyond its data: a fresh daemon on the soaked store, warmed with
    # a short run of the same mix, holds within 64 MiB of the soaked daemon's last RSS.
    fresh = fresh_daemon_rss(km, targets)
    figures["rss_mb"]["fresh_daemon_same_store"] = fresh
    (tmp_path / "soak_figures.json").write_text(json.dumps(figures, indent=2))
    print(f"soak: fresh daemon on the soaked store after warm-up: {fresh} MiB (soaked: {rss[-1]} MiB)")
    assert rss[-1] <= fresh + 64, (rss[-1], fresh)


def fresh_daemon_rss(km: Keymem, targets: list[tuple[str, str]]) -> float:
    """RSS (MiB) of a new daemon on the store after 4,000 reads, 1,000 recalls and 100 writes."""
    settings = km.settings()
    client.start_daemon(settings, env=km.env).close()
    pid = int(km.wait_daemon_ready()["pid"])
    c = client.DaemonClient(settings, start=False)
    rng = random.Random(3)
    try:
        for i in range(4000):
            mid, kid = targets[rng.randrange(len(targets))]
            c.call("read_memory", {"memory_id": mid, "via_key_id": kid if i % 2 else None, "namespace": None})
            if i % 4 == 0:
                c.call("recall", {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)}"})
            if i % 40 == 0:
                c.call("remember", {"content": f"fresh note {i}: {rng.choice(WORDS)}", "keys": [rng.choice(WORDS)]})
        return round(rss_kb(pid) / 1024, 1)
    finally:
        c.close()
        client.stop(settings, timeout=60)
