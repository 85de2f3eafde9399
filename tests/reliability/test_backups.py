"""Backups: every migration and re-embed backs up first; snapshots are consistent under writes."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from keymem.admin.invariants import check_invariants
from keymem.errors import StoreError
from keymem.store import cypher, migrations
from keymem.store.db import Store
from tests.reliability.conftest import open_graph, populate


class Renamed:
    """The MiniLM embedder under another fingerprint (as if the configured model had changed)."""

    def __init__(self, inner: Any, fingerprint: str) -> None:
        self._inner = inner
        self._fp = fingerprint
        self.calls = 0

    @property
    def fingerprint(self) -> str:
        return self._fp

    def embed(self, texts: Any, kind: str = "query") -> np.ndarray:
        self.calls += 1
        return self._inner.embed(texts, kind=kind)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _backups(settings: Any) -> list[Path]:
    d = settings.data_dir / "backups"
    return sorted(d.iterdir()) if d.is_dir() else []


def _graph_state(graph: Any) -> dict[str, Any]:
    """Content, links, depth and history: everything but the key vectors and metadata."""
    mem = graph.store.raw("MATCH (m:Memory) RETURN m.id AS id, m.content AS c, m.depth AS d, m.active AS a, "
                          "m.supersedes AS s, m.superseded_by AS sb, m.confirmation_count AS n ORDER BY id")
    links = graph.store.raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) RETURN k.id AS kid, k.text AS t, m.id AS mid, "
                            "l.weight AS w ORDER BY kid, mid")
    rel = graph.store.raw("MATCH (a:Memory)-[r:RELATED_TO|SUPERSEDES]->(b:Memory) RETURN a.id AS src, b.id AS dst, "
                          "label(r) AS l ORDER BY src, dst")
    return {"memories": mem, "links": links, "related": rel}


def _make_history(graph: Any) -> None:
    w = populate(graph)
    graph.confirm_memory(memory_id=w.ids["alice"], evidence="the user said so today")
    graph.read_memory(memory_id=w.ids["deploy"], via_key_id=graph.read_memory(memory_id=w.ids["deploy"]).keys[0].key_id)


def test_reembed_on_model_change_backs_up_and_keeps_everything(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings, minilm_embedder)
    _make_history(g)
    state = _graph_state(g)
    counts = g.counts()
    g.close()
    assert _backups(settings) == []

    other = Renamed(minilm_embedder, "reliability-test:minilm-renamed")
    g = open_graph(settings, other)
    try:
        assert g.meta("embedding_fingerprint") == other.fingerprint
        assert other.calls >= 1  # the keys were embedded again
        assert _graph_state(g) == state and g.counts() == counts
        assert check_invariants(g) == []
        assert g.recall(query="tea").memory is not None
    finally:
        g.close()
    backups = _backups(settings)
    assert len(backups) == 1 and backups[0].name.endswith(".reembed"), backups
    # the backup is a whole, openable store with the old fingerprint
    restored = settings.data_dir.parent / "restored"
    restored.mkdir()
    shutil.copyfile(backups[0], restored / "keymem.lbug")
    s = Store(restored / "keymem.lbug", buffer_pool_mb=64, read_only=True)
    try:
        assert s.query("meta/get", name="embedding_fingerprint")[0]["value"] == minilm_embedder.fingerprint
        assert s.query("admin/counts", now=time.time())[0]["memories"] == counts["memories"]
    finally:
        s.close()


def test_model_change_without_auto_migrate_refuses(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings, minilm_embedder)
    populate(g)
    g.close()
    before = settings.db_path.read_bytes()
    with pytest.raises(StoreError) as err:
        open_graph(settings.with_overrides(auto_migrate=False), Renamed(minilm_embedder, "other:model"))
    msg = str(err.value)
    assert "KEYMEM_AUTO_MIGRATE" in msg and "other:model" in msg and minilm_embedder.fingerprint in msg
    assert _backups(settings) == []
    g = open_graph(settings, minilm_embedder)  # the original model still opens it, unchanged
    try:
        assert check_invariants(g) == []
    finally:
        g.close()
    assert len(before) > 0


def test_force_reembed_reembeds_once_per_start(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings, minilm_embedder)
    _make_history(g)
    state = _graph_state(g)
    g.close()
    forced = settings.with_overrides(force_reembed=True)
    spy = Renamed(minilm_embedder, minilm_embedder.fingerprint)
    g = open_graph(forced, spy)
    try:
        n_keys = len(g.store.query("key/concept_all"))
        assert spy.calls == -(-n_keys // 64)  # one embedding call per batch of 64 keys: re-embedded once
        assert _graph_state(g) == state and check_invariants(g) == []
    finally:
        g.close()
    assert [p.name.rsplit(".", 1)[-1] for p in _backups(settings)] == ["reembed"]
    g = open_graph(settings, minilm_embedder)  # without the flag: no more re-embedding, no more backups
    g.close()
    assert len(_backups(settings)) == 1


def test_migration_backs_up_first(settings: Any, minilm_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    g = open_graph(settings, minilm_embedder)
    populate(g)
    g.close()
    real_available, real_script = migrations.available, cypher.load_script
    step = "999_reliability_probe"
    monkeypatch.setattr(migrations, "available", lambda: [*real_available(), step])
    monkeypatch.setattr(cypher, "load_script", lambda name, *engine, **t: (
        ["CREATE NODE TABLE ReliabilityProbe(id STRING PRIMARY KEY)"] if name == f"schema/{step}"
        else real_script(name, *engine, **t)))
    g = open_graph(settings, minilm_embedder)
    try:
        assert step in migrations.applied(g.store)
        assert check_invariants(g) == []
    finally:
        g.close()
    names = [p.name for p in _backups(settings)]
    assert len(names) == 1 and names[0].endswith(f".migrate-{step}"), names
    s = Store(_backups(settings)[0], buffer_pool_mb=64, read_only=True)  # taken before the step ran
    try:
        assert step not in migrations.applied(s)
    finally:
        s.close()


def test_snapshots_are_consistent_while_writes_continue(settings: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    g = open_graph(settings, minilm_embedder)
    stop = threading.Event()
    acked: list[str] = []
    errors: list[str] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                r = g.remember_batch([{"content": f"streamed fact {i}.{j}", "keys": [f"topic {i % 7}", "stream"]}
                                      for j in range(3)])
                acked.extend(x.memory_id for x in r.results)
                if i % 5 == 0:
                    g.correct(memory_id=acked[-1], content=f"streamed fact {i} corrected")
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(repr(exc))

    t = threading.Thread(target=writer)
    t.start()
    snaps = []
    try:
        for n in range(5):
            time.sleep(0.4)
            lo = len(acked)
            dest = g.store.copy_to(tmp_path / f"snap{n}" / "keymem.lbug")
            snaps.append((dest, lo, len(acked)))
    finally:
        stop.set()
        t.join()
        g.close()
    assert errors == []
    seen = []
    for dest, lo, _hi in snaps:
        sg = open_graph(settings.with_overrides(data_dir=dest.parent), minilm_embedder)
        try:
            assert check_invariants(sg) == [], dest
            n = int(sg.store.raw("MATCH (m:Memory) WHERE m.content STARTS WITH 'streamed' RETURN count(m) AS n")[0]["n"])
            assert n >= lo, (n, lo)  # everything acknowledged before the snapshot began is in it
            seen.append(n)
        finally:
            sg.close()
    assert seen == sorted(seen) and seen[-1] > 0, seen
    print(f"\nsnapshots under writes: {len(snaps)} taken, memories per snapshot {seen}, {len(acked)} acknowledged")


def test_snapshot_of_an_idle_store_opens_and_is_healthy(settings: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    g = open_graph(settings, minilm_embedder)
    try:
        _make_history(g)
        counts = g.counts()
        dest = g.store.copy_to(tmp_path / "snap" / "keymem.lbug")
        g.remember(content="written after the snapshot", keys=["later"])
    finally:
        g.close()
    assert oct(dest.stat().st_mode & 0o777) == "0o600"
    sg = open_graph(settings.with_overrides(data_dir=dest.parent), minilm_embedder)
    try:
        assert sg.counts() == counts and check_invariants(sg) == []
    finally:
        sg.close()
