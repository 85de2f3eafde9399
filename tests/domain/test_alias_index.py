"""The in-memory alias index: kept in step by every alias write, equal to the store after each.

(Every test using the ``graph`` fixture also compares the index with the store at teardown.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from keymem.admin.invariants import mirror_problems
from keymem.index.aliases import AliasIndex
from keymem.memory.graph import MemoryGraph
from keymem.settings import Settings


def _store_aliases(graph: MemoryGraph) -> dict[str, tuple[str, ...]]:
    fresh = AliasIndex(graph.store)
    fresh.load()
    return fresh.snapshot()


def test_merge_alias_is_listed_without_asking_the_store(graph: MemoryGraph) -> None:
    lang = graph.remember(content="The user writes Rust", keys=["programming language"])
    kid = lang.keys[0].key_id
    assert graph.aliases.of([kid]) == {}
    graph.remember(content="The user also writes Go", keys=["programming languages"])
    assert graph.aliases.of([kid]) == {kid: ["programming languages"]}
    assert graph.aliases.snapshot() == _store_aliases(graph)
    view = next(k for k in graph.recall(query="programming language").keys if k.key_id == kid)
    assert view.aliases == ["programming languages"]


def test_deleted_key_drops_its_aliases(graph: MemoryGraph) -> None:
    a = graph.remember(content="The user writes Rust", keys=["programming language"])
    b = graph.remember(content="The user also writes Go", keys=["programming languages"])
    kid = a.keys[0].key_id
    assert b.keys[0].key_id == kid and kid in graph.aliases.snapshot()
    graph.forget(memory_id=a.memory_id)
    assert kid in graph.aliases.snapshot()  # the key still has a memory
    graph.forget(memory_id=b.memory_id)  # its last memory: the orphaned key is deleted
    assert kid not in graph.aliases.snapshot()
    assert graph.aliases.snapshot() == _store_aliases(graph) == {}


def test_reopen_loads_the_aliases(settings: Settings, minilm_embedder: Any, clock: Any) -> None:
    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, clock=clock, progress=False)
    try:
        kid = g.remember(content="The user writes Rust", keys=["programming language"]).keys[0].key_id
        g.remember(content="The user also writes Go", keys=["programming languages"])
    finally:
        g.close()
    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, clock=clock, progress=False)
    try:
        assert g.aliases.of([kid]) == {kid: ["programming languages"]}
        assert g.read_key(key_id=kid).key.aliases == ["programming languages"]
        assert mirror_problems(g) == []
    finally:
        g.close()


def test_import_lists_the_imported_aliases(graph: MemoryGraph, settings: Settings, tmp_path: Path,
                                           minilm_embedder: Any, clock: Any) -> None:
    from keymem.admin import io

    kid = graph.remember(content="The user writes Rust", keys=["programming language"]).keys[0].key_id
    graph.remember(content="The user also writes Go", keys=["programming languages"])
    lines = io.export_lines(graph.store, None, graph.now())
    other = MemoryGraph.open(settings.with_overrides(data_dir=tmp_path / "other"), embedder=minilm_embedder,
                             reranker=None, clock=clock, progress=False)
    try:
        assert other.aliases.snapshot() == {}
        assert io.import_lines(other, lines)["aliases_created"] == 1
        assert other.aliases.of([kid]) == {kid: ["programming languages"]}
        assert other.aliases.snapshot() == _store_aliases(other)
    finally:
        other.close()
