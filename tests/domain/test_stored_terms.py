"""BM25 terms are stored with each memory, so opening a store does not re-run the tokenizer."""

from __future__ import annotations

import pytest

from keymem.memory.graph import MemoryGraph
from keymem.memory.tokenize import TERMS_SEP, tokenize, tokenizer_fingerprint


def _terms(graph: MemoryGraph, mid: str) -> str | None:
    return graph.store.raw("MATCH (m:Memory) WHERE m.id = $id RETURN m.terms AS t", {"id": mid})[0]["t"]


def _reopen(graph: MemoryGraph, settings, minilm_embedder) -> MemoryGraph:  # type: ignore[no-untyped-def]
    graph.close()
    return MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)


def test_terms_are_written_with_the_memory(graph: MemoryGraph) -> None:
    mid = graph.remember(content="동건이는 서울에서 파이썬을 배웠다", keys=["동건", "Python"],
                         key_types=["name", "concept"]).memory_id
    stored = _terms(graph, mid)
    assert stored is not None
    assert stored.split(TERMS_SEP) == tokenize("동건 Python 동건 Python 동건이는 서울에서 파이썬을 배웠다")
    assert graph.meta("lexical_tokenizer") == tokenizer_fingerprint()


@pytest.mark.raw_writes
def test_open_uses_stored_terms(graph: MemoryGraph, settings, minilm_embedder) -> None:  # type: ignore[no-untyped-def]
    mid = graph.remember(content="Tea with lemon", keys=["tea"]).memory_id
    # Terms only the stored column holds: if open re-tokenised the content, the search would miss.
    graph.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.terms = $t", {"id": mid, "t": f"zzmarker{TERMS_SEP}tea"})
    g = _reopen(graph, settings, minilm_embedder)
    try:
        assert [h[0] for h in g.lexical.search("zzmarker", 5, "default")] == [mid]
    finally:
        g.close()


@pytest.mark.raw_writes
@pytest.mark.parametrize("why", ["missing", "tokenizer changed"])
def test_open_retokenises_and_stores(graph: MemoryGraph, settings, minilm_embedder, why: str) -> None:  # type: ignore[no-untyped-def]
    mid = graph.remember(content="Coffee in the morning", keys=["coffee"]).memory_id
    other = graph.remember(content="Biscuits with tea", keys=["tea"]).memory_id
    if why == "missing":  # a store written before terms were kept, or an import
        graph.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.terms = NULL", {"id": mid})
    else:
        graph.store.raw("MATCH (m:Meta) WHERE m.name = 'lexical_tokenizer' SET m.value = 'kiwipiepy-0.0-old'")
        graph.store.raw("MATCH (m:Memory) SET m.terms = 'stale'")
    g = _reopen(graph, settings, minilm_embedder)
    try:
        assert _terms(g, mid) == TERMS_SEP.join(tokenize("coffee Coffee in the morning"))
        assert [h[0] for h in g.lexical.search("morning coffee", 5, "default")] == [mid]
        assert [h[0] for h in g.lexical.search("biscuits", 5, "default")] == [other]
        assert g.lexical.search("stale", 5, "default") == []
        assert g.meta("lexical_tokenizer") == tokenizer_fingerprint()
    finally:
        g.close()
