"""recall and read_key hold back what the caller already has (``seen``) and fill the space with the next ones."""

from __future__ import annotations

import pytest

from keymem.errors import InvalidInput
from keymem.memory.graph import MemoryGraph
from keymem.memory.views import MAX_SEEN

PET_FACTS = [
    "The user's dog Biscuit is a beagle who loves the beach",
    "The user's cat Miso sleeps on the radiator all winter",
    "The user's parrot Kiwi can whistle the Star Wars theme",
    "The user walks Biscuit at seven every morning before work",
    "The user's hamster Pip escaped twice last spring",
    "The user feeds Miso salmon on Sundays as a treat",
    "The user's goldfish Bubbles lives in a tank in the kitchen",
    "The user takes Kiwi to the vet in Leeds every March",
]


@pytest.fixture
def pets(graph: MemoryGraph) -> list[str]:
    """Eight memories under one key, each a different fact about the user's pets."""
    return [graph.remember(content=f, keys=["pets", "animals"]).memory_id for f in PET_FACTS]


def delivered(result: dict) -> list[str]:
    return [m["memory_id"] for m in result["memories"]]


def test_recall_holds_back_seen_memories_and_fills_their_budget(graph: MemoryGraph, pets: list[str]) -> None:
    first = graph.recall(query="user pets", budget=120).dump()
    got = delivered(first)
    assert got and first["omitted"] == 0
    assert first["memory"]["memory_id"] == got[0]
    again = graph.recall(query="user pets", budget=120, seen=got).dump()
    assert again["omitted"] == len(got)
    assert again["memories"], "the next best memories come in place of the seen ones"
    assert not set(delivered(again)) & set(got)
    assert again["memory"]["memory_id"] == again["memories"][0]["memory_id"]
    assert again["keys"] == first["keys"], "the keys are still named"
    # a memory the caller has but the query would not deliver is not counted
    unrelated = graph.remember(content="The user repairs vintage radios", keys=["radios"]).memory_id
    third = graph.recall(query="user pets", budget=120, seen=[unrelated]).dump()
    assert third["omitted"] == 0 and delivered(third) == got


def test_recall_with_everything_seen_says_so(graph: MemoryGraph, pets: list[str]) -> None:
    r = graph.recall(query="user pets", top_k=3, budget=4000, seen=pets).dump()
    assert r["memories"] == [] and r["memory"] is None
    assert r["omitted"] > 0 and r["keys"]


def test_read_key_skips_seen_memories_keeping_ranks_and_offsets(graph: MemoryGraph, pets: list[str]) -> None:
    full = graph.read_key(key_id="pets", limit=8).dump()
    order = [m["memory_id"] for m in full["memories"]]
    assert sorted(order) == sorted(pets) and full["omitted"] == 0
    seen = [order[0], order[2]]
    page = graph.read_key(key_id="pets", limit=3, seen=seen).dump()
    assert [m["memory_id"] for m in page["memories"]] == [order[1], order[3], order[4]]
    assert [m["within_key_rank"] for m in page["memories"]] == [2, 4, 5], "ranks stay the key's own"
    assert page["omitted"] == 2 and page["total"] == 8
    # the next page starts after the last rank shown, whatever was skipped
    rest = graph.read_key(key_id="pets", limit=10, offset=5, seen=seen).dump()
    assert [m["memory_id"] for m in rest["memories"]] == order[5:] and rest["omitted"] == 0


@pytest.mark.parametrize(("seen", "message"), [
    ("m_0123456789abcdef", "seen must be a list of memory ids"),
    ([5], "seen 5 is not a keymem id"),
    (["k_0123456789abcdef"], "seen 'k_0123456789abcdef' is not a keymem id (expected m_"),
    (["m_0123456789abcdef"] * (MAX_SEEN + 1), f"seen holds {MAX_SEEN + 1} memory ids; the limit is {MAX_SEEN}"),
])
def test_bad_seen_is_refused_in_one_line(graph: MemoryGraph, pets: list[str], seen: object, message: str) -> None:
    for call in (lambda: graph.recall(query="user pets", seen=seen),
                 lambda: graph.read_key(key_id="pets", seen=seen)):
        with pytest.raises(InvalidInput) as err:
            call()
        assert message in str(err.value) and "\n" not in str(err.value)
