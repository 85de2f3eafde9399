"""The association walk's neighbourhood: Cypher in Kuzu returns exactly what the graph mirror returns."""

from __future__ import annotations

import random
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants
from keymem.index.neighbourhood import CypherNeighbourhood, MirrorNeighbourhood
from keymem.memory.graph import MemoryGraph
from keymem.store import migrations, walk
from tests.conftest import Clock

FANOUTS = (1, 2, 3, 5, 50)


def same(graph: MemoryGraph, frontiers: list[list[str]], key_sets: list[list[str]] = (),  # type: ignore[assignment]
         cy: CypherNeighbourhood | None = None) -> int:
    """Compare both implementations on every frontier and fan-out; return the rows compared.

    ``cy`` defaults to a new CypherNeighbourhood, which learns ids and offsets as it meets them.
    """
    cy, mi = cy or CypherNeighbourhood(graph.store), MirrorNeighbourhood(graph.mirror)
    now = graph.now()
    rows = 0
    for fanout in FANOUTS:
        for frontier in frontiers:
            a, b = cy.step(frontier, now, fanout), mi.step(frontier, now, fanout)
            assert a == b, (frontier, fanout)
            rows += sum(len(v) for part in (a.keys_of, a.members, a.related) for v in part.values())
        for keys in key_sets:
            assert cy.key_members(keys, now, fanout) == mi.key_members(keys, now, fanout), (keys, fanout)
    return rows


def ids(graph: MemoryGraph) -> tuple[list[str], list[str]]:
    mems = [r["id"] for r in graph.store.raw("MATCH (m:Memory) RETURN m.id AS id ORDER BY id")]
    keys = [r["id"] for r in graph.store.raw("MATCH (k:Key) RETURN k.id AS id ORDER BY id")]
    return mems, keys


def frontiers(mems: list[str], rng: random.Random, extra: list[str] = ()) -> list[list[str]]:  # type: ignore[assignment]
    pool = [*mems, *extra]
    out = [[m] for m in pool]
    for size in (2, 5, 12, 20):
        out += [rng.sample(pool, min(size, len(pool))) for _ in range(6)]
    out.append(pool)
    out.append([])
    return out


def build(graph: MemoryGraph, clock: Clock) -> dict[str, Any]:
    """Hubs, shared keys, superseded and expired memories, RELATED_TO, three namespaces."""
    w: dict[str, Any] = {}
    hub = graph.remember_batch([{"content": f"Melanie said thing number {i} about her week", "keys": ["Melanie", f"topic {i}"],
                                 "key_types": ["name", "concept"]} for i in range(8)])
    w["hub"] = [r.memory_id for r in hub.results]
    a = graph.remember(content="Newton watched an apple fall", keys=["Newton", "apple"], key_types=["name", "concept"])
    b = graph.remember(content="An apple is a fruit", keys=["apple", "fruit"])
    c = graph.remember(content="Strawberries are a fruit too", keys=["fruit", "strawberry"], related_to=[a.memory_id])
    d = graph.remember(content="Melanie grows strawberries", keys=["Melanie", "strawberry"], key_types=["name", "concept"],
                       related_to=[c.memory_id, b.memory_id])
    w.update(a=a.memory_id, b=b.memory_id, c=c.memory_id, d=d.memory_id)
    # TTL: one that expires, one that stays; a key whose links are mostly expiring.
    w["soon"] = graph.remember(content="The apple pie is in the oven", keys=["apple", "oven"], ttl_seconds=60,
                               related_to=[a.memory_id]).memory_id
    w["later"] = graph.remember(content="The fruit basket arrives next week", keys=["fruit", "basket"],
                                ttl_seconds=30 * 86400).memory_id
    graph.remember_batch([{"content": f"oven timer note {i}", "keys": ["oven"], "ttl_seconds": 60} for i in range(3)])
    # A correction: the old version stays linked but inactive; a second one deletes the first generation.
    w["b2"] = graph.correct(memory_id=b.memory_id, content="An apple is a sweet fruit").memory_id
    w["b3"] = graph.correct(memory_id=w["b2"], content="An apple is a crisp sweet fruit").memory_id
    # Other namespaces, with the same words.
    w["work"] = [graph.remember(content=f"Work apple project step {i}", keys=["apple", "project"], namespace="work").memory_id
                 for i in range(3)]
    w["home"] = graph.remember(content="Home fruit bowl", keys=["fruit", "bowl"], namespace="home",
                               ttl_seconds=10).memory_id
    clock.advance(120)  # "soon", the oven notes and "home" expire (not swept yet)
    return w


