"""check_invariants: healthy stores report nothing; each deliberate corruption is reported (both engines)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants, store_digest
from tests.conftest_engines import ENGINES, engine_url
from tests.reliability.conftest import World, healthy, open_graph, populate


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    yield from engine_url(request)


def _raw(text: str, **params: Any) -> Callable[[Any, World], None]:
    def run(graph: Any, w: World) -> None:
        def value(v: Any) -> Any:  # "m:name" -> a memory id of the world, "k:name" -> a key id
            if isinstance(v, str) and v[:2] in ("m:", "k:"):
                return (w.ids if v[0] == "m" else w.keys)[v[2:]]
            return v
        graph.store.raw(text, {k: value(v) for k, v in params.items()})
    return run


def _lexical_drop(graph: Any, w: World) -> None:
    graph.lexical.remove(w.ids["alice"])


def _lexical_ghost(graph: Any, w: World) -> None:
    graph.lexical.add("m_00000000deadbeef", "a forgotten memory", "default")


def _lexical_wrong_ns(graph: Any, w: World) -> None:
    graph.lexical.add(w.ids["secret"], "Bob Falcon", "default")


def _vector_cache(graph: Any, w: World) -> None:
    graph.vectors._cached_remove(w.keys["python"], "default")


CORRUPTIONS: dict[str, tuple[Callable[[Any, World], None], str]] = {
    "memory without keys": (
        _raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $m DELETE l", m="m:alice"), "memories without keys"),
    "link across namespaces": (
        _raw("MATCH (k:Key), (m:Memory) WHERE k.id = $k AND m.id = $m CREATE (k)-[:LINKS {weight: 1.0}]->(m)",
             k="k:secret", m="m:alice"), "LINKS edges across namespaces"),
    "link weight NaN": (
        _raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $m SET l.weight = 0.0 / 0.0", m="m:alice"),
        "link weights outside"),
    "link weight too high": (
        _raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $m SET l.weight = 99.0", m="m:alice"),
        "link weights outside"),
    "related across namespaces": (
        _raw("MATCH (a:Memory), (b:Memory) WHERE a.id = $a AND b.id = $b CREATE (a)-[:RELATED_TO {weight: 1.0}]->(b)",
             a="m:alice", b="m:secret"), "RELATED_TO edges across namespaces"),
    "supersedes to a missing node": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.supersedes = 'm_0123456789abcdef'", m="m:alice"),
        "supersedes points to a missing memory"),
    "superseded_by to a missing node": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.superseded_by = 'm_0123456789abcdef', m.active = false",
             m="m:alice"), "superseded_by points to a missing memory"),
    "two active versions": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.active = true", m="m:python_old"), "more than one active version"),
    "inactive without successor": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.active = false", m="m:alice"), "inactive memories with no successor"),
    "supersedes pointer cleared": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.supersedes = NULL", m="m:python"),
        "superseded_by not mirrored"),
    "superseded_by pointer cleared": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.superseded_by = NULL", m="m:python_old"),
        "supersedes not mirrored"),
    "supersedes edge deleted": (
        _raw("MATCH (a:Memory)-[s:SUPERSEDES]->(b:Memory) WHERE a.id = $m DELETE s", m="m:python"),
        "supersedes pointers without a SUPERSEDES edge"),
    "stray supersedes edge": (
        _raw("MATCH (a:Memory), (b:Memory) WHERE a.id = $a AND b.id = $b CREATE (a)-[:SUPERSEDES {at: 1.0}]->(b)",
             a="m:alice", b="m:deploy"), "SUPERSEDES edges that disagree"),
    "two versions supersede one memory": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.supersedes = $old", m="m:alice", old="m:python_old"),
        "superseded by several versions"),
    "concept key without vector": (
        _raw("MATCH (v:KeyVec) WHERE v.id = $k DELETE v", k="k:python"), "concept keys without a KeyVec row"),
    "vector without key": (
        _raw("MATCH (v:KeyVec) WHERE v.id = $k CREATE (:KeyVec {id: 'k_00000000deadbeef', namespace: 'default', vec: v.vec})",
             k="k:python"), "KeyVec rows without a concept key"),
    "vector of a name key": (
        _raw("MATCH (v:KeyVec) WHERE v.id = $k CREATE (:KeyVec {id: $n, namespace: 'default', vec: v.vec})",
             k="k:python", n="k:alice"), "KeyVec rows without a concept key"),
    "vector in another namespace": (
        _raw("MATCH (v:KeyVec) WHERE v.id = $k SET v.namespace = 'private'", k="k:python"), "KeyVec rows in another namespace"),
    "sentinel missing": (
        _raw("MATCH (v:KeyVec) WHERE v.id = '__sentinel__' DELETE v"), "sentinel"),
    "vector cache out of step": (_vector_cache, "vector cache counts"),
    "KeyName to a missing key": (
        _raw("CREATE (:KeyName {id: 'default\u001fghost', key_id: 'k_00000000deadbeef'})"), "KeyName rows pointing to a missing key"),
    "KeyName into another namespace": (
        _raw("CREATE (:KeyName {id: 'private\u001fpython', key_id: $k})", k="k:python"), "KeyName rows pointing into another namespace"),
    "key without its name": (
        _raw("MATCH (n:KeyName) WHERE n.key_id = $k DELETE n", k="k:alice"), "keys not found by their own name"),
    "key without memory": (
        _raw("CREATE (:Key {id: 'k_00000000deadbeef', namespace: 'default', text: 'x', norm: 'x', key_type: 'name'})"
             ), "keys without any memory"),
    "alias of a missing key": (
        _raw("CREATE (:Alias {id: 'a_00000000deadbeef', key_id: 'k_00000000deadbeef', namespace: 'default', text: 'x', "
             "norm: 'x', learned: false, hits: 0})"), "aliases of a missing key"),
    "pending alias of a missing key": (
        _raw("CREATE (:PendingAlias {id: 'p1', key_id: 'k_00000000deadbeef', query: 'q', count: 1})"),
        "pending aliases of a missing key"),
    "MemoryNorm to a missing memory": (
        _raw("CREATE (:MemoryNorm {id: 'default\u001fabc', memory_id: 'm_00000000deadbeef'})"),
        "MemoryNorm rows not pointing to an active memory"),
    "MemoryNorm to a superseded memory": (
        _raw("CREATE (:MemoryNorm {id: 'default\u001fabc', memory_id: $m})", m="m:python_old"),
        "MemoryNorm rows not pointing to an active memory"),
    "active memory without MemoryNorm": (
        _raw("MATCH (n:MemoryNorm) WHERE n.memory_id = $m DELETE n", m="m:alice"), "without a MemoryNorm row"),
    "two MemoryNorm rows": (
        _raw("CREATE (:MemoryNorm {id: 'default\u001fabc', memory_id: $m})", m="m:alice"), "several MemoryNorm rows"),
    "MemoryNorm id does not match the text": (
        _raw("MATCH (m:Memory) WHERE m.id = $m SET m.content = 'something else entirely'", m="m:alice"),
        "do not match their memory's text"),
    "lexical index lost a memory": (_lexical_drop, "missing from the lexical index"),
    "lexical index holds a forgotten memory": (_lexical_ghost, "still searchable"),
    "lexical index in the wrong namespace": (_lexical_wrong_ns, "namespace 'default'"),
}

# Corruptions an engine cannot be made to hold, with why.
CANNOT_CORRUPT = {"falkordb": {"link weight NaN": "FalkorDB keeps a property's value when SET to NaN"}}


def test_healthy_store_reports_nothing(graph: Any) -> None:
    assert check_invariants(graph) == []
    w = populate(graph)
    healthy(graph)
    graph.forget(memory_id=w.ids["python"])  # takes its history with it
    graph.dismiss(memory_id=w.ids["alice"], key_id=w.keys["alice"])
    graph.confirm_memory(memory_id=w.ids["deploy"], evidence="seen in the CI config")
    graph.read_memory(memory_id=w.ids["alice"], via_key_id=w.keys["alice"])
    graph.recall(query="tea")
    healthy(graph)


@pytest.mark.raw_writes
@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_each_corruption_is_reported(graph: Any, name: str) -> None:
    if name in CANNOT_CORRUPT.get(graph.store.capabilities.engine, {}):
        pytest.skip(CANNOT_CORRUPT[graph.store.capabilities.engine][name])
    w = populate(graph)
    healthy(graph)
    corrupt, expected = CORRUPTIONS[name]
    corrupt(graph, w)
    problems = check_invariants(graph)
    assert any(expected in p for p in problems), f"{name}: {problems}"


def test_expired_memory_pending_sweep(graph: Any, clock: Any, settings: Any, minilm_embedder: Any) -> None:
    """A TTL that has passed is tolerated until the sweep (searches filter it); strict mode says so."""
    graph.remember(content="temporary note about the build cache", keys=["build cache"], ttl_seconds=60)
    clock.advance(120)
    assert check_invariants(graph) == []
    assert any("expired memories still in the lexical index" in p for p in check_invariants(graph, strict_expiry=True))
    graph.sweep()
    assert check_invariants(graph, strict_expiry=True) == []


@pytest.mark.raw_writes
def test_corruption_survives_reopen_and_is_still_reported(graph: Any, settings: Any, minilm_embedder: Any,
                                                          clock: Any) -> None:
    """What doctor --check sees on a fresh open: the lexical index is rebuilt, the store's damage stays."""
    populate(graph)
    graph.store.raw("CREATE (:KeyName {id: 'default\u001fghost', key_id: 'k_00000000deadbeef'})")
    graph.close()
    g2 = open_graph(settings, minilm_embedder, clock)
    try:
        assert any("KeyName rows pointing to a missing key" in p for p in check_invariants(g2))
    finally:
        g2.close()


