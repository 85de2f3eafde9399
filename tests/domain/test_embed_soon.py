"""The query embedding on a worker thread gives the vectors ``embed`` gives, and stops with the graph."""

from __future__ import annotations

import numpy as np

from keymem.memory.graph import MemoryGraph


def test_embed_soon_matches_embed_and_close_stops_its_threads(graph: MemoryGraph) -> None:
    texts = ["When did Melanie paint a sunrise?", "painting", "sunrise"]
    assert np.array_equal(graph.embed_soon(texts).result(), graph.embed(texts))
    pool = graph._embed_pool
    assert pool is not None
    graph.close()
    assert pool._shutdown  # no thread left behind by a closed graph


def test_recall_gives_the_same_keys_as_routing_one_step_at_a_time(graph: MemoryGraph) -> None:
    from keymem.memory.query import Query
    from keymem.memory.recall import named_keys, route_keys

    graph.remember(content="Melanie painted a sunrise by the lake", keys=["Melanie", "painting", "sunrise"],
                   key_types=["name", "concept", "concept"])
    graph.remember(content="Caroline went to a pottery class", keys=["Caroline", "pottery"],
                   key_types=["name", "concept"])
    query = "What did Melanie paint?"
    analysed = Query.analyse(graph, query)
    assert np.array_equal(analysed.vector, graph.embed([query, *analysed.phrases])[0])
    routed = route_keys(graph, analysed.vector, named_keys(graph, analysed, "default"), "default", 5)
    got = {k.key_id for k in graph.recall(query=query).keys}
    assert got and got <= set(routed)
