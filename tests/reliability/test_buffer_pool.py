"""Kuzu's buffer pool must never fill up with committed updates (issue 12, item 1).

Kuzu 0.11.3 holds every committed update in buffer-pool memory until a checkpoint: about
16 KiB per updated column per write transaction, however few rows it touched. Measured before
the fix: a 64 MiB pool took 1,973 one-row two-column SETs (pure Kuzu, automatic checkpoints off);
a keymem store with the default 256 MiB pool failed after ~7,700 ``read_memory`` calls through the
daemon ("Buffer manager exception: Unable to allocate memory! The buffer pool is full"), because
keymem checkpointed only once the WAL passed 16 MiB, which such writes never reach. A store
killed in that state did not reopen with the same pool: replaying its WAL needs the same memory.

Fixed: the Store checkpoints by writes since the last checkpoint and by pool use (``CALL
BM_INFO()``), ``read_memory`` without a key coalesces its access counts, an open that fails for
lack of pool retries with a larger one (logged) and checkpoints, and ``keymem doctor`` opens the
store with ``KEYMEM_BUFFER_POOL_MB``. The pool here is the smallest keymem accepts (64 MiB), so
the old behaviour fails within seconds.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants
from keymem.settings import load_settings
from keymem.store.db import Store
from tests.reliability.conftest import open_graph
from tests.reliability.crashlib import child_env, python

POOL_MB = 64


def pool_fraction(store: Store) -> float:
    row = store.raw("CALL BM_INFO() RETURN mem_usage AS used, mem_limit AS capacity")[0]
    return int(row["used"]) / int(row["capacity"])


def fill(*args: str) -> str:
    p = subprocess.run([python(), "-m", "tests.reliability.pool_worker", *args],
                       capture_output=True, text=True, env=child_env(), timeout=600)
    assert p.returncode == 0 and "FILLED" in p.stdout, f"exit {p.returncode}: {p.stdout[-300:]} {p.stderr[-1500:]}"
    return p.stdout


def test_small_write_transactions_do_not_fill_the_pool(tmp_path: Path) -> None:
    """6,000 one-row write transactions on a 64 MiB pool (before the fix: refused from ~1,970 on)."""
    store = Store(tmp_path / "db" / "k.kuzu", buffer_pool_mb=POOL_MB)
    try:
        with store.exclusive() as conn:
            conn.raw("CREATE NODE TABLE T(id STRING PRIMARY KEY, n INT64, at DOUBLE)")
        with store.write() as tx:
            tx.raw("UNWIND range(0, 1999) AS i CREATE (:T {id: 't' + string(i), n: 0, at: 0.0})")
        highest, writes = 0.0, 6000
        for i in range(writes):
            with store.write() as tx:
                tx.raw("MATCH (t:T) WHERE t.id = $id SET t.n = t.n + 1, t.at = $at", {"id": f"t{i % 2000}", "at": float(i)})
            if i % 100 == 0:
                highest = max(highest, pool_fraction(store))
        total = store.raw("MATCH (t:T) RETURN sum(t.n) AS n")[0]["n"]
        assert total == writes
        assert highest < 0.75, f"the pool reached {highest:.0%}"
        print(f"\n{writes} one-row writes on a {POOL_MB} MiB pool: {store.checkpoints} checkpoints, "
              f"pool at most {highest:.0%} used")
    finally:
        store.close()


def test_read_memory_on_a_small_pool(tmp_path: Path, minilm_dir: Path, minilm_embedder: Any) -> None:
    """3,000 read_memory calls, half through a key (before the fix: the pool filled at ~1,300)."""
    s = load_settings({}, data_dir=tmp_path / "data", embedding_backend="local", local_embedding_model="minilm-l6-v2",
                      local_embedding_model_path=minilm_dir, rerank=False, buffer_pool_mb=POOL_MB, embed_threads=1)
    g = open_graph(s, minilm_embedder)
    try:
        done = g.remember_batch([{"content": f"small pool memory {i}", "keys": [f"pool key {i}", "small pool"]}
                                 for i in range(120)])
        targets = [(r.memory_id, r.keys[0].key_id) for r in done.results]
        reads: dict[str, int] = {}
        for i in range(3000):
            mid, kid = targets[i % len(targets)]
            view = g.read_memory(memory_id=mid, via_key_id=kid if i % 2 else None)
            reads[mid] = reads.get(mid, 0) + 1
            assert view.access_count == reads[mid]
        g.access.flush()
        rows = g.store.raw("MATCH (m:Memory) RETURN m.id AS id, m.access_count AS n")
        assert {r["id"]: r["n"] for r in rows if r["id"] in reads} == reads
        assert check_invariants(g) == []
        assert pool_fraction(g.store) < 0.75
        print(f"\n3,000 read_memory on a {POOL_MB} MiB pool: {g.store.checkpoints} checkpoints, "
              f"{g.access.flushes} coalesced access writes")
    finally:
        g.close()
    g = open_graph(s, minilm_embedder)  # and it reopens at the same pool
    try:
        assert g.store.buffer_pool_mb == POOL_MB and check_invariants(g) == []
    finally:
        g.close()


def test_a_log_that_needs_a_larger_pool_opens(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A store killed with 3,500 unchecked updates does not fit a 64 MiB pool: the open retries larger."""
    path = tmp_path / "db" / "k.kuzu"
    out = fill("store", str(path), "3500")
    used = int(out.split()[-2])
    assert used > POOL_MB * 1024 * 1024, out  # the replay cannot fit the pool we open with
    with caplog.at_level(logging.WARNING, logger="keymem.store"):
        store = Store(path, buffer_pool_mb=POOL_MB)
    try:
        assert any("retrying with 128 MiB" in r.getMessage() for r in caplog.records), caplog.text
        assert store.raw("MATCH (t:T) RETURN sum(t.n) AS n")[0]["n"] == 3500
        assert store.buffer_pool_mb == POOL_MB  # checkpointed, then reopened with the configured pool
        assert pool_fraction(store) < 0.5
    finally:
        store.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="keymem.store"):
        Store(path, buffer_pool_mb=POOL_MB).close()
    assert not caplog.records, caplog.text


