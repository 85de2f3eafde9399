"""Navigation and recall on a real store with the real MiniLM model."""

from __future__ import annotations

import pytest

from keymem.errors import InvalidInput, NotFound
from keymem.memory.graph import MemoryGraph


def link_weights(graph: MemoryGraph) -> dict[tuple[str, str], float]:
    rows = graph.store.raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) RETURN k.id AS k, m.id AS m, l.weight AS w")
    return {(r["k"], r["m"]): r["w"] for r in rows}


def memory_state(graph: MemoryGraph) -> list[tuple]:
    rows = graph.store.raw(
        "MATCH (m:Memory) RETURN m.id AS id, m.access_count AS a, m.depth AS d, m.last_confirmed_at AS c "
        "ORDER BY id"
    )
    return [tuple(r.values()) for r in rows]


@pytest.fixture
def fruit(graph: MemoryGraph) -> dict[str, str]:
    ids = {}
    ids["newton"] = graph.remember(content="Newton watched an apple fall and thought about gravity",
                                   keys=["Newton", "apple", "gravity"], key_types=["name", "concept", "concept"]).memory_id
    ids["apple"] = graph.remember(content="Apples are a red fruit", keys=["apple", "fruit"]).memory_id
    ids["straw"] = graph.remember(content="The user likes strawberries", keys=["fruit", "strawberry"]).memory_id
    ids["code"] = graph.remember(content="The user writes Python at work", keys=["Python", "programming"]).memory_id
    return ids


