"""Kuzu's automatic checkpoint at commit time, under concurrent reads.

Kuzu 0.11 checkpoints inside COMMIT once the WAL passes ``checkpoint_threshold`` (16 MiB by
default, i.e. routinely on a busy store). That checkpoint waits for every other transaction
to leave but lets new read transactions start, so steady reads from other clients starve it:
after ~7 s COMMIT raises "Timeout waiting for active transactions to leave the system before
checkpointing". Measured before the fix: every write raised StoreError("could not commit the
write ...") although it WAS committed (the rows are there, and survive a reopen), and the
after-commit mirrors never ran (the memories were missing from the lexical index and the
vector cache: check_invariants reported both). Fixed: the Store opens Kuzu with
auto_checkpoint=False and checkpoints itself after a commit once the WAL passes 16 MiB, under
the exclusive reader gate.

The test makes the threshold tiny (as if the WAL had just passed 16 MiB), keeps two threads
reading, and requires each write to succeed promptly, be durable, and leave the invariants clean.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants
from tests.reliability.conftest import open_graph


@pytest.mark.timeout(180)
def test_writes_commit_promptly_while_others_read(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings, minilm_embedder)
    stop = threading.Event()
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            g.store.query("admin/counts", now=1.0)
            reads[0] += 1

    try:
        g.store.raw("CALL checkpoint_threshold=4096")
        if hasattr(g.store, "wal_checkpoint_bytes"):  # a Store that checkpoints by itself, by WAL size
            g.store.wal_checkpoint_bytes = 4096
        threads = [threading.Thread(target=reader, daemon=True) for _ in range(2)]
        for t in threads:
            t.start()
        results, errors, slowest = [], [], 0.0
        for i in range(2):
            t0 = time.monotonic()
            try:
                results.append(g.remember(content=f"written under read load {i} " + "x" * 3000, keys=[f"load {i}"]))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            slowest = max(slowest, time.monotonic() - t0)
        stop.set()
        for t in threads:
            t.join(10)
        stored = g.store.raw("MATCH (m:Memory) RETURN count(m) AS n")[0]["n"]
        assert errors == [], f"{len(errors)} writes reported failed, {stored} stored: {errors[0][:200]}"
        assert slowest < 5.0, f"a write took {slowest:.1f} s"
        assert stored == 2 and reads[0] > 0
        assert check_invariants(g) == []
    finally:
        stop.set()
        g.close()