def test_doctor_opens_the_store_with_the_configured_pool(tmp_path: Path, minilm_dir: Path) -> None:
    """`keymem doctor --check` (no daemon) on a store whose log needs more than 64 MiB."""
    data = tmp_path / "data"
    fill("graph", str(minilm_dir), str(data), "1600")
    env = {**child_env(), "KEYMEM_DATA_DIR": str(data), "EMBEDDING_BACKEND": "local",
           "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2", "LOCAL_EMBEDDING_MODEL_PATH": str(minilm_dir),
           "KEYMEM_RERANK": "false", "KEYMEM_DAEMON": "off", "KEYMEM_EMBED_THREADS": "1",
           "KEYMEM_BUFFER_POOL_MB": "320", "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([python(), "-m", "keymem.cli.main", "doctor", "--check"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "opens cleanly" in p.stdout and "buffer pool 320 MiB" in p.stdout, p.stdout
    (tmp_path / "doctor.json").write_text(json.dumps({"stdout": p.stdout}))


def test_bulk_row_writes_do_not_fill_the_pool(tmp_path: Path) -> None:
    """Re-storing every memory's BM25 terms in 2,000-row transactions (a tokenizer change at open).

    Such statements hold pool memory per row touched, not per transaction: before the row budget
    (``Store.checkpoint_units``) the 100k-memory benchmark store fail-stopped at open after 34 of
    them on the default 256 MiB pool. Here 20,000 memories with random ids on a 64 MiB pool.
    """
    import random

    from keymem.store import migrations

    store = Store(tmp_path / "db" / "k.kuzu", buffer_pool_mb=POOL_MB)
    try:
        migrations.migrate(store)
        rng = random.Random(5)
        ids = [f"{rng.getrandbits(128):032x}" for _ in range(20_000)]
        for start in range(0, len(ids), 5000):
            with store.write() as tx:
                tx.raw("UNWIND $ids AS i CREATE (:Memory {id: i, namespace: 'default', content: 'x', active: true, "
                       "access_count: 0, confirmation_count: 0, depth: 0.0, terms: ''})", {"ids": ids[start:start + 5000]})
        store.checkpoint()
        words = " ".join(f"term{i}" for i in range(40))
        highest = 0.0
        for rounds in range(3):  # 30 transactions, 60,000 row updates
            rng.shuffle(ids)
            for start in range(0, len(ids), 2000):
                with store.write() as tx:
                    tx.run("memory/set_terms", rows=[{"id": i, "terms": f"{words} {rounds}"} for i in ids[start:start + 2000]])
                highest = max(highest, pool_fraction(store))
        assert store.raw("MATCH (m:Memory) WHERE m.terms ENDS WITH ' 2' RETURN count(m) AS n")[0]["n"] == 20_000
        assert highest < 0.9, f"the pool reached {highest:.0%}"
        print(f"\n60,000 row updates in 2,000-row transactions on a {POOL_MB} MiB pool: {store.checkpoints} "
              f"checkpoints, pool at most {highest:.0%} used")
    finally:
        store.close()
