"""The navigation benchmark's scripted agent (bench/navigate.py) on a tiny real store, so it cannot rot."""

from __future__ import annotations

import math
from types import ModuleType

import pytest

from keymem.memory.graph import MemoryGraph
from keymem.memory.navigate import preview
from tests import bench_modules
from tests.domain.test_navigate_recall import link_weights, memory_state


@pytest.fixture(scope="module")
def nav() -> ModuleType:
    return bench_modules.load("navigate")


def words(text: str) -> int:
    return len(text.split())


LONG = ("Melanie: I finally finished the big painting of the sunrise over the lake, the one I started "
        "in the spring, and I hung it in the hallway so everyone sees it first thing when they come in. "
        "The colours took weeks to get right, especially the orange of the clouds above the water, "
        "and my kids helped me choose the frame [8 May, 2023]")


@pytest.fixture
def tiny(graph: MemoryGraph) -> dict[str, str]:
    items = [
        {"content": LONG, "keys": ["Melanie", "painting", "sunrise"], "key_types": ["name", "concept", "concept"]},
        {"content": "Melanie: I paint landscapes on weekends [8 May, 2023]", "keys": ["Melanie", "painting"],
         "key_types": ["name", "concept"]},
        {"content": "Caroline: I went to a support group yesterday [9 May, 2023]", "keys": ["Caroline", "support group"],
         "key_types": ["name", "concept"]},
        {"content": "Caroline: The lake was frozen in January [9 May, 2023]", "keys": ["Caroline", "lake"],
         "key_types": ["name", "concept"]},
    ]
    ids = [r.memory_id for r in graph.remember_batch(items).results]
    return {"long": ids[0], "paint": ids[1], "group": ids[2], "lake": ids[3]}


def test_agent_follows_the_policy_and_writes_nothing(nav: ModuleType, graph: MemoryGraph, tiny: dict[str, str]) -> None:
    before = (link_weights(graph), memory_state(graph))
    query = "What did Melanie paint?"
    calls = nav.run_agent(nav.Session(graph, query, words), nav.Budget(calls=8))
    tools = [c.tool for c in calls]
    assert tools[0] == "recall" and set(tools[1:]) <= {"read_key", "read_memory"}
    assert len(calls) <= 8 and all(c.tokens > 0 for c in calls)
    first = calls[0]
    recalled = graph.recall(query=query).dump()
    assert first.full == {m["memory_id"] for m in recalled["memories"]} and recalled["memory"]["memory_id"] in first.full
    # the first key read is the cluster's first; a read_memory only follows a read_key, for a truncated preview
    assert calls[1].tool == "read_key" and calls[1].args["key_id"] == recalled["keys"][0]["key_id"]
    for prev, call in zip(calls, calls[1:], strict=False):
        if call.tool == "read_memory":
            assert prev.tool == "read_key" and call.args["memory_id"] in prev.seen - prev.full
    assert tiny["long"] in set().union(*(c.seen for c in calls))
    # one session, as the stdio server: recall and read_key never show a memory an earlier call delivered
    shown = [c.seen for c in calls if c.tool in ("recall", "read_key")]
    assert len(shown) >= 2 and sum(map(len, shown)) == len(set().union(*shown))
    assert nav.truncated(preview(LONG)) and not nav.truncated(preview("Melanie: short [8 May, 2023]"))
    # no question changes the store: reads are peeks, recall and read_key write nothing
    assert (link_weights(graph), memory_state(graph)) == before
    # deterministic: the same question replays the same calls
    again = nav.run_agent(nav.Session(graph, query, words), nav.Budget(calls=8))
    assert [(c.tool, c.args, c.tokens) for c in again] == [(c.tool, c.args, c.tokens) for c in calls]


def test_budget_counts_only_calls_that_fit(nav: ModuleType, graph: MemoryGraph, tiny: dict[str, str]) -> None:
    query = "What did Melanie paint?"
    open_calls = nav.run_agent(nav.Session(graph, query, words), nav.Budget(calls=4))
    budget = open_calls[0].tokens + 1  # recall fits, nothing after it does
    full, seen, used, text = nav.prefix(open_calls, 4, budget)
    assert used == open_calls[0].tokens and full == open_calls[0].full and text == open_calls[0].text
    assert nav.prefix(open_calls, 0) == (set(), set(), 0, 0)
    planned = nav.run_agent(nav.Session(graph, query, words), nav.Budget(calls=4, tokens=100))
    assert planned[0].tool == "recall"  # the first call is always made
    mem_to_dia = {tiny["long"]: ["D1:1"], tiny["paint"]: ["D1:2"]}
    assert nav.evidence_recall({tiny["long"]}, mem_to_dia, ["D1:1", "D1:2"]) == 0.5
    assert nav.within_budget(["a", "b", "c"], {"a": 3, "b": 5, "c": 1}, 8) == ["a", "b"]
    assert math.isinf(nav.Budget(calls=1).tokens)


def test_peek_memory_is_what_read_memory_returns(nav: ModuleType, graph: MemoryGraph, tiny: dict[str, str]) -> None:
    mid = tiny["paint"]
    via = next(k.key_id for k in graph.read_memory(memory_id=tiny["group"]).keys if k.key == "Caroline")
    painting = next(k["key_id"] for k in nav.peek_memory(graph, mid)["keys"] if k["key"] == "painting")
    assert nav.peek_memory(graph, mid) == graph.read_memory(memory_id=mid).dump()
    assert nav.peek_memory(graph, mid, painting) == graph.read_memory(memory_id=mid, via_key_id=painting).dump()
    with pytest.raises(Exception, match="not linked"):
        nav.peek_memory(graph, mid, via)
