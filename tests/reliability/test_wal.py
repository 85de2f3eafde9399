"""Kuzu 0.11 WAL failure modes: a stray or corrupt ``keymem.lbug.wal`` beside the database.

The contract (issue 7): such an open either refuses with StoreError, leaving every file in
place, with a message that says how to recover from the newest backup; or, if it proceeds,
a copy of the files as they were (database + WAL) is kept under ``backups/`` first, so a
replay that drops transactions destroys nothing.

Measured Kuzu 0.11.3 behaviour (Python API), which keymem's Store now guards against (before
opening, a WAL beside a missing/empty database is refused; a WAL beside a database is copied,
with the database, to ``backups/*.pre-wal-replay`` before Kuzu replays it):

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
    db = tmp_path / "keymem.lbug"
    msg = explain_open_error(db, RuntimeError("IO exception: Could not set lock on file"))
    assert "another process" in msg and "keymem daemon --status" in msg
    msg = explain_open_error(db, RuntimeError("Cannot open file: Permission denied"))
    assert "permissions" in msg
    msg = explain_open_error(db, RuntimeError("Corrupted wal file"))
    assert "left untouched" in msg and str(tmp_path / "backups") in msg and "keymem.lbug*" in msg


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
    from keymem.admin.invariants import check_invariants

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


OPENER = """
import sys
from pathlib import Path
from keymem.errors import StoreError
from keymem.models.onnx_embed import OnnxEmbedder
from keymem.settings import load_settings
from tests.reliability.conftest import open_graph

model = Path(sys.argv[2])
s = load_settings({}, data_dir=Path(sys.argv[1]), embedding_backend="local", local_embedding_model="minilm-l6-v2",
                  local_embedding_model_path=model, rerank=False, buffer_pool_mb=64, embed_threads=1)
try:
    g = open_graph(s, OnnxEmbedder(model, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256))
except StoreError as exc:
    print("REFUSED", str(exc).replace(chr(10), " "))
else:
    print("OPENED", " ".join(r["id"] for r in g.store.raw("MATCH (m:Memory) RETURN m.id AS id")))
    g.close()
"""


def test_corrupt_wal_middle_keeps_evidence(tmp_path: Path, settings: Any, minilm_dir: Path) -> None:
    """Acknowledged commits in a damaged WAL: refuse, or keep a copy before Kuzu drops them.

    64 bytes are flipped at several places of a real WAL (a killed writer's, 12+ acknowledged
    commits); each damaged copy is opened in a child process, because Kuzu 0.11.3 itself
    sometimes crashes (SIGSEGV/SIGABRT) replaying a damaged WAL (measured: 1 position in 11).
    Whatever the open does, the database and WAL as they were must be kept under backups/.
    """
    import shutil

    model = _killed_writer_with_wal(tmp_path, settings, minilm_dir, acks=12)
    db, wal = settings.db_path.read_bytes(), _wal(settings).read_bytes()
    outcomes = []
    for frac in (0.3, 0.5, 0.6, 0.7, 0.9):
        d = tmp_path / f"flip{frac}"
        d.mkdir()
        (d / settings.db_path.name).write_bytes(db)
        b = bytearray(wal)
        at = int(len(b) * frac)
        for i in range(at, min(len(b), at + 64)):
            b[i] ^= 0xFF
        (d / _wal(settings).name).write_bytes(bytes(b))
        p = subprocess.run([python(), "-c", OPENER, str(d), str(minilm_dir)], capture_output=True, text=True,
                           env=child_env(), timeout=180)
        out = p.stdout.strip()
        kept = d / "backups"
        copies = [q for q in kept.rglob("*") if q.is_file()] if kept.is_dir() else []
        assert any(q.read_bytes() == bytes(b) for q in copies), f"flip at {frac}: no copy of the damaged WAL kept"
        assert any(q.read_bytes() == db for q in copies), f"flip at {frac}: no copy of the database kept"
        if p.returncode == 0:
            assert out.startswith(("OPENED", "REFUSED")), out
            if out.startswith("REFUSED"):
                assert "backups" in out
                outcomes.append(f"{frac}:refused")
            else:
                found = set(out.split()[1:])
                outcomes.append(f"{frac}:opened, {len(set(model.live) - found)}/{len(model.live)} acknowledged lost")
        else:
            outcomes.append(f"{frac}:kuzu crashed ({p.returncode})")
        shutil.rmtree(d, ignore_errors=True)
    print(f"\ndamaged WAL outcomes: {outcomes}")


def test_torn_wal_tail_replays_the_valid_prefix_and_says_so(tmp_path: Path, settings: Any, minilm_dir: Path,
                                                            minilm_embedder: Any) -> None:
    """A WAL cut short (full disk, power loss): the store opens with what was whole, and says what it dropped."""
    model = _killed_writer_with_wal(tmp_path, settings, minilm_dir, acks=12)
    wal = _wal(settings)
    whole = wal.read_bytes()
    wal.write_bytes(whole[: int(len(whole) * 0.8)] + b"\x00" * 16)  # a torn last record
    graph = open_graph(settings, minilm_embedder)
    try:
        store = graph.store
        assert store.replayed_wal
        copy = store.wal_copy
        assert copy is not None and (copy / wal.name).read_bytes() != whole  # the torn log as it was
        assert (copy / wal.name).read_bytes()[: int(len(whole) * 0.8)] == whole[: int(len(whole) * 0.8)]
        if store.wal_tail_dropped:  # the engine found the damage: the user is told, naming the copy
            assert str(copy) in store.wal_tail_dropped and "dropped" in store.wal_tail_dropped
        found = {r["id"] for r in store.raw("MATCH (m:Memory) RETURN m.id AS id")}
        assert found, "nothing of the valid prefix was replayed"
        assert found <= set(model.live) | set(model.gone) | found  # nothing foreign appears
        from keymem.admin.invariants import check_invariants

        assert check_invariants(graph) == []
        if store.wal_tail_dropped:
            assert store.wal_tail_dropped in (graph.meta("wal_recovery") or "")  # what `keymem doctor` shows
    finally:
        graph.close()
    print(f"\ntorn WAL: {len(found)} memories of {len(model.live)} acknowledged kept; "
          f"message: {graph.store.wal_tail_dropped}")


def test_a_closed_store_leaves_no_lock_and_no_wal(settings: Any, minilm_embedder: Any) -> None:
    """close() must really close: the engine keeps the database open while a prepared statement lives."""
    graph = open_graph(settings, minilm_embedder)
    populate(graph)
    graph.recall_direct(query="anything at all", top_k=3, reinforce=True)
    graph.close()
    assert not _wal(settings).exists() or _wal(settings).stat().st_size == 0
    # another process can take the store at once (no "Could not set lock on file")
    p = subprocess.run([python(), "-c", "import ladybug,sys; db=ladybug.Database(sys.argv[1]); "
                        "print(ladybug.Connection(db).execute('MATCH (m:Memory) RETURN count(m)').get_all()[0][0])",
                        str(settings.db_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and int(p.stdout.strip()) > 0, p.stderr
    for _ in range(3):  # reopening in one process leaves no stray WAL and makes no pre-replay copy
        open_graph(settings, minilm_embedder).close()
    assert not list((settings.data_dir / "backups").glob("*.pre-wal-replay")) if (settings.data_dir / "backups").is_dir() else True
