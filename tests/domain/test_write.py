"""The write path on a real store with the real MiniLM model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keymem.errors import InvalidInput, NotFound
from keymem.memory.graph import MemoryGraph
from tests.conftest_engines import ENGINES, engine_url


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Every test here on both engines: the write path is the store contract's."""
    yield from engine_url(request)


def counts(graph: MemoryGraph) -> dict[str, int]:
    rows = graph.store.raw(
        "MATCH (m:Memory) WITH count(m) AS m MATCH (k:Key) WITH m, count(k) AS k "
        "MATCH ()-[l:LINKS]->() RETURN m, k, count(l) AS l"
    )
    return rows[0] if rows else {"m": 0, "k": 0, "l": 0}


def test_remember_returns_contract_shape(graph: MemoryGraph) -> None:
    r = graph.remember(content="The user likes strawberries", keys=["strawberry", "fruit"]).dump()
    assert set(r) == {"memory_id", "keys", "duplicate"}
    assert r["duplicate"] is False and r["memory_id"].startswith("m_")
    assert [k["key"] for k in r["keys"]] == ["strawberry", "fruit"]
    assert all(set(k) == {"key_id", "key", "key_type"} and k["key_type"] == "concept" for k in r["keys"])


def test_duplicate_returns_existing_id(graph: MemoryGraph) -> None:
    a = graph.remember(content="User lives in  Seoul", keys=["home"])
    b = graph.remember(content="user lives in seoul", keys=["city"])
    assert b.duplicate is True and b.memory_id == a.memory_id
    c = graph.remember(content="user lives in seoul", keys=["city"], namespace="work")
    assert c.duplicate is False  # duplicates are per namespace


@pytest.mark.parametrize(
    "args, message",
    [
        ({"content": "x", "keys": []}, "at least one key"),
        ({"content": "x"}, "keys must be a list"),
        ({"content": "   ", "keys": ["a"]}, "content must not be empty"),
        ({"content": 5, "keys": ["a"]}, "content must be a string"),
        ({"content": "x", "keys": ["a"], "key_types": ["person"]}, "key type 'person'"),
        ({"content": "x", "keys": ["a"], "decay_profile": "forever"}, "decay_profile"),
        ({"content": "x", "keys": ["a"], "ttl_seconds": -1}, "ttl_seconds"),
        ({"content": "x", "keys": ["a"], "ttl_seconds": float("nan")}, "ttl_seconds"),
        ({"content": "x", "keys": ["a"], "namespace": "bad ns!"}, "namespace"),
        ({"content": "bad \ud800 surrogate", "keys": ["a"]}, "surrogate"),
        ({"content": "x", "keys": ["a"], "related_to": ["m_0123456789abcdef0123"]}, "does not exist"),
        ({"content": "x", "keys": [""]}, "key must not be empty"),
    ],
)
def test_bad_input_writes_nothing(graph: MemoryGraph, args: dict, message: str) -> None:
    before = counts(graph)
    with pytest.raises((InvalidInput, NotFound), match=message):
        graph.remember(**args)
    assert counts(graph) == before
    assert len(graph.lexical) == 0


def test_batch_is_atomic(graph: MemoryGraph) -> None:
    with pytest.raises(InvalidInput, match=r"items\[1\]"):
        graph.remember_batch([{"content": "first fact", "keys": ["one"]}, {"content": "second", "keys": []}])
    assert counts(graph)["m"] == 0
    res = graph.remember_batch(
        [
            {"content": "Alice works at Acme", "keys": ["Alice", "Acme"], "key_types": ["name", "proper_noun"]},
            {"content": "Acme builds rockets", "keys": ["Acme", "rocket"], "key_types": {"Acme": "proper_noun"}},
            {"content": "Alice works at Acme", "keys": ["Alice"], "key_types": ["name"]},
        ]
    )
    ids = [r.memory_id for r in res.results]
    assert ids[0] == ids[2] and res.results[2].duplicate
    acme = {k.key_id for r in res.results[:2] for k in r.keys if k.key == "Acme"}
    assert len(acme) == 1  # one key reused inside the batch


