"""Stores that must open again after a SIGKILL of the daemon.

Kuzu 0.11.3 (keymem 0.1's engine) could not replay the write-ahead log of a killed writer in
two shapes measured outside the project: four ordinary calls (remember A, remember B, forget
B, correct A, then a kill before any checkpoint) failed every open with ``KU_UNREACHABLE``, and
the first ~25 calls of the daemon kill loop with seed 205 did so in about half of the runs.
LadybugDB replays both. Both shapes are pinned here; any store that does not open fails.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from keymem.server import client as daemon_client
from tests.reliability.conftest import open_graph
from tests.reliability.test_crash import daemon_kill_loop

RUNS = int(os.environ.get("KEYMEM_REPLAY_RUNS", "10"))


def test_four_calls_then_a_kill_reopen(km: Any, minilm_embedder: Any) -> None:
    daemon_client.start_daemon(km.settings(), env=km.env).close()
    info = km.wait_daemon_ready()
    c = daemon_client.DaemonClient(km.settings(), start=False)
    try:
        a = c.call("remember", {"content": "The river floods every spring", "keys": ["river"]})["memory_id"]
        b = c.call("remember", {"content": "The garden needs a new fence", "keys": ["garden"]})["memory_id"]
        c.call("forget", {"memory_id": b})  # its key "garden" now has no memory
        new = c.call("correct", {"memory_id": a, "content": "The river floods every April"})["memory_id"]
    finally:
        c.close()
    os.kill(int(info["pid"]), signal.SIGKILL)  # before any checkpoint: the four calls live in the WAL
    wal = km.data_dir / "keymem.lbug.wal"
    assert wal.is_file() and wal.stat().st_size > 0
    graph = _open(km, minilm_embedder)
    try:
        rows = graph.store.query("memory/get", id=new)
        assert rows and rows[0]["m"]["content"] == "The river floods every April" and rows[0]["m"]["active"]
        old = graph.store.query("memory/get", id=a)[0]["m"]
        assert not old["active"] and old["superseded_by"] == new
        assert graph.store.query("memory/get", id=b) == []
        from keymem.admin.invariants import check_invariants

        assert check_invariants(graph) == []
    finally:
        graph.close()


def _open(km: Any, embedder: Any) -> Any:
    import time

    from keymem.errors import StoreError

    deadline = time.monotonic() + 30
    while True:  # the killed daemon's lock on the store goes with the process
        try:
            return open_graph(km.settings(), embedder)
        except StoreError as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_seed_205_kill_loop_always_replays(km: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    # Each run: a new store, the loop's first calls, one kill, the store must open (daemon_kill_loop checks it).
    for run in range(RUNS):
        for path in km.data_dir.iterdir() if km.data_dir.exists() else []:
            if path.is_file() and path.name.startswith("keymem.lbug"):
                path.unlink()
        daemon_kill_loop(km, minilm_embedder, kills=1, seed=205, tmp_path=tmp_path)
        km.stop_all()
        print(f"run {run}: replayed")
