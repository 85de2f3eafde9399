"""Cross-encoder plumbing in recall (tiny ONNX model with the real interface) and autokey learning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from keymem.memory.graph import MemoryGraph
from keymem.models.rerank import OnnxReranker
from keymem.settings import Settings


@pytest.fixture
def reranked(settings: Settings, minilm_embedder, tiny_reranker_dir: Path, clock):  # type: ignore[no-untyped-def]
    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=OnnxReranker(tiny_reranker_dir),
                         clock=clock, progress=False)
    yield g
    g.close()


def _seed(g: MemoryGraph) -> dict[str, str]:
    return {
        "red": g.remember(content="apples are red and crunchy", keys=["apple"]).memory_id,
        "pie": g.remember(content="grandma bakes apple pie with cinnamon", keys=["apple"]).memory_id,
        "tree": g.remember(content="the apple tree in the garden", keys=["apple"]).memory_id,
    }


def test_recall_top1_uses_cross_encoder(reranked: MemoryGraph) -> None:
    ids = _seed(reranked)
    r = reranked.recall(query="apple", context="who bakes pie with cinnamon")
    assert r.memory is not None and r.memory.memory_id == ids["pie"]
    assert r.memory.score_kind == "cross_encoder_logit"


def test_recall_direct_reranks_pool(reranked: MemoryGraph) -> None:
    ids = _seed(reranked)
    res = reranked.recall_direct(query="garden tree apple", reinforce=False)
    assert res.results[0].memory_id == ids["tree"] and res.results[0].score_kind == "cross_encoder_logit"
    assert [h.score for h in res.results] == sorted((h.score for h in res.results), reverse=True)
    plain = reranked.recall_direct(query="garden tree apple", reinforce=False, rerank=False)
    assert plain.results[0].score_kind == "rrf_fused_rank"


def test_not_found_gate_rejects_same_script_only(settings: Settings, minilm_embedder, tiny_reranker_dir: Path) -> None:
    gated = settings.with_overrides(rerank_min_score=2.5)
    g = MemoryGraph.open(gated, embedder=minilm_embedder, reranker=OnnxReranker(tiny_reranker_dir), progress=False)
    try:
        _seed(g)
        g.remember(content="사과는 빨갛다", keys=["apple", "사과"])
        assert g.recall_direct(query="apple zebra quantum", reinforce=False).rejected  # top logit below 2.5
        assert not g.recall_direct(query="apples are red and crunchy", reinforce=False).rejected
        korean = g.recall_direct(query="사과", reinforce=False)  # Hangul query, the top memory is Latin: bypassed
        assert not korean.rejected and korean.results
    finally:
        g.close()


def test_reranker_that_cannot_load_falls_back_with_one_warning(
    settings: Settings, minilm_embedder, caplog: pytest.LogCaptureFixture
) -> None:
    calls = []

    def broken() -> None:
        calls.append(1)
        raise RuntimeError("model.onnx is missing")

    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=broken, progress=False)
    try:
        _seed(g)
        with caplog.at_level(logging.WARNING, logger="keymem.memory"):
            a = g.recall_direct(query="apple pie", reinforce=False)
            b = g.recall_direct(query="apple tree", reinforce=False)
        assert a.results and b.results and a.results[0].score_kind == "rrf_fused_rank"
        assert len(calls) == 1
        assert sum("reranker unavailable" in r.message for r in caplog.records) == 1
    finally:
        g.close()


def _aliases(g: MemoryGraph, key_id: str) -> list[str]:
    return g.read_key(key_id=key_id).key.aliases


def test_autokey_promotes_after_n_routed_reads(graph: MemoryGraph) -> None:
    m = graph.remember(content="The user writes software in Rust", keys=["programming"])
    kid = m.keys[0].key_id
    query = "coding"
    for _ in range(3):
        r = graph.recall(query=query)
        assert r.keys[0].key_id == kid  # routed loosely: offered as a key, the agent reads through it
        assert _aliases(graph, kid) == []  # recall alone learns nothing
        graph.read_memory(memory_id=m.memory_id, via_key_id=kid)
    assert _aliases(graph, kid) == [query]
    r = graph.recall(query="coding")
    assert r.keys[0].key_id == kid and r.keys[0].score_kind == "literal_match"
    v = graph.read_memory(memory_id=m.memory_id)
    assert v.depth == 0.0 and v.validity.confirmation_count == 0  # routing confirmed, never content


def test_dismiss_cancels_pending_alias_and_prune(graph: MemoryGraph, clock) -> None:
    m = graph.remember(content="The user writes software in Rust", keys=["programming"])
    kid = m.keys[0].key_id
    for _ in range(2):
        graph.recall(query="coding")
        graph.read_memory(memory_id=m.memory_id, via_key_id=kid)
    graph.dismiss(memory_id=m.memory_id, key_id=kid)
    graph.recall(query="coding")
    graph.read_memory(memory_id=m.memory_id, via_key_id=kid)
    assert _aliases(graph, kid) == []  # the count restarted from zero
    for _ in range(2):
        graph.recall(query="coding")
        graph.read_memory(memory_id=m.memory_id, via_key_id=kid)
    assert _aliases(graph, kid) == ["coding"]
    clock.advance(graph.settings.autokey_prune_age + 1)
    assert graph.sweep()["aliases_pruned"] == 1
    assert _aliases(graph, kid) == []


def test_autokey_respects_confirm_floor(graph: MemoryGraph) -> None:
    m = graph.remember(content="The user plays chess", keys=["chess"])
    kid = m.keys[0].key_id
    # "board game strategy" routes only through lexical fallback; cosine to "chess" stays under a raised floor
    strict = graph.settings.with_overrides(autokey_confirm_floor=0.99)
    graph.settings = strict
    for _ in range(4):
        graph.recall(query="chess game")
        graph.read_memory(memory_id=m.memory_id, via_key_id=kid)
    assert _aliases(graph, kid) == []