@pytest.mark.raw_writes
def test_store_with_a_keyless_memory_still_opens(graph: Any, settings: Any, minilm_embedder: Any, clock: Any) -> None:
    w = populate(graph)
    graph.store.raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $m DELETE l", {"m": w.ids["deploy"]})
    graph.close()
    g2 = open_graph(settings, minilm_embedder, clock)
    try:
        assert any("memories without keys" in p for p in check_invariants(g2))
    finally:
        g2.close()


@pytest.mark.raw_writes
def test_store_digest_detects_any_change(graph: Any) -> None:
    w = populate(graph)
    before = store_digest(graph)
    assert store_digest(graph) == before
    assert before["counts"]["Memory"] == 7
    graph.read_memory(memory_id=w.ids["alice"])  # access_count changes
    assert store_digest(graph)["sha256"] != before["sha256"]


@pytest.mark.raw_writes
def test_a_stale_mirror_is_reported(graph: Any) -> None:
    m = graph.remember(content="Weights live in the store and in the mirror", keys=["mirror"]).memory_id
    assert check_invariants(graph) == []
    graph.store.raw("MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $m SET l.weight = 2.0", {"m": m})
    problems = check_invariants(graph)
    assert any("graph mirror differs from the store for 1 memories" in p and m in p for p in problems)
    graph.reload_caches()
    assert check_invariants(graph) == []
