"""The Cypher walk on FalkorDB (nodes named by keymem ids, store/walk.py's SameIds) returns exactly what
the graph mirror returns, through deletes that hand internal ids to new nodes."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import pytest

from keymem.index.neighbourhood import CypherNeighbourhood
from keymem.memory.graph import MemoryGraph
from keymem.store import walk
from tests.conftest import Clock
from tests.conftest_engines import engine_url
from tests.domain.test_neighbourhood import build, frontiers, ids, same


@pytest.fixture(params=["falkordb"])
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    yield from engine_url(request)


def test_the_walk_names_nodes_by_keymem_ids_and_matches_the_mirror(graph: MemoryGraph, clock: Clock) -> None:
    assert not graph.store.capabilities.stable_node_ids
    w = build(graph, clock)
    rng = random.Random(5)
    mems, keys = ids(graph)
    cy = CypherNeighbourhood(graph.store)
    cy.load()
    assert isinstance(cy.reads.memories, walk.SameIds) and len(cy.reads.memories) == 0  # nothing kept
    ghosts = ["m_00000000000000000000", w["b"]]  # never existed; deleted by the second correction
    key_sets = [[k] for k in keys] + [keys, ["k_00000000000000000000"]]
    assert same(graph, frontiers(mems, rng, ghosts), key_sets, cy) > 100
    hop = cy.step([w["d"]], graph.now(), 3)
    assert {m for m, _ in hop.related[w["d"]]} == {w["c"], w["b3"]}
    # Deletes free internal ids that the next writes take at once: handles that were ids stay right.
    graph.forget(memory_id=w["d"])
    graph.forget(memory_id=w["hub"][0])
    graph.sweep()
    for i in range(6):
        graph.remember(content=f"A new apple fruit note {i}", keys=["apple", "fruit", f"new {i}"])
    mems, keys = ids(graph)
    assert same(graph, frontiers(mems, rng, [w["d"], w["hub"][0], *ghosts]), [[k] for k in keys] + [keys], cy) > 50


def test_the_overrides_keep_no_internal_id() -> None:
    """Every walk statement has a FalkorDB form that names nodes by keymem id: no column but a page bound
    (``n``) returns an internal id."""
    from keymem.store import cypher

    names = [n for n in cypher.shared_names() if n.startswith("neighbourhood/")]
    assert len(names) >= 11
    for name in names:
        stmt = cypher.load(name, "falkordb")
        assert cypher.statement_path(name, "falkordb").is_relative_to(cypher.cypher_root() / cypher.OVERRIDES), name
        assert "offset(" not in stmt.text, name
        columns = re.findall(r"([^,]+?)\s+AS\s+(\w+)", stmt.text.split("RETURN")[-1])
        assert columns, name
        for expression, column in columns:
            assert column == "n" or not re.search(r"(?<![.\w])id\(", expression), (name, column)
