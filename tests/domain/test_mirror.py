"""The in-memory mirror recall reads stays exactly what the store holds, after every kind of write."""

from __future__ import annotations

import random
import threading

import pytest

from keymem.admin.io import export_lines, import_lines
from keymem.memory.graph import MemoryGraph
from tests.conftest import Clock, assert_mirror_exact


def test_every_write_keeps_the_mirror_exact(graph: MemoryGraph, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    a = graph.remember(content="Newton watched an apple fall", keys=["Newton", "apple"],
                       key_types=["name", "concept"]).memory_id
    b = graph.remember(content="The user likes strawberries", keys=["fruit", "strawberry"], related_to=[a]).memory_id
    assert_mirror_exact(graph)
    assert graph.mirror.related(a, clock()) == [(b, 1.0)]  # RELATED_TO is walked in both directions
    graph.remember_batch([{"content": f"note {i} about apples and pears", "keys": ["apple", f"pear {i}"]}
                          for i in range(5)])
    assert_mirror_exact(graph)
    new = graph.correct(memory_id=b, content="The user loves strawberries").memory_id
    assert_mirror_exact(graph)
    assert graph.mirror.memory(b)["active"] is False  # type: ignore[index]
    newer = graph.correct(memory_id=new, content="The user adores strawberries").memory_id  # b is deleted
    assert graph.mirror.memory(b) is None and graph.mirror.memory(newer) is not None
    assert_mirror_exact(graph)
    key_apple = next(k for k, _ in graph.mirror.memory_keys(a) if graph.mirror.key(k)["text"] == "apple")  # type: ignore[index]
    graph.read_memory(memory_id=a, via_key_id=key_apple)
    graph.dismiss(memory_id=a, key_id=key_apple)
    graph.confirm_memory(memory_id=a, evidence="the user said so again")
    assert_mirror_exact(graph)
    graph.recall_direct(query="apples and pears")  # Hebbian weights come back from the update statement
    assert_mirror_exact(graph)
    from keymem.memory import associative

    for scan_max in (0, 1_000_000):  # one statement per link (large stores) and one for all (small)
        monkeypatch.setattr(associative, "ADJUST_SCAN_MAX_MEMORIES", scan_max)
        graph.recall_direct(query="pears and apples")
        assert_mirror_exact(graph)
    graph.forget(memory_id=a)
    assert graph.mirror.key(key_apple) is not None  # still linked to the batch's notes
    assert_mirror_exact(graph)
    ttl = graph.remember(content="a note that expires soon", keys=["temporary"], ttl_seconds=60).memory_id
    assert graph.mirror.memory(ttl, clock()) is not None
    clock.advance(120)
    assert graph.mirror.memory(ttl, clock()) is None  # invisible at once, before any sweep
    graph.sweep()
    assert graph.mirror.memory(ttl) is None
    assert_mirror_exact(graph)


def test_orphan_keys_leave_the_mirror(graph: MemoryGraph) -> None:
    m = graph.remember(content="A lone memory under a unique key", keys=["zebra crossing"]).memory_id
    (key_id, _), = graph.mirror.memory_keys(m)
    assert graph.mirror.memory_count(key_id, graph.now()) == 1
    graph.forget(memory_id=m)
    assert graph.mirror.key(key_id) is None and graph.mirror.memory_count(key_id, graph.now()) == 0
    assert_mirror_exact(graph)


def test_import_reloads_the_mirror(graph: MemoryGraph, settings, minilm_embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    graph.remember(content="Exported memory about tea", keys=["tea"])
    lines = export_lines(graph.store, None, graph.now())
    other = MemoryGraph.open(settings.with_overrides(data_dir=tmp_path / "other"), embedder=minilm_embedder,
                             reranker=None, progress=False)
    try:
        import_lines(other, lines)
        assert other.mirror.stats()["memories"] == 1
        assert_mirror_exact(other)
        assert other.recall(query="tea").memory is not None
    finally:
        other.close()


def test_reads_during_writes_never_fail(graph: MemoryGraph) -> None:
    """Recall reads the mirror while another thread writes: no error, and every write is seen after."""
    graph.remember(content="seed memory about rivers", keys=["river"])
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                graph.recall(query="river")
                graph.recall_direct(query="river water", reinforce=False)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    rng = random.Random(1)
    ids = []
    try:
        for i in range(40):
            ids.append(graph.remember(content=f"river note {i} {rng.random()}", keys=["river", f"bank {i % 7}"]).memory_id)
            if i % 5 == 4:
                graph.forget(memory_id=ids.pop(0))
    finally:
        done.set()
        t.join()
    assert not errors
    river = graph.recall(query="river").keys[0]
    assert river.key == "river" and river.memory_count == 1 + len(ids)
    assert_mirror_exact(graph)


@pytest.mark.parametrize("n", [0, 3])
def test_reopen_loads_the_same_mirror(graph: MemoryGraph, settings, minilm_embedder, n: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(n):
        graph.remember(content=f"memory {i} about coffee", keys=["coffee", f"cup {i}"])
    before = graph.mirror.snapshot()
    graph.close()
    again = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
    try:
        assert again.mirror.snapshot() == before
    finally:
        again.close()


@pytest.mark.parametrize("scan_max", [0, 1_000_000])
def test_both_ways_of_linking_keys(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch, scan_max: int) -> None:
    """Large stores link a memory's keys one statement per key, small ones in one statement."""
    from keymem.memory import write

    monkeypatch.setattr(write, "LINK_SCAN_MAX_KEYS", scan_max)
    mid = graph.remember(content="Linked both ways", keys=["alpha", "beta", "Gamma"],
                         key_types=["concept", "concept", "name"]).memory_id
    graph.remember_batch([{"content": f"batch item {i}", "keys": ["alpha", f"item {i}"]} for i in range(3)])
    rows = graph.store.raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $id RETURN k.text AS t, l.weight AS w",
                           {"id": mid})
    assert sorted(r["t"] for r in rows) == ["Gamma", "alpha", "beta"] and {r["w"] for r in rows} == {1.0}
    assert graph.recall(query="alpha").keys[0].memory_count == 4
    assert_mirror_exact(graph)


def test_loads_in_pages(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open-time loads read a large store in pages (one collect would not fit Kuzu's buffer pool)."""
    from keymem.index import mirror
    from keymem.store import db

    for i in range(7):
        graph.remember(content=f"paged memory {i} about tea and biscuits", keys=["tea", f"biscuit {i}", f"Person {i % 3}"],
                       key_types=["concept", "concept", "name"])
    graph.forget(memory_id=graph.remember(content="gone", keys=["tea"]).memory_id)  # a hole in the node offsets
    monkeypatch.setattr(db, "OFFSET_PAGE", 2)
    fresh = mirror.GraphMirror(graph.store, graph.settings)
    fresh.load()
    assert fresh.snapshot() == graph.mirror.snapshot() and fresh.stats()["memories"] == 7
    graph.reload_caches()  # the BM25 index is filled page by page too
    assert len(graph.lexical.search("biscuits", 10, "default")) == 7
    assert_mirror_exact(graph)


@pytest.mark.parametrize("scan_max", [0, 1_000_000])
def test_a_missing_key_rolls_the_write_back(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch, scan_max: int) -> None:
    """If a resolved key is gone when links are created, nothing is written (no memory short of keys)."""
    from keymem.errors import StoreError
    from keymem.memory import keys, write

    monkeypatch.setattr(write, "LINK_SCAN_MAX_KEYS", scan_max)
    graph.remember(content="A memory that exists before", keys=["river"])
    before = graph.counts()
    real = keys.KeyResolver.resolve

    def resolve(self, text: str, key_type: str, namespace: str):  # type: ignore[no-untyped-def]
        got = real(self, text, key_type, namespace)
        if text == "ghost":  # as if the key had been deleted between resolving and linking
            return keys.ResolvedKey("k_00000000000000000000", got.text, got.key_type, False)
        return got

    monkeypatch.setattr(keys.KeyResolver, "resolve", resolve)
    with pytest.raises(StoreError, match="could not link memory to 1 of its keys"):
        graph.remember(content="A memory whose second key vanished", keys=["river", "ghost"])
    assert graph.counts() == before
    assert_mirror_exact(graph)


def test_writes_after_a_reopen_change_the_loaded_layout_exactly(graph: MemoryGraph, settings, minilm_embedder,  # type: ignore[no-untyped-def]
                                                                 clock: Clock) -> None:
    """After an open the links are flat arrays and the ids one sorted array; every write on them stays exact."""
    ids = [graph.remember(content=f"loaded memory {i} about rivers and boats", keys=["river", f"boat {i}", "Ann"],
                          key_types=["concept", "concept", "name"]).memory_id for i in range(6)]
    graph.remember(content="a side note", keys=["river"], related_to=[ids[0]])
    graph.close()
    again = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False, clock=clock)
    try:
        assert again.mirror.stats()["memories"] == 7
        assert_mirror_exact(again)
        newer = again.correct(memory_id=ids[1], content="loaded memory 1, corrected").memory_id  # a loaded row changes
        again.forget(memory_id=ids[2])  # a loaded row goes
        river = next(k for k, _ in again.mirror.memory_keys(ids[0]) if again.mirror.key(k)["text"] == "river")  # type: ignore[index]
        again.dismiss(memory_id=ids[3], key_id=river)  # a loaded link's weight
        again.recall_direct(query="rivers and boats")  # Hebbian updates on loaded links
        added = again.remember(content="a new memory on the loaded keys", keys=["river", "Ann", "boat 4"]).memory_id
        assert_mirror_exact(again)
        assert again.mirror.memory(ids[2]) is None and again.mirror.memory(newer) is not None
        assert added in again.mirror.memory_ids() and ids[2] not in again.mirror.memory_ids()
        assert again.mirror.memory_total() == 7 + 1 + 1 - 1  # loaded + corrected version + new - forgotten
        again.forget(memory_id=added)
        assert_mirror_exact(again)
    finally:
        again.close()


def test_a_load_the_buffer_pool_cannot_hold_beside_another_runs_again_alone(graph: MemoryGraph,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror loads beside the BM25 index; if the pool cannot hold both, the failed load is repeated alone."""
    graph.remember(content="tea with lemon", keys=["tea", "lemon"])
    real = graph.mirror.load
    calls: list[str] = []

    def load_once_short_of_pool() -> None:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            raise RuntimeError("Buffer manager exception: Unable to allocate memory! The buffer pool is full")
        real()

    monkeypatch.setattr(graph.mirror, "load", load_once_short_of_pool)
    graph.reload_caches()
    assert calls == ["keymem-mirror-load", threading.current_thread().name]
    assert_mirror_exact(graph)
    assert graph.lexical.search("lemon", 5, "default")

    def broken() -> None:
        raise RuntimeError("something else")

    monkeypatch.setattr(graph.mirror, "load", broken)
    with pytest.raises(RuntimeError, match="something else"):
        graph.reload_caches()


def test_overlays_are_merged_back_into_the_arrays(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written after the open move from their overlays back into the CSR arrays, exactly."""
    from keymem.index import mirror

    monkeypatch.setattr(mirror, "COMPACT_MIN", 3)
    monkeypatch.setattr(mirror, "COMPACT_RATIO", 0.0)
    first = graph.remember(content="Ann rows a boat on the river", keys=["river", "boat", "Ann"],
                           key_types=["concept", "concept", "name"]).memory_id
    graph.remember_batch([{"content": f"note {i} on the river", "keys": ["river", f"stone {i}"]} for i in range(4)])
    assert graph.mirror.compactions >= 1
    assert_mirror_exact(graph)
    graph.correct(memory_id=first, content="Ann rows a red boat on the river")  # a merged row changes
    river = next(k for k, _ in graph.mirror.memory_keys(first) if graph.mirror.key(k)["text"] == "river")  # type: ignore[index]
    graph.dismiss(memory_id=first, key_id=river)  # a weight in the merged arrays
    graph.recall_direct(query="boat on the river")
    assert_mirror_exact(graph)
    before = graph.mirror.compactions
    graph.remember_batch([{"content": f"later note {i}", "keys": ["boat", f"oar {i}"]} for i in range(4)])
    assert graph.mirror.compactions > before and not graph.mirror._m_over
    assert_mirror_exact(graph)
