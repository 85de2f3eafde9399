"""remember_batch with several spellings of one key, new and old: whole or refused whole, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keymem.errors import KeymemError
from keymem.memory.graph import MemoryGraph


def _key_ids(graph: MemoryGraph, memory_id: str) -> set[str]:
    return {k.key_id for k in graph.read_memory(memory_id=memory_id).keys}


@pytest.mark.parametrize("first, second", [("team-work", "team work"), ("team work", "team-work"),
                                           ("problem-solving", "problem solving")])
def test_two_spellings_of_one_literal_form_in_one_batch(graph: MemoryGraph, first: str, second: str) -> None:
    res = graph.remember_batch([
        {"content": "We did a project together", "keys": [first]},
        {"content": "The group finished early", "keys": [second]},
    ])
    assert len(res.results) == 2
    # The same as two separate calls: the second spelling resolves as it would in a later call.
    with_sep = graph.remember_batch([{"content": "A third note", "keys": [second]}])
    assert _key_ids(graph, res.results[1].memory_id) == _key_ids(graph, with_sep.results[0].memory_id)


def test_batch_spellings_match_separate_calls(graph: MemoryGraph) -> None:
    a = graph.remember(content="first note", keys=["team-work"])
    b = graph.remember(content="second note", keys=["team work"])
    assert _key_ids(graph, a.memory_id) == _key_ids(graph, b.memory_id)
    c = graph.remember_batch([{"content": "third note", "keys": ["Team-Work", "team work", "TEAM WORK"]}])
    assert _key_ids(graph, c.results[0].memory_id) == _key_ids(graph, a.memory_id)


def test_spelling_variant_of_a_name_in_one_batch(graph: MemoryGraph) -> None:
    res = graph.remember_batch([
        {"content": "Met Dr. Smith today", "keys": ["Dr. Smith"], "key_types": ["name"]},
        {"content": "dr smith called back", "keys": ["dr smith"], "key_types": ["name"]},
    ])
    assert _key_ids(graph, res.results[0].memory_id) == _key_ids(graph, res.results[1].memory_id)


_BASES = ["team work", "problem solving", "new york", "café latte", "self care"]


def _variant(base: str, how: int) -> str:
    forms = [
        base,
        base.replace(" ", "-"),
        base.upper(),
        base.title().replace(" ", "_"),
        "  " + base.replace(" ", "   ") + " ",
        base.replace(" ", "\u3000"),  # ideographic space
        "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in base),  # full-width letters
        base.replace("é", "e\u0301"),  # decomposed accent
        base.replace("é", "e"),
    ]
    return forms[how % len(forms)]


_item = st.tuples(st.lists(st.tuples(st.sampled_from(_BASES), st.integers(0, 8),
                                     st.sampled_from(["concept", "name", "proper_noun"])),
                           min_size=1, max_size=4))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(_item, min_size=1, max_size=4), min_size=1, max_size=3))
def test_random_spelling_mixes_write_whole_or_refuse_whole(graph: MemoryGraph, batches: list) -> None:
    for batch in batches:
        items = []
        for i, (keys,) in enumerate(batch):
            items.append({
                "content": f"note {len(graph.lexical)}-{i}-{hash(str(keys)) & 0xFFFF}",
                "keys": [_variant(b, how) for b, how, _ in keys],
                "key_types": [t for _, _, t in keys],
            })
        before = len(graph.lexical)
        try:
            res = graph.remember_batch(items)
        except KeymemError as exc:  # refused whole, with a message that names the problem
            assert str(exc) and "Duplicated primary key" not in str(exc)
            assert len(graph.lexical) == before
            continue
        assert len(res.results) == len(items)
        fresh = [r for r in res.results if not r.duplicate]
        assert len(graph.lexical) == before + len({r.memory_id for r in fresh})
        for r in res.results:
            assert graph.read_memory(memory_id=r.memory_id).keys