def test_recall_routes_keys_and_previews_one_memory(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    before_w, before_m = link_weights(graph), memory_state(graph)
    r = graph.recall(query="Newton").dump()
    assert set(r) == {"keys", "memory", "memories", "confident", "note", "omitted", "namespaces"}
    assert r["namespaces"] is None and r["omitted"] == 0
    assert r["confident"] and r["note"] is None
    assert r["memories"][0]["memory_id"] == fruit["newton"] and r["memories"][0]["hops"] == 0
    top = r["keys"][0]
    assert top["key"] == "Newton" and top["score_kind"] == "literal_match"
    assert set(top) == {"key_id", "key", "key_type", "aliases", "score", "score_kind", "memory_count", "is_hub",
                        "specificity"}
    mem = r["memory"]
    assert mem["memory_id"] == fruit["newton"] and mem["matched_key"]["key"] == "Newton"
    assert {k["key"] for k in mem["connected_keys"]} == {"apple", "gravity"}
    assert mem["validity"]["status"] == "fresh"
    # the preview is passive: nothing changed
    assert link_weights(graph) == before_w and memory_state(graph) == before_m


def test_recall_concept_routing_by_cosine(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    # "coding" names no key and routes "programming" only loosely: the key is offered, no memory is
    # presented as the answer, and the result says why.
    r = graph.recall(query="coding", explain=True)
    assert r.keys and r.keys[0].key == "programming" and r.keys[0].score_kind == "key_cosine"
    assert r.keys[0].score is not None and r.keys[0].score < 0.8
    assert r.memory is None and r.memories == [] and not r.confident
    assert r.note is not None and "with confidence" in r.note
    assert r.namespaces == {"default": len(r.keys)}
    named = graph.recall(query="programming")  # the key named literally: confident
    assert named.confident and named.memory is not None and named.memory.memory_id == fruit["code"]


def test_weak_recall_note_matches_the_keys_shown(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    """The weak-answer note points at keys only when keys are shown; with none, it says so."""
    loose = graph.recall(query="coding")
    assert loose.keys and loose.note is not None and "the keys below match only loosely" in loose.note
    none = graph.recall(query="What is 17 times 23?")
    assert none.keys == [] and not none.confident and none.note is not None
    assert "below" not in none.note and "read_key" not in none.note
    assert "no key comes close" in none.note and "browse_keys" in none.note


def test_recall_context_picks_memory_inside_key(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    r = graph.recall(query="fruit", context="which fruit does the user like? strawberries")
    assert r.memory is not None and r.memory.memory_id == fruit["straw"]
    r2 = graph.recall(query="fruit", context="what colour are apples")
    assert r2.memory is not None and r2.memory.memory_id == fruit["apple"]


def test_recall_nothing_matches(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    r = graph.recall(query="quantum chromodynamics lattice")
    assert r.memory is None or r.keys
    with pytest.raises(InvalidInput, match="top_k"):
        graph.recall(query="x", top_k=0)
    with pytest.raises(InvalidInput, match="query"):
        graph.recall(query="")


def test_read_key_ranking_and_pagination(graph: MemoryGraph) -> None:
    ids = [graph.remember(content=f"hub fact number {i} about topic", keys=["topic"]).memory_id for i in range(7)]
    kid = graph.read_key(key_id=graph.remember(content="the topic is broad", keys=["topic"]).keys[0].key_id).key.key_id
    page1 = graph.read_key(key_id=kid, limit=3)
    page2 = graph.read_key(key_id=kid, limit=3, offset=3)
    assert page1.total == 8 and page1.key.is_hub and page1.key.memory_count == 8
    assert [m.within_key_rank for m in page1.memories + page2.memories] == [1, 2, 3, 4, 5, 6]
    assert not {m.memory_id for m in page1.memories} & {m.memory_id for m in page2.memories}
    # a strengthened link ranks first; a query re-ranks lexically
    graph.read_memory(memory_id=ids[5], via_key_id=kid)
    assert graph.read_key(key_id=kid, limit=1).memories[0].memory_id == ids[5]
    assert graph.read_key(key_id=kid, query="number 3").memories[0].memory_id == ids[3]
    with pytest.raises(NotFound):
        graph.read_key(key_id=kid, namespace="elsewhere")


def test_read_memory_hebbian_only_on_taken_edge(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    mid = fruit["apple"]
    keys = {k.key: k.key_id for k in graph.read_memory(memory_id=mid).keys}
    before = link_weights(graph)
    v = graph.read_memory(memory_id=mid, via_key_id=keys["fruit"])
    after = link_weights(graph)
    assert after[(keys["fruit"], mid)] == pytest.approx(before[(keys["fruit"], mid)] + 0.1)
    assert after[(keys["apple"], mid)] == before[(keys["apple"], mid)]
    assert v.access_count == 2 and v.depth == 0.0 and v.validity.confirmation_count == 0
    for _ in range(40):
        graph.read_memory(memory_id=mid, via_key_id=keys["fruit"])
    assert link_weights(graph)[(keys["fruit"], mid)] == pytest.approx(3.0)  # bounded
    with pytest.raises(NotFound, match="not linked"):
        graph.read_memory(memory_id=mid, via_key_id=graph.recall(query="Python").keys[0].key_id)


def test_browse_keys_hubs_first(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    graph.remember(content="Bananas are yellow fruit", keys=["fruit", "banana"])
    res = graph.browse_keys(namespace="default")
    assert res.keys[0].key == "fruit" and res.keys[0].is_hub and res.keys[0].memory_count == 3
    assert res.total == len({k.key for k in res.keys}) and all(not k.is_hub for k in res.keys[1:])
    hubs = graph.browse_keys(namespace="default", hubs_only=True)
    assert [k.key for k in hubs.keys] == ["fruit"] and hubs.total == 1
    assert res.keys[0].specificity < res.keys[-1].specificity


def test_associative_leap_two_hops(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    """"Newton" reaches "user likes strawberries" only through apple -> fruit (two hops)."""
    target = fruit["straw"]
    # not by BM25: no shared term with the query
    assert target not in [d for d, _ in graph.lexical.search("Newton", 10, "default")]
    # not by the query's embedding alone: no key of the target routes from "Newton"
    q = graph.embed(["Newton"])[0]
    target_keys = {k.key_id for k in graph.read_memory(memory_id=target).keys}
    routed = {k for k, _ in graph.vectors.search(q, "default", 50, min_score=graph.thresholds.key_recall)}
    assert not routed & target_keys
    one_hop = [h.memory_id for h in graph.recall_direct(query="Newton", hops=1, reinforce=False).results]
    two_hop = graph.recall_direct(query="Newton", hops=2, reinforce=False).results
    assert target not in one_hop
    hit = next(h for h in two_hop if h.memory_id == target)
    assert hit.hops == 2 and hit.score_kind == "rrf_fused_rank"
    assert two_hop[0].memory_id == fruit["newton"] and two_hop[0].hops == 0


def test_recall_direct_hebbian_bounded(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    key = {k.key: k.key_id for k in graph.read_memory(memory_id=fruit["apple"]).keys}["apple"]
    before = link_weights(graph)
    graph.recall_direct(query="apple", top_k=1)
    after = link_weights(graph)
    returned = graph.recall_direct(query="apple", top_k=1, reinforce=False).results[0].memory_id
    assert after[(key, returned)] > before[(key, returned)]
    unused = [m for (k, m) in before if k == key and m != returned]
    assert unused and all(after[(key, m)] < before[(key, m)] for m in unused)
    for _ in range(200):
        graph.recall_direct(query="apple", top_k=1, hops=0)
    w = link_weights(graph)
    assert all(0.1 <= v <= 3.0 for v in w.values())


def test_comparison_query_gets_evidence_for_both(graph: MemoryGraph) -> None:
    graph.remember_batch([
        {"content": "Marie Curie was born in Warsaw, Poland", "keys": ["Marie Curie", "birthplace"], "key_types": ["name", "concept"]},
        {"content": "Marie Curie won two Nobel prizes", "keys": ["Marie Curie", "Nobel"], "key_types": ["name", "concept"]},
        {"content": "Marie Curie worked in Paris", "keys": ["Marie Curie", "Paris"], "key_types": ["name", "proper_noun"]},
        {"content": "Marie Curie discovered polonium", "keys": ["Marie Curie", "polonium"], "key_types": ["name", "concept"]},
        {"content": "Lise Meitner was Austrian by nationality", "keys": ["Lise Meitner", "nationality"], "key_types": ["name", "concept"]},
        {"content": "Marie Curie had Polish nationality and later French", "keys": ["Marie Curie", "nationality"], "key_types": ["name", "concept"]},
    ])
    q = "Were Marie Curie and Lise Meitner of the same nationality?"
    top2 = [h.content for h in graph.recall_direct(query=q, top_k=2, hops=0, reinforce=False).results]
    assert any("Meitner" in c for c in top2) and any("Curie" in c and "nationality" in c for c in top2)


def test_recall_inject_floor(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    res = graph.recall_inject(prompt="What does Newton have to do with gravity?")  # names a stored name
    assert fruit["newton"] in res.memory_ids and "gravity" in res.text
    # common words matched literally ("fruit") name nothing specific: the hook stays quiet
    assert graph.recall_inject(prompt="what fruit does the user like, strawberries?").memory_ids == []
    assert graph.recall_inject(prompt="zzzz qqqq xxxx").memory_ids == []


def test_names_with_punctuation_match_literally(graph: MemoryGraph) -> None:
    m = graph.remember(content="The user's dentist is on Main Street", keys=["Dr. Smith", "dentist"],
                       key_types=["name", "concept"])
    r = graph.recall(query="when is my appointment with dr smith?")
    assert r.keys[0].key == "Dr. Smith" and r.keys[0].score_kind == "literal_match"
    assert r.memory is not None and r.memory.memory_id == m.memory_id
    ko = graph.remember(content="동건은 딸기를 좋아한다", keys=["동건"], key_types=["name"])
    r2 = graph.recall(query="동건이 좋아하는 과일은?")
    assert r2.keys[0].key == "동건" and r2.memory is not None and r2.memory.memory_id == ko.memory_id


def test_association_enters_top10_only_with_hops(graph: MemoryGraph, fruit: dict[str, str]) -> None:
    """With unrelated memories around, the memory reached through apple -> fruit is in the top 10
    at hops 2 and not at hops 0 or 1; the direct hit stays first."""
    for i in range(12):
        graph.remember(content=f"Unrelated note {i} about the weekly team meeting schedule",
                       keys=[f"meeting {i}", "schedule"])
    target = fruit["straw"]
    ranked = {h: [r.memory_id for r in graph.recall_direct(query="Newton", top_k=10, hops=h, reinforce=False).results]
              for h in (0, 1, 2)}
    assert target not in ranked[0] and target not in ranked[1]
    assert target in ranked[2]
    assert fruit["apple"] in ranked[1] and fruit["apple"] not in ranked[0]
    assert all(r[0] == fruit["newton"] for r in ranked.values())


def test_shared_specific_key_lifts_a_weak_direct_hit(graph: MemoryGraph) -> None:
    """A memory found weakly by the query climbs when it shares a specific key with the best hit."""
    best = graph.remember(content="Melanie painted a sunrise over the lake", keys=["lakeside series", "lake"]).memory_id
    for i in range(12):
        graph.remember(content=f"Melanie painted the kitchen wall number {i} white again last spring",
                       keys=[f"wall {i}", "home repair"])
    target = graph.remember(content="She framed it for the hallway and everyone admired how it painted the morning",
                            keys=["lakeside series", "framing"]).memory_id
    def rank(h: int) -> int:
        ids = [r.memory_id for r in graph.recall_direct(query="Melanie painted a sunrise", top_k=50, hops=h,
                                                        reinforce=False).results]
        return ids.index(target) + 1
    assert graph.recall_direct(query="Melanie painted a sunrise", hops=2, reinforce=False).results[0].memory_id == best
    assert rank(2) < rank(0)
    assert rank(0) > 10 >= rank(2)
