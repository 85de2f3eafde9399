"""Kuzu 0.11 WAL failure modes: a stray or corrupt ``keymem.kuzu.wal`` beside the database.

The contract (issue 7): such an open either refuses with StoreError, leaving every file in
place, with a message that says how to recover from the newest backup; or, if it proceeds,
a copy of the files as they were (database + WAL) is kept under ``backups/`` first, so a
replay that drops transactions destroys nothing.

Measured Kuzu 0.11.3 behaviour (Python API), which these tests pin:

* a WAL of random bytes beside an existing database: Kuzu opens, replays nothing and
  DELETES the WAL;
* a real WAL (acknowledged commits of a killed writer) with 64 bytes flipped in the middle:
  Kuzu replays the records before the damage, silently drops the rest (acknowledged
  commits) and deletes the WAL;
* a WAL beside a database file that does not exist: Kuzu creates the database and REPLAYS
  the stray WAL into it (foreign tables and rows appear);
* a foreign WAL whose rows collide with the database's: the open fails (Kuzu raises), and
  keymem's explain_open_error turns it into a StoreError naming the backups directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from keymem.errors import StoreError
from keymem.store.db import Store, explain_open_error
from tests.reliability.conftest import open_graph, populate
from tests.reliability.crashlib import Lines, Model, child_env, fold, kill, python

BUG_NO_WAL_GUARD = (
    "BUG keymem/store/db.py Store.__init__: opens straight through kuzu.Database, and Kuzu 0.11 silently "
    "discards a corrupt/stray WAL (deleting it) or replays a stray WAL into a new database; fix: before "
    "kuzu.Database(), if <db>.wal exists: refuse with StoreError(explain_open_error(...)) when <db> is "
    "missing/empty, else copy <db> and <db>.wal to backups/<name>.bak.<stamp>.pre-wal-replay first"
)


def _wal(settings: Any) -> Path:
    return settings.db_path.with_name(settings.db_path.name + ".wal")


def _files_kept_or_backed_up(settings: Any, wal_bytes: bytes) -> bool:
    if _wal(settings).exists() and _wal(settings).read_bytes() == wal_bytes:
        return True
    backups = settings.data_dir / "backups"
    return backups.is_dir() and any(p.read_bytes() == wal_bytes for p in backups.rglob("*") if p.is_file())


def _killed_writer_with_wal(tmp_path: Path, settings: Any, minilm_dir: Path, acks: int) -> Model:
    """Run the crash worker until ``acks`` writes are acknowledged, then SIGKILL it (WAL left behind)."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"live": {}}))
    proc = subprocess.Popen(
        [python(), "-m", "tests.reliability.crash_worker", str(settings.data_dir), str(minilm_dir), "3", str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )
    lines = Lines(proc)
    try:
        assert lines.wait_for("READY", 60)
        for _ in range(acks):
            assert lines.wait_for("ACK", 60)
    finally:
        kill(proc)
    model = Model()
    fold(lines.drain(), model)
    assert _wal(settings).exists() and _wal(settings).stat().st_size > 0
    return model


def test_explain_open_error_messages(tmp_path: Path) -> None:
    db = tmp_path / "keymem.kuzu"
    msg = explain_open_error(db, RuntimeError("IO exception: Could not set lock on file"))
    assert "another process" in msg and "keymem daemon --status" in msg
    msg = explain_open_error(db, RuntimeError("Cannot open file: Permission denied"))
    assert "permissions" in msg
    msg = explain_open_error(db, RuntimeError("Corrupted wal file"))
    assert "left untouched" in msg and str(tmp_path / "backups") in msg and "keymem.kuzu*" in msg


def test_second_process_gets_a_lock_error(tmp_path: Path, settings: Any, minilm_dir: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"live": {}}))
    proc = subprocess.Popen(
        [python(), "-m", "tests.reliability.crash_worker", str(settings.data_dir), str(minilm_dir), "5", str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )
    lines = Lines(proc)
    try:
        assert lines.wait_for("READY", 60)
        with pytest.raises(StoreError, match="held by another process"):
            Store(settings.db_path, buffer_pool_mb=64)
    finally:
        kill(proc)


def test_foreign_wal_that_cannot_replay_is_refused_and_files_kept(
    tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path
) -> None:
    """A WAL copied from another store whose records collide: StoreError, nothing touched."""
    g = open_graph(settings, minilm_embedder)
    g.close()
    before = settings.db_path.read_bytes()
    foreign = tmp_path / "other"
    other = settings.with_overrides(data_dir=foreign)
    _killed_writer_with_wal(tmp_path, other, minilm_dir, acks=3)
    wal = _wal(other).read_bytes()
    _wal(settings).write_bytes(wal)
    with pytest.raises(StoreError) as err:
        open_graph(settings, minilm_embedder)
    assert "backups" in str(err.value) and "cannot be opened cleanly" in str(err.value)
    assert _wal(settings).read_bytes() == wal, "the WAL was modified"
    assert settings.db_path.read_bytes() == before, "the database file was modified"


def test_torn_wal_tail_recovers_a_prefix(tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path) -> None:
    """A WAL cut short (a torn last write): the store opens on a consistent prefix."""
    from keymem.memory.invariants import check_invariants

    _killed_writer_with_wal(tmp_path, settings, minilm_dir, acks=4)
    wal = _wal(settings)
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size * 3 // 4])
    g = open_graph(settings, minilm_embedder)
    try:
        assert check_invariants(g) == []
    finally:
        g.close()


def test_garbage_wal_beside_existing_store(settings: Any, minilm_embedder: Any, graph: Any) -> None:
    populate(graph)
    graph.close()
    garbage = os.urandom(8192)
    _wal(settings).write_bytes(garbage)
    try:
        g = open_graph(settings, minilm_embedder)
    except StoreError as exc:
        assert "backups" in str(exc)
        assert _wal(settings).read_bytes() == garbage
        return
    g.close()
    assert _files_kept_or_backed_up(settings, garbage), "the garbage WAL was deleted and no copy kept"


def test_stray_wal_beside_a_fresh_database(tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path) -> None:
    other = settings.with_overrides(data_dir=tmp_path / "other")
    _killed_writer_with_wal(tmp_path, other, minilm_dir, acks=3)
    settings.data_dir.mkdir(parents=True)
    wal = _wal(other).read_bytes()
    _wal(settings).write_bytes(wal)
    try:
        g = open_graph(settings, minilm_embedder)
    except StoreError as exc:
        assert "backups" in str(exc)
        assert _wal(settings).read_bytes() == wal
        return
    try:
        n = g.counts()["memories"]
    finally:
        g.close()
    pytest.fail(f"a stray WAL was replayed into a new store ({n} foreign memories appeared)")


def test_corrupt_wal_middle_keeps_evidence(tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path) -> None:
    """Acknowledged commits in a damaged WAL: refuse, or keep a copy before Kuzu drops them."""
    model = _killed_writer_with_wal(tmp_path, settings, minilm_dir, acks=12)
    wal = _wal(settings)
    b = bytearray(wal.read_bytes())
    mid = len(b) // 2
    for i in range(mid, mid + 64):
        b[i] ^= 0xFF
    wal.write_bytes(bytes(b))
    try:
        g = open_graph(settings, minilm_embedder)
    except StoreError as exc:
        assert "backups" in str(exc)
        return
    try:
        lost = [mid for mid in model.live if not g.store.query("memory/get", id=mid)]
    finally:
        g.close()
    kept = _files_kept_or_backed_up(settings, bytes(b))
    assert kept, f"{len(lost)} of {len(model.live)} acknowledged memories dropped with the WAL and no copy kept"