def test_cypher_matches_the_mirror(graph: MemoryGraph, clock: Clock) -> None:
    w = build(graph, clock)
    rng = random.Random(5)
    mems, keys = ids(graph)
    ghosts = ["m_00000000000000000000", w["b"]]  # never existed; deleted by the second correction
    assert w["b"] not in mems
    key_sets = [[k] for k in keys] + [rng.sample(keys, 5) for _ in range(5)] + [keys, ["k_00000000000000000000"]]
    assert same(graph, frontiers(mems, rng, ghosts), key_sets) > 100
    # The walk's view really contains what is being checked: a hub left out, hidden memories, RELATED_TO.
    cy = CypherNeighbourhood(graph.store)
    hop = cy.step([w["d"]], graph.now(), 3)
    melanie = [k for k, _ in graph.mirror.memory_keys(w["d"]) if graph.mirror.key(k)["text"] == "Melanie"]  # type: ignore[index]
    assert melanie and melanie[0] not in hop.members  # 9 memories > fan-out 3
    assert {m for m, _ in hop.related[w["d"]]} == {w["c"], w["b3"]}  # b's edge moved to its current version
    apple = cy.step([w["a"]], graph.now(), 50)
    reached = {m for edges in apple.members.values() for m, _ in edges}
    assert w["b3"] in reached and w["soon"] not in reached and w["b2"] not in reached
    assert not set(w["work"]) & reached  # the work namespace's "apple" is another key
    assert check_invariants(graph) == []

    graph.forget(memory_id=w["d"])
    graph.forget(memory_id=w["hub"][0])
    graph.correct(memory_id=w["c"], content="Strawberries are a red fruit")
    graph.dismiss(memory_id=w["a"], key_id=graph.mirror.memory_keys(w["a"])[0][0])
    graph.recall_direct(query="apple fruit")  # Hebbian weights
    graph.sweep()  # deletes the expired ones
    mems, keys = ids(graph)
    assert w["soon"] not in mems
    assert same(graph, frontiers(mems, rng, [w["d"], w["soon"], *ghosts]), [[k] for k in keys] + [keys]) > 50
    assert check_invariants(graph) == []


def test_random_writes_keep_both_equal(graph: MemoryGraph, clock: Clock) -> None:
    rng = random.Random(11)
    graph.remember(content="a first note about rivers", keys=["river"])
    loaded = CypherNeighbourhood(graph.store)
    loaded.load()  # every id/offset pair read now; later writes are learned as they are met
    assert len(loaded.reads.memories) == 1 and len(loaded.reads.keys) == 1
    words = ["river", "bridge", "Seoul", "coffee", "train", "garden", "music", "winter"]
    live: list[str] = []
    namespace: dict[str, str] = {}
    for step in range(60):
        op = rng.random()
        if op < 0.55 or len(live) < 3:
            keys = rng.sample(words, rng.randint(1, 3))
            ns = rng.choice(["default", "default", "other"])
            visible = [m for m in live if namespace[m] == ns and graph.mirror.memory(m, graph.now()) is not None]
            related = rng.sample(visible, min(len(visible), rng.randint(0, 2))) if rng.random() < 0.4 else []
            ttl = rng.choice([None, None, 30.0, 86400.0])
            r = graph.remember(content=f"note {step}: " + " and ".join(keys), keys=keys, related_to=related,
                               ttl_seconds=ttl, namespace=ns)
            live.append(r.memory_id)
            namespace[r.memory_id] = ns
        elif op < 0.75:
            target = rng.choice(live)
            view = graph.mirror.memory(target, graph.now())
            if view is not None and view["active"]:
                live.append(graph.correct(memory_id=target, content=f"corrected at step {step}").memory_id)
                namespace[live[-1]] = namespace[target]
        elif op < 0.85:
            target = rng.choice(live)
            if graph.mirror.memory(target, graph.now()) is not None:
                graph.forget(memory_id=target)
        elif op < 0.95:
            clock.advance(rng.choice([10.0, 60.0, 3600.0]))
        else:
            graph.sweep()
        if step % 15 == 14:
            mems, keys = ids(graph)
            same(graph, frontiers(mems, rng, live[:5]), [[k] for k in keys])
            same(graph, frontiers(mems, rng, live[:5]), [[k] for k in keys], loaded)
    assert check_invariants(graph) == []


