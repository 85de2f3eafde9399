"""browse_keys and the store's counts answer from the graph mirror: the same page, counts and totals
as the store's own aggregates, with no statement whose engine memory grows with the store."""

from __future__ import annotations

from typing import Any

from keymem.memory.graph import MemoryGraph

# The aggregate browse_keys used to run in the engine: the reference the mirror must agree with.
REFERENCE = (
    "MATCH (k:Key)-[:LINKS]->(m:Memory) "
    "WHERE k.namespace = $namespace AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now) "
    "WITH k, count(m) AS n WHERE n >= $min_count "
    "RETURN k.id AS id, n ORDER BY n DESC, k.norm ASC"
)


def reference(graph: MemoryGraph, namespace: str, min_count: int, now: float) -> list[tuple[str, int]]:
    rows = graph.store.raw(REFERENCE, {"namespace": namespace, "now": now, "min_count": min_count})
    return [(r["id"], int(r["n"])) for r in rows]


def page(graph: MemoryGraph, **args: Any) -> tuple[list[tuple[str, int]], int]:
    res = graph.browse_keys(**args)
    return [(k.key_id, k.memory_count) for k in res.keys], res.total


def test_browse_agrees_with_the_store_through_writes_forgets_corrections_and_expiry(graph: MemoryGraph) -> None:
    topics = ["fruit", "Apple", "apple pie", "banana", "Zebra", "cherry", "date", "Elder", "fig", "grape"]
    ids = []
    for i in range(36):  # counts 1..n with many ties, keys whose case differs from their norm order
        keys = [topics[i % len(topics)], topics[(i * 3 + 1) % len(topics)], f"solo {i}"]
        ids.append(graph.remember(content=f"note number {i} about {keys[0]} and {keys[1]}", keys=keys).memory_id)
    graph.remember(content="a private fruit note", keys=["fruit", "secret"], namespace="private")
    graph.remember(content="a fig that expires soon", keys=["fig", "ephemeral"], ttl_seconds=1)
    graph.forget(memory_id=ids[0])
    graph.correct(memory_id=ids[1], content="note number 1, corrected, about bananas")
    now = graph.now() + 5  # past the expiring memory's end
    graph.now = lambda: now  # type: ignore[method-assign]

    whole = reference(graph, "default", 1, now)
    assert len(whole) > 20 and len({n for _, n in whole}) > 3
    got, total = page(graph, namespace="default", limit=500)
    assert got == whole and total == len(whole)
    assert "ephemeral" not in {k.key for k in graph.browse_keys(namespace="default", limit=500).keys}
    for offset, limit in [(0, 5), (3, 7), (10, 10), (len(whole) - 2, 10), (len(whole), 10)]:
        got, total = page(graph, namespace="default", offset=offset, limit=limit)
        assert got == whole[offset: offset + limit] and total == len(whole), (offset, limit)

    hub_min = graph.settings.key_hub_min_links
    hubs = reference(graph, "default", hub_min, now)
    assert hubs
    assert page(graph, namespace="default", hubs_only=True, limit=500) == (hubs, len(hubs))
    assert page(graph, namespace="private", limit=500) == (reference(graph, "private", 1, now), 2)
    assert page(graph, namespace="nobody", limit=10) == ([], 0)

    engine = graph.store.query("admin/counts", now=now)[0]
    assert graph.counts() == {name: int(engine[name]) for name in ("keys", "memories", "links")}
