"""The query is analysed once where a recall enters (``memory/query.py``), and every stage reads that."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import keymem.index.lexical
import keymem.memory.query
import keymem.text.suggest
from keymem.memory.graph import MemoryGraph
from keymem.memory.query import Query, stems_of
from keymem.text.stem import stem
from keymem.text.tokenize import literal_tokens, tokenize


def test_fields_are_the_analyses_the_stages_made_apart(graph: MemoryGraph) -> None:
    text = "What did Dorian's sister and my cousin bake for Ines Duarte at the lake house?"
    q = Query.analyse(graph, text)
    assert q.tokens == tuple(tokenize(text)) and q.stems == frozenset(stem(t) for t in tokenize(text))
    assert q.literal == frozenset(literal_tokens(text)) - {"what", "did", "and", "my", "for", "the", "at"}
    assert "ines duarte" in q.literal and "the lake" in q.literal  # a lone stopword is no literal; n-grams keep them
    assert q.capitals == ("Dorian", "Ines", "Duarte")  # possessive stripped, "What" is a stopword
    assert q.possessive and not Query.analyse(graph, "Where is the lake house?").possessive
    assert q.phrases and all(p.lower() != text.lower() for p in q.phrases)
    assert np.array_equal(q.vector, graph.embed([text, *q.phrases])[0])
    assert np.array_equal(q.phrase_vectors, graph.embed([text, *q.phrases])[1:])
    assert q.own_text == text and q.own_stems == q.stems and q.script == "latin"
    long = Query.analyse(graph, "Tell me about the lake house. " * 20)  # a prompt: routed by its whole text
    assert long.phrases == () and long.vector.shape == q.vector.shape


def test_lexical_stems_without_hub_names(graph: MemoryGraph) -> None:
    q = Query.analyse(graph, "When did Melanie's kids go camping with Melanie?")
    assert q.lexical_stems([]) == q.stems
    without = q.lexical_stems(["Melanie"])
    assert without == stems_of(tokenize("When did   kids go camping with  ?")) and stem("melanie") not in without
    assert q.lexical_stems(["Melanie"]) is without  # made once
    lone = Query.analyse(graph, "Melanie?")
    assert lone.lexical_stems(["Melanie"]) == lone.stems  # nothing searchable left: the whole query
    context = Query.analyse(graph, "pottery class\nthe user mentioned a weekend", own="pottery class")
    assert context.own_stems == stems_of(tokenize("pottery class")) != context.stems


def test_lexical_search_by_stems_equals_search_by_text(graph: MemoryGraph) -> None:
    for content in ("Melanie camped by the lake with her kids", "Caroline went to a pottery class",
                    "The lake froze over in January"):
        graph.remember(content=content, keys=["notes"])
    for text in ("camping at the lake", "Potteries and classes", "동건", ""):
        q = Query.analyse(graph, text or " ")
        assert graph.lexical.search_stems(q.stems, 10, "default") == graph.lexical.search(text, 10, "default")


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: Counter[str]) -> None:
    real: Callable[..., Any] = getattr(module, name)

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        calls[f"{name}:{text}"] += 1
        return real(text, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)


@pytest.mark.parametrize("entry", ["recall", "recall_inject", "recall_direct"])
def test_each_entry_point_analyses_its_query_once(graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch,
                                                  entry: str) -> None:
    graph.remember(content="Melanie painted a sunrise by the lake", keys=["Melanie", "painting", "sunrise"],
                   key_types=["name", "concept", "concept"])
    graph.remember(content="Caroline went to a pottery class", keys=["Caroline", "pottery"],
                   key_types=["name", "concept"])
    query = "What did Melanie paint by the lake?"
    calls: Counter[str] = Counter()
    _counting(monkeypatch, keymem.memory.query, "tokenize", calls)
    _counting(monkeypatch, keymem.memory.query, "literal_tokens", calls)
    _counting(monkeypatch, keymem.index.lexical, "tokenize", calls)
    _counting(monkeypatch, keymem.text.suggest, "suggest_keys", calls)
    if entry == "recall":
        assert graph.recall(query=query).memories
    elif entry == "recall_inject":
        assert graph.recall_inject(prompt=query).memory_ids
    else:
        assert graph.recall_direct(query=query, reinforce=False).results
    whole = {c: n for c, n in calls.items() if c.endswith(f":{query}")}
    assert whole == {f"tokenize:{query}": 1, f"literal_tokens:{query}": 1, f"suggest_keys:{query}": 1}
    # besides: at most the query without the names it gives, once (Query.lexical_stems: a general
    # question's other words must match what the name holds, deliver.corroborated)
    assert set(calls) - set(whole) <= {"tokenize:What did   paint by the lake?"}
    assert all(n == 1 for n in calls.values())