def test_a_batch_item_relates_to_a_memory_an_earlier_item_writes(graph: MemoryGraph,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch: the second item names the first item's new memory in related_to, and the third repeats the
    first. Every engine answers the same (a scope's body never reads back what it wrote)."""
    from keymem.memory import write

    ids = iter(f"m_{i:020x}" for i in range(1, 100))
    monkeypatch.setattr(write, "new_id", lambda prefix: next(ids))
    first = "m_" + f"{1:020x}"
    res = graph.remember_batch([
        {"content": "Mina adopted a cat named Tofu", "keys": ["Mina", "cat"], "key_types": ["name", "concept"]},
        {"content": "Tofu sleeps on the piano", "keys": ["Tofu", "piano"], "related_to": [first]},
        {"content": "mina adopted a cat named tofu", "keys": ["pets"]},
    ])
    assert [r.memory_id for r in res.results] == [first, "m_" + f"{2:020x}", first]
    assert [r.duplicate for r in res.results] == [False, False, True]
    assert [k.key for k in res.results[2].keys] == ["Mina", "cat"]  # the first item's keys, in memory/keys' order
    assert graph.read_memory(memory_id=res.results[1].memory_id).related_to == [first]
    assert {r["id"] for r in graph.store.query("memory/related", id=first)} == {res.results[1].memory_id}
    assert counts(graph) == {"m": 2, "k": 4, "l": 4}
    with pytest.raises(NotFound, match=r"^items\[1\]: related_to"):  # a related memory in another namespace
        graph.remember_batch([
            {"content": "a memory at work", "keys": ["work"], "namespace": "work"},
            {"content": "points across namespaces", "keys": ["home"], "related_to": ["m_" + f"{3:020x}"]},
        ])
    assert counts(graph)["m"] == 2


def test_forgetting_a_version_keeps_the_keys_the_scope_still_links(graph: MemoryGraph) -> None:
    """Keys left with no memory go with the forgotten one, decided before anything is deleted: a key the
    newest version links again (in the same scope) stays, one shared by two deleted versions goes."""
    a = graph.remember(content="the meeting is about the budget", keys=["meeting", "budget"])
    b = graph.correct(memory_id=a.memory_id, content="the meeting is about the garden", keys=["meeting", "garden"])
    c = graph.correct(memory_id=b.memory_id, content="the budget pays for a violin", keys=["budget", "violin"])
    assert {k.key for k in graph.read_memory(memory_id=c.memory_id).keys} == {"budget", "violin"}  # a went
    assert {r["text"] for r in graph.store.query("key/all")} == {"meeting", "budget", "garden", "violin"}
    graph.forget(memory_id=c.memory_id)  # c and b go; every key with them
    assert counts(graph) == {"m": 0, "k": 0, "l": 0}


def test_names_match_exactly_concepts_merge(graph: MemoryGraph) -> None:
    a = graph.remember(content="Dongkeon likes tea", keys=["Dongkeon"], key_types=["name"])
    b = graph.remember(content="Dongkun likes coffee", keys=["Dongkun"], key_types=["name"])
    assert a.keys[0].key_id != b.keys[0].key_id
    c = graph.remember(content="dongkeon drinks tea daily", keys=["DONGKEON"], key_types=["name"])
    assert c.keys[0].key_id == a.keys[0].key_id  # case-folded exact match
    lang = graph.remember(content="The user writes Rust", keys=["programming language"])
    more = graph.remember(content="The user also writes Go", keys=["programming languages"])
    assert more.keys[0].key_id == lang.keys[0].key_id  # merged into an alias of the first key
    view = graph.read_key(key_id=lang.keys[0].key_id).key
    assert view.aliases == ["programming languages"] and view.memory_count == 2
    other = graph.remember(content="Strawberries are sweet", keys=["strawberry"])
    assert other.keys[0].key_id != lang.keys[0].key_id


def test_a_concept_key_merges_into_one_created_earlier_in_the_batch(graph: MemoryGraph) -> None:
    """The merge target found among the batch's own new keys is taken from the batch, not read back
    from the store (a FalkorDB scope's reads do not see its writes)."""
    res = graph.remember_batch([{"content": "The user writes Rust", "keys": ["programming language"]},
                                {"content": "The user also writes Go", "keys": ["programming languages"]}])
    first, second = (r.keys[0] for r in res.results)
    assert second.key_id == first.key_id and second.key == "programming language"
    assert graph.read_key(key_id=first.key_id).key.aliases == ["programming languages"]
    assert counts(graph) == {"m": 2, "k": 1, "l": 2}


def test_correct_versions_one_step(graph: MemoryGraph, clock) -> None:
    a = graph.remember(content="user lives in Seoul", keys=["home", "city"], decay_profile="stable", ttl_seconds=86400 * 30)
    b = graph.correct(memory_id=a.memory_id, content="user moved to Busan")
    assert b.supersedes == a.memory_id
    old = graph.read_memory(memory_id=a.memory_id)
    new = graph.read_memory(memory_id=b.memory_id)
    assert old.superseded_by == b.memory_id and not old.active
    assert new.supersedes == a.memory_id and new.active
    assert new.validity.decay_profile == "stable" and new.expires_at is not None  # inherited
    assert {k.key for k in new.keys} == {"home", "city"}
    hits = graph.read_key(key_id=new.keys[0].key_id).memories
    assert [h.memory_id for h in hits] == [b.memory_id]  # the old version is out of every search
    assert [h.memory_id for h in graph.recall_direct(query="Seoul Busan", hops=0).results] == [b.memory_id]
    with pytest.raises(InvalidInput, match="superseded"):
        graph.correct(memory_id=a.memory_id, content="another")
    c = graph.correct(memory_id=b.memory_id, content="user moved to Daegu")
    with pytest.raises(NotFound):  # the generation before the previous one is deleted
        graph.read_memory(memory_id=a.memory_id)
    assert graph.read_memory(memory_id=b.memory_id).superseded_by == c.memory_id


def test_a_superseded_version_says_so_in_its_validity(graph: MemoryGraph) -> None:
    """Freshly corrected, the old version is as fresh as the new one; its status must not read "fresh"."""
    a = graph.remember(content="the office is on floor 3", keys=["office", "floor"])
    b = graph.correct(memory_id=a.memory_id, content="the office is on floor 5")
    old = graph.read_memory(memory_id=a.memory_id)
    assert not old.active and old.superseded_by == b.memory_id
    assert old.validity.status == "superseded" and old.validity.freshness == 1.0
    assert old.validity.verification_required and old.validity.verification_recommended
    new = graph.read_memory(memory_id=b.memory_id)
    assert new.validity.status == "fresh" and not new.validity.verification_required
    with pytest.raises(InvalidInput, match="superseded by " + b.memory_id):
        graph.confirm_memory(memory_id=a.memory_id, evidence="the user said floor 3")  # confirm the current one
    # every search shows the current version only, so no other view carries the old status
    previews = [m.validity.status for m in graph.read_key(key_id=new.keys[0].key_id).memories]
    assert previews == ["fresh"]
    rec = graph.recall(query="office floor")
    assert rec.memory is not None and rec.memory.memory_id == b.memory_id and rec.memory.validity.status == "fresh"


def test_forget_removes_memory_links_and_orphan_keys(graph: MemoryGraph) -> None:
    a = graph.remember(content="temp fact about zebras", keys=["zebra", "animal"])
    graph.remember(content="lions are animals", keys=["animal"])
    before = counts(graph)
    assert graph.forget(memory_id=a.memory_id).dump() == {"memory_id": a.memory_id, "deleted": True}
    after = counts(graph)
    assert after["m"] == before["m"] - 1 and after["k"] == before["k"] - 1 and after["l"] == before["l"] - 2
    with pytest.raises(NotFound):
        graph.read_memory(memory_id=a.memory_id)
    with pytest.raises(NotFound):
        graph.forget(memory_id=a.memory_id)


def test_dismiss_weakens_to_floor_never_cuts(graph: MemoryGraph) -> None:
    a = graph.remember(content="Paris is in France", keys=["Paris", "France"], key_types=["proper_noun", "proper_noun"])
    kid = a.keys[0].key_id
    weights = [graph.dismiss(memory_id=a.memory_id, key_id=kid).link_weight for _ in range(6)]
    assert weights[0] == 0.5 and weights == sorted(weights, reverse=True) and weights[-1] == 0.1
    assert any(k.key_id == kid for k in graph.read_memory(memory_id=a.memory_id).keys)
    with pytest.raises(NotFound):
        graph.dismiss(memory_id=a.memory_id, key_id="k_00000000000000000000")


def test_confirm_deepens_and_refreshes(graph: MemoryGraph, clock) -> None:
    a = graph.remember(content="the meeting is on Friday", keys=["meeting"], decay_profile="transient")
    clock.advance(14 * 86400)
    stale = graph.read_memory(memory_id=a.memory_id)
    assert stale.validity.status == "aging" and stale.validity.freshness == pytest.approx(0.25, abs=1e-3)
    assert stale.depth == 0.0 and stale.validity.confirmation_count == 0  # reading is not confirming
    with pytest.raises(InvalidInput, match="evidence"):
        graph.confirm_memory(memory_id=a.memory_id, evidence="  ")
    c = graph.confirm_memory(memory_id=a.memory_id, evidence="user said so today")
    assert c.depth == pytest.approx(0.05) and c.validity.confirmation_count == 1
    assert c.validity.status == "fresh" and c.validity.freshness == 1.0
    assert c.last_confirmation == {"evidence": "user said so today", "source": None}
    for _ in range(30):
        c = graph.confirm_memory(memory_id=a.memory_id, evidence="again")
    assert c.depth == 1.0 and c.depth_stage == "deep"


def test_confirm_shows_its_evidence_and_source(graph: MemoryGraph) -> None:
    """confirm_memory(source="user") answered "source": null: the view's source is who stored the
    memory; the confirmation's own evidence and source are its last_confirmation."""
    a = graph.remember(content="the office moved to Berlin", keys=["office"], source={"tool": "test"})
    assert graph.read_memory(memory_id=a.memory_id).last_confirmation is None
    c = graph.confirm_memory(memory_id=a.memory_id, evidence="the user said so today", source="user")
    assert c.last_confirmation == {"evidence": "the user said so today", "source": "user"}
    assert c.source == {"tool": "test"}  # who stored it, unchanged
    read = graph.read_memory(memory_id=a.memory_id).dump()
    assert read["last_confirmation"] == {"evidence": "the user said so today", "source": "user"}
    assert graph.memory_json(a.memory_id)["last_confirmation"]["source"] == "user"  # a replayed confirm's answer


def test_validity_thresholds_and_permanent(graph: MemoryGraph, clock) -> None:
    a = graph.remember(content="standard fact", keys=["s"])
    p = graph.remember(content="permanent fact", keys=["p"], decay_profile="permanent")
    clock.advance(90 * 86400)
    v = graph.read_memory(memory_id=a.memory_id).validity
    assert v.freshness == pytest.approx(0.5, abs=1e-3) and v.status == "fresh"
    clock.advance(180 * 86400 + 60)
    v = graph.read_memory(memory_id=a.memory_id).validity
    assert v.status == "stale" and v.verification_required and v.verification_recommended
    assert graph.read_memory(memory_id=p.memory_id).validity.freshness == 1.0


def test_ttl_hides_at_once_and_sweep_deletes(graph: MemoryGraph, clock) -> None:
    a = graph.remember(content="short lived plan", keys=["plan"], ttl_seconds=60)
    kid = a.keys[0].key_id
    assert graph.read_key(key_id=kid).total == 1
    clock.advance(61)
    with pytest.raises(NotFound):
        graph.read_memory(memory_id=a.memory_id)
    assert graph.read_key(key_id=kid).total == 0
    assert graph.recall_direct(query="short lived plan").results == []
    assert graph.sweep()["expired"] == 1
    assert counts(graph)["m"] == 0


def test_namespaces_isolate_reads(graph: MemoryGraph) -> None:
    a = graph.remember(content="secret project falcon", keys=["falcon"], namespace="work")
    graph.remember(content="falcon is a bird", keys=["falcon"], namespace="home")
    with pytest.raises(NotFound):
        graph.read_memory(memory_id=a.memory_id, namespace="home")
    assert [h.content for h in graph.recall_direct(query="falcon", namespace="home").results] == ["falcon is a bird"]
    r = graph.recall(query="falcon", namespace="home")
    assert r.memory is not None and r.memory.content == "falcon is a bird"
    assert [k.memory_count for k in r.keys] == [1]
    assert graph.browse_keys(namespace="default").total == 0


def test_batch_error_names_the_item(graph: MemoryGraph) -> None:
    with pytest.raises(NotFound, match=r"^items\[1\]: related_to"):
        graph.remember_batch([
            {"content": "fine", "keys": ["a"]},
            {"content": "points nowhere", "keys": ["b"], "related_to": ["m_0123456789abcdef0123"]},
        ])
    assert counts(graph)["m"] == 0


def test_remember_recall_forget_and_reopen(graph: MemoryGraph, settings, minilm_embedder) -> None:  # type: ignore[no-untyped-def]
    """The whole path on each engine: written memories are recalled, a forgotten one is not, and a
    reopened graph loads the same mirror and recalls the same (its pages read back from the engine)."""
    tea = graph.remember(content="Mina drinks green tea every morning", keys=["Mina", "tea"], key_types=["name", "concept"])
    graph.remember(content="The office coffee machine is broken", keys=["coffee machine", "office"])
    gone = graph.remember(content="Mina used to drink coffee", keys=["Mina", "coffee"], key_types=["name", "concept"])

    def recalled(g: MemoryGraph) -> list[str]:
        return [m.memory_id for m in g.recall(query="what does Mina drink", top_k=5).memories]

    assert tea.memory_id in recalled(graph) and gone.memory_id in recalled(graph)
    graph.forget(memory_id=gone.memory_id)
    after = recalled(graph)
    assert tea.memory_id in after and gone.memory_id not in after
    before = graph.mirror.snapshot()
    graph.close()
    again = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
    try:
        assert again.mirror.snapshot() == before
        assert recalled(again) == after
    finally:
        again.close()
