"""BM25 terms are stored with each memory, so opening a store does not re-run the tokenizer."""

from __future__ import annotations

import pytest

from keymem.memory.graph import MemoryGraph
from keymem.text.tokenize import TERMS_SEP, korean_fingerprint, tokenize, tokenizer_fingerprint


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


_OPEN_AND_REPORT = """
import json, sys
from pathlib import Path
from keymem.text import tokenize
from keymem.memory.graph import MemoryGraph
from keymem.settings import load_settings

s = load_settings({}, data_dir=Path(sys.argv[1]), embedding_backend="local", local_embedding_model="minilm-l6-v2",
                  local_embedding_model_path=Path(sys.argv[2]), rerank=False, buffer_pool_mb=64, embed_threads=1)
g = MemoryGraph.open(s, reranker=None, progress=False)
report = {"after_open": tokenize.kiwi_loaded()}
g.recall(query="coffee in the morning")
report["after_english_recall"] = tokenize.kiwi_loaded()
if sys.argv[3] == "korean":
    g.remember(content="동건이는 서울에서 커피를 마셨다", keys=["동건"], key_types=["name"])
report["korean_meta"] = g.meta("lexical_tokenizer_ko")
g.close()
print(json.dumps(report))
"""


def _open_in_child(data_dir, minilm_dir, then: str) -> dict:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _OPEN_AND_REPORT, str(data_dir), str(minilm_dir), then],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_store_without_korean_never_builds_kiwi(graph: MemoryGraph, settings, minilm_dir) -> None:  # type: ignore[no-untyped-def]
    graph.remember(content="Coffee in the morning with Dennis", keys=["coffee", "Dennis"], key_types=["concept", "name"])
    graph.close()
    first = _open_in_child(settings.data_dir, minilm_dir, "korean")  # English store; then a Korean write
    assert first["after_open"] is False and first["after_english_recall"] is False
    second = _open_in_child(settings.data_dir, minilm_dir, "none")  # the store now holds Korean terms
    assert second["after_open"] is True
    assert second["korean_meta"] is not None and second["korean_meta"].startswith("kiwipiepy-")


@pytest.mark.raw_writes
def test_a_kiwi_change_retokenises_only_korean_memories(graph: MemoryGraph, settings, minilm_embedder) -> None:  # type: ignore[no-untyped-def]
    ko = graph.remember(content="동건이는 서울에서 커피를 마셨다", keys=["동건"], key_types=["name"]).memory_id
    en = graph.remember(content="Tea with lemon", keys=["tea"]).memory_id
    g = _reopen(graph, settings, minilm_embedder)  # stores the Korean fingerprint
    g.store.raw("MATCH (m:Meta) WHERE m.name = 'lexical_tokenizer_ko' SET m.value = 'kiwipiepy-0.0-old'")
    g.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.terms = $t", {"id": ko, "t": f"낡은{TERMS_SEP}용어"})
    g.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.terms = $t", {"id": en, "t": f"zzmarker{TERMS_SEP}tea"})
    g2 = _reopen(g, settings, minilm_embedder)
    try:
        assert _terms(g2, ko) == TERMS_SEP.join(tokenize("동건 동건이는 서울에서 커피를 마셨다"))
        assert g2.lexical.search("낡은", 5, "default") == []
        assert [h[0] for h in g2.lexical.search("zzmarker", 5, "default")] == [en]  # not re-tokenised
        assert g2.meta("lexical_tokenizer_ko") == korean_fingerprint()
    finally:
        g2.close()


@pytest.mark.raw_writes
def test_korean_terms_written_here_are_reused_on_open(graph: MemoryGraph, settings, minilm_embedder) -> None:  # type: ignore[no-untyped-def]
    # The first Korean memory stamps this Kiwi's fingerprint with its terms; without the stamp every
    # open re-tokenised every Korean memory (a whole-store rewrite at open).
    assert graph.meta("lexical_tokenizer_ko") is None
    ko = graph.remember(content="동건이는 서울에서 커피를 마셨다", keys=["동건"], key_types=["name"]).memory_id
    assert graph.meta("lexical_tokenizer_ko") == korean_fingerprint()
    graph.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.terms = $t", {"id": ko, "t": f"표식{TERMS_SEP}동건"})
    g = _reopen(graph, settings, minilm_embedder)
    try:
        assert _terms(g, ko) == f"표식{TERMS_SEP}동건"  # not re-tokenised
        assert [h[0] for h in g.lexical.search("표식", 5, "default")] == [ko]
    finally:
        g.close()