def test_an_import_carries_the_copies(graph: MemoryGraph, clock: Clock, settings, minilm_embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from keymem.admin.io import export_lines, import_lines

    build(graph, clock)
    lines = export_lines(graph.store, None, graph.now())
    other = MemoryGraph.open(settings.with_overrides(data_dir=tmp_path / "other"), embedder=minilm_embedder,
                             reranker=None, clock=clock, progress=False)
    try:
        import_lines(other, lines)
        import_lines(other, lines)  # idempotent: nothing counted twice
        assert check_invariants(other) == []
        mems, keys = ids(other)
        assert len(mems) > 10
        same(other, frontiers(mems, random.Random(3)), [[k] for k in keys])
    finally:
        other.close()


@pytest.mark.raw_writes
def test_console_writes_are_resynced(graph: MemoryGraph) -> None:
    """Writes that bypass keymem (the console's write mode) leave the copies stale until the caches reload."""
    a = graph.remember(content="An orchard of apple trees", keys=["apple", "orchard"]).memory_id
    b = graph.remember(content="An apple a day", keys=["apple"]).memory_id
    c = graph.remember(content="Pears ripen in autumn", keys=["pear"]).memory_id
    graph.store.raw("MATCH (m:Memory) WHERE m.id = $id SET m.expires_at = 1.0", {"id": a})
    graph.store.raw("MATCH (k:Key) SET k.lasting_links = 0")
    graph.store.raw("MATCH (x:Memory), (y:Memory) WHERE x.id = $b AND y.id = $c "
                    "CREATE (x)-[:RELATED_TO {weight: 1.0, created_at: 1.0}]->(y)", {"b": b, "c": c})
    problems = check_invariants(graph)
    assert [w for w in ("active flag or expiry", "lasting links", "no has_related flag") if not any(w in p for p in problems)] == []
    graph.reload_caches()
    assert check_invariants(graph) == []
    mems, keys = ids(graph)
    same(graph, [[m] for m in mems] + [mems], [keys])
    assert CypherNeighbourhood(graph.store).step([c], graph.now(), 50).related == {c: [(b, 1.0)]}


def test_migration_fills_the_copies(graph: MemoryGraph, clock: Clock, settings, minilm_embedder,  # type: ignore[no-untyped-def]
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written before schema step 003 gets the copies and counts of every existing link."""
    w = build(graph, clock)
    store = graph.store
    monkeypatch.setattr(walk, "PAGE_LINKS", 7)  # several pages
    monkeypatch.setattr(walk, "PAGE_KEYS", 5)
    with store.write() as tx:  # back to the store as step 002 left it
        for stmt in ("ALTER TABLE LINKS DROP m_active",
                     "ALTER TABLE LINKS DROP m_expires_at", "ALTER TABLE Key DROP lasting_links",
                     "ALTER TABLE Memory DROP has_related", "MATCH (m:Meta) WHERE m.name = 'walk_copies' DELETE m",
                     "MATCH (m:KeymemMigration) WHERE m.name = '003_walk_copies' DELETE m"):
            tx.raw(stmt)
    graph.close()
    again = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, clock=clock, progress=False)
    try:
        assert "003_walk_copies" in migrations.applied(again.store) and walk.copies_ready(again.store)
        assert check_invariants(again) == []
        mems, keys = ids(again)
        same(again, frontiers(mems, random.Random(2), [w["b"]]), [[k] for k in keys])
    finally:
        again.close()


def test_the_engine_never_reuses_a_deleted_nodes_offset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The IdBook (store/walk.py) keeps (offset, id) pairs of deleted nodes: Kuzu must not reuse offsets."""
    import ladybug

    db = ladybug.Database(str(tmp_path / "db"))
    conn = ladybug.Connection(db)
    conn.execute("CREATE NODE TABLE T(id STRING PRIMARY KEY)")

    def pairs() -> dict[int, str]:
        result = conn.execute("MATCH (t:T) RETURN offset(id(t)), t.id")
        assert not isinstance(result, list)
        return {o: i for o, i in result.get_all()}

    conn.execute("UNWIND range(0, 2999) AS i CREATE (:T {id: 'a' + string(i)})")
    seen = pairs()
    conn.execute("MATCH (t:T) WHERE CAST(substring(t.id, 2, 10) AS INT64) % 3 = 0 DELETE t")
    conn.execute("CHECKPOINT")
    conn.execute("UNWIND range(0, 499) AS i CREATE (:T {id: 'b' + string(i)})")
    conn.execute("MATCH (t:T) WHERE t.id STARTS WITH 'a' DELETE t")
    conn.execute("CHECKPOINT")
    db.close()
    db = ladybug.Database(str(tmp_path / "db"))
    conn = ladybug.Connection(db)
    conn.execute("BEGIN TRANSACTION")
    conn.execute("UNWIND range(0, 99) AS i CREATE (:T {id: 'r' + string(i)})")
    conn.execute("ROLLBACK")
    conn.execute("UNWIND range(0, 1999) AS i CREATE (:T {id: 'c' + string(i)})")
    now = pairs()
    assert len(now) == 2500
    assert not [o for o, i in now.items() if o in seen and seen[o] != i]
    db.close()
