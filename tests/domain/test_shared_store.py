"""Two graphs (two daemons' worth: their own data dirs, models and indexes) on one FalkorDB graph.

Each write commits a change record with it; a graph catches up on the other's records before it
reads, and then its mirror, BM25 index, key vectors and aliases equal the store's. Real FalkorDB
server (tests/conftest_engines.py), real MiniLM.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from keymem.admin.invariants import mirror_problems
from keymem.memory.graph import MemoryGraph
from keymem.memory.navigate import HEBBIAN_STEP
from keymem.memory.requests import _PENDING
from keymem.memory.write import LINK_INIT
from keymem.settings import Settings, load_settings
from keymem.store import changes
from tests.conftest import Clock
from tests.conftest_engines import FalkorServer, drop_graphs

pytestmark = pytest.mark.timeout(120)


def _settings(root: Path, minilm_dir: Path, url: str) -> Settings:
    return load_settings({}, data_dir=root, store_url=url, embedding_backend="local",
                         local_embedding_model="minilm-l6-v2", local_embedding_model_path=minilm_dir,
                         rerank=False, embed_threads=1)


@pytest.fixture
def pair(tmp_path: Path, minilm_dir: Path, minilm_embedder, falkordb_server: FalkorServer,  # type: ignore[no-untyped-def]
         ) -> Iterator[tuple[MemoryGraph, MemoryGraph]]:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    url = falkordb_server.url(prefix)
    clock = Clock()
    a = MemoryGraph.open(_settings(tmp_path / "a", minilm_dir, url), embedder=minilm_embedder, reranker=None,
                         clock=clock, progress=False)
    b = MemoryGraph.open(_settings(tmp_path / "b", minilm_dir, url), embedder=minilm_embedder, reranker=None,
                         clock=clock, progress=False)
    try:
        yield a, b
    finally:
        a.close()
        b.close()
        drop_graphs(falkordb_server, prefix)


def in_step(g: MemoryGraph) -> None:
    """After a catch-up, every in-memory index equals one read afresh from the store."""
    g.catch_up()
    assert mirror_problems(g) == []
    fresh = MemoryGraph(g.settings, g.store, g.embedder)
    fresh._load_caches(memory_vectors=False)
    for ns in fresh.lexical.namespaces():
        assert g.lexical.stats(ns)["docs"] == fresh.lexical.stats(ns)["docs"], ns
    held = {k for block in g.vectors._blocks.values() for k in block.ids}
    truth = {k for block in fresh.vectors._blocks.values() for k in block.ids}
    assert held == truth
    assert g.aliases.snapshot() == fresh.aliases.snapshot()


def test_a_memory_written_on_one_is_recalled_on_the_other(pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    a, b = pair
    assert a.store.capabilities.shared_writers
    mid = a.remember(content="The Orinoco pump station runs on a 48 V bus", keys=["Orinoco pump", "power bus"]).memory_id
    assert b.catch_up() == 1  # one record: the remember's scope
    found = b.recall(query="Orinoco pump").dump()
    assert mid in str(found)
    assert a.catch_up() == 0  # its own write was applied at its commit
    in_step(a)
    in_step(b)


def test_interleaved_writes_leave_both_in_step(pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    a, b = pair
    rnd = random.Random(7)
    ids: list[str] = []
    for i in range(24):
        g = (a, b)[rnd.randrange(2)]
        g.catch_up()
        op = rnd.random()
        if op < 0.55 or len(ids) < 3:
            ids.append(g.remember(content=f"fact {i}: valve {i} opens at {i * 3} bar",
                                  keys=[f"valve {i % 5}", "pressure", f"site {i % 3}"]).memory_id)
        elif op < 0.7:
            mid = ids.pop(rnd.randrange(len(ids)))
            ids.append(g.correct(memory_id=mid, content=f"fact {i}: valve corrected to {i * 4} bar").memory_id)
        elif op < 0.8:
            g.forget(memory_id=ids.pop(rnd.randrange(len(ids))))
        elif op < 0.9:
            mid = ids[rnd.randrange(len(ids))]
            key = g.mirror.memory_keys(mid)[0][0]
            g.read_memory(memory_id=mid, via_key_id=key)
        else:
            g.recall_direct(query="valve pressure")
    for g in (a, b):
        in_step(g)
    assert sorted(a.mirror.memory_ids()) == sorted(b.mirror.memory_ids())


def test_hebbian_updates_from_both_count(pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    a, b = pair
    mid = a.remember(content="Kestrel backups run nightly at 02:00", keys=["Kestrel backups"]).memory_id
    b.catch_up()
    key = a.mirror.memory_keys(mid)[0][0]
    start = threading.Barrier(2)

    def read(g: MemoryGraph) -> None:
        start.wait()
        g.read_memory(memory_id=mid, via_key_id=key)

    threads = [threading.Thread(target=read, args=(g,)) for g in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = LINK_INIT + 2 * HEBBIAN_STEP
    assert a.store.query("link/get", key_id=key, memory_id=mid)[0]["weight"] == pytest.approx(want)
    for g in (a, b):
        g.catch_up()
        assert dict(g.mirror.memory_keys(mid))[key] == pytest.approx(want)


def test_a_daemon_past_the_kept_records_reloads_everything(pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    a, b = pair
    for i in range(4):
        a.remember(content=f"reload fact {i}: the gate code is {i}{i}{i}", keys=[f"gate {i}", "gate codes"])
    feed = changes.feed(a.store)
    assert feed is not None
    feed.prune(feed.head(), keep=1)  # b is 4 behind, only the newest record is left
    assert b.catchup is not None
    reloads = b.catchup.reloads
    b.catch_up()
    assert b.catchup.reloads == reloads + 1
    assert len(b.lexical) == len(a.lexical) == 4
    in_step(b)


def test_a_request_id_retried_on_the_other_graph_writes_once(pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    a, b = pair
    args = {"content": "The Lisbon office closes at 18:00", "keys": ["Lisbon office"]}

    def call(g: MemoryGraph) -> dict[str, object]:
        return g.requests.once("retry-across-0001", "remember", args,  # type: ignore[no-any-return]
                               lambda: g.remember(**args).dump())

    first = call(a)
    b.catch_up()
    again = call(b)
    assert again == first and b.requests.replays == 1
    assert _PENDING.get() is None
    assert len(a.store.query("memory/get", id=first["memory_id"])) == 1
    assert len(b.mirror.memory_ids()) == 1


def test_a_key_written_on_the_other_front_is_merged_into_even_before_a_catch_up(
        pair: tuple[MemoryGraph, MemoryGraph]) -> None:
    """Key decisions (a near spelling merged into an existing concept key) are made under the writer
    lease on what the store holds then: a write catches up first, so the other front's new key counts
    even when no call caught up since it was written."""
    a, b = pair
    assert b.catchup is not None
    b.catchup.stop()  # no background catch-up either: only the write's own
    b.catch_up()
    lang = a.remember(content="The user writes Rust", keys=["programming language"])
    more = b.remember(content="The user also writes Go", keys=["programming languages"])  # no catch-up between
    assert more.keys[0].key_id == lang.keys[0].key_id
    assert {r["text"] for r in b.store.query("key/all")} == {"programming language"}
    in_step(a)
    in_step(b)


def test_no_record_where_one_process_writes(graph: MemoryGraph) -> None:
    """LadybugDB: one daemon owns the file, so writes commit no record and a catch-up runs no query."""
    assert not graph.store.capabilities.shared_writers and graph.catchup is None
    graph.remember(content="Nothing to tell anyone", keys=["solo"])
    assert graph.store.query("changes/head") == [] and graph.catch_up() == 0
