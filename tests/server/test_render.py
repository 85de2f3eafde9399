"""What the model reads: compact lines for each tool's result, and the size of the tool listing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from keymem.server.render import render

FRESH = {"freshness": 1.0, "status": "fresh", "age_days": 0.0, "last_confirmed_at": "2026-01-01T00:00:00Z",
         "confirmation_count": 0, "decay_profile": "standard", "verification_recommended": False,
         "verification_required": False}
STALE = {**FRESH, "freshness": 0.05, "status": "stale", "age_days": 400.0, "verification_recommended": True,
         "verification_required": True}
KEY = {"key_id": "k_0123456789abcdef0123", "key": "Newton", "key_type": "name", "aliases": [], "score": 1.0,
       "score_kind": "literal_match", "memory_count": 1, "is_hub": False, "specificity": 2.3}


def test_recall_lines_carry_ids_paths_and_only_validity_that_says_something() -> None:
    text = render("recall", {
        "keys": [KEY], "memory": None, "confident": True, "note": None, "namespaces": None,
        "memories": [
            {"memory_id": "m_aaaaaaaaaaaaaaaaaaaa", "content": "Newton is the user's cat.", "hops": 0, "via": [],
             "validity": FRESH},
            {"memory_id": "m_bbbbbbbbbbbbbbbbbbbb", "content": "The user is allergic to strawberries.", "hops": 2,
             "via": ["apple", "strawberry"], "validity": STALE},
        ]})
    assert text.splitlines() == [
        "keys: Newton k_0123456789abcdef0123 (name, 1 memory)",
        "memories:",
        "[m_aaaaaaaaaaaaaaaaaaaa] Newton is the user's cat.",
        "[m_bbbbbbbbbbbbbbbbbbbb] The user is allergic to strawberries. "
        "(via apple -> strawberry; stale, 400 d: check before relying on it)",
    ]
    for absent in ("score", "specificity", "null", "freshness", "{"):
        assert absent not in text


def test_a_weak_recall_says_so_and_presents_no_memory() -> None:
    note = "No stored memory matches this query with confidence: no key is named."
    text = render("recall", {"keys": [], "memory": None, "memories": [], "confident": False, "note": note})
    assert text == note


def test_read_key_lines_list_each_memorys_other_keys() -> None:
    text = render("read_key", {
        "key": KEY, "total": 3, "offset": 0, "limit": 2,
        "memories": [{"memory_id": "m_aaaaaaaaaaaaaaaaaaaa", "preview": "Apples are fruit.", "within_key_rank": 1,
                      "score": 0.5, "score_kind": "link_weight", "link_weight": 1.0, "validity": FRESH,
                      "other_keys": [{"key_id": "k_1", "key": "fruit"}, {"key_id": "k_2", "key": "strawberry"}]}]})
    assert text.splitlines() == ["key: Newton k_0123456789abcdef0123 (name); memories 1-1 of 3",
                                 "[m_aaaaaaaaaaaaaaaaaaaa] Apples are fruit. (also fruit, strawberry)",
                                 "(more: offset 1)"]


def test_memories_held_back_as_seen_are_one_short_line() -> None:
    line = "2 memories you already have omitted (include_seen=true repeats)"
    empty = {"keys": [KEY], "memory": None, "memories": [], "confident": True, "note": None}
    assert render("recall", {**empty, "omitted": 2}).splitlines() == [
        "keys: Newton k_0123456789abcdef0123 (name, 1 memory)", "no new memory", line]
    assert render("recall", {**empty, "omitted": 0}).splitlines()[-1] == "no memory"
    one = render("recall", {**empty, "omitted": 1})
    assert one.endswith("1 memory you already have omitted (include_seen=true repeats)")
    # read_key: the ranks shown are the key's own, with the seen ones skipped; the next page follows the last
    text = render("read_key", {
        "key": KEY, "total": 9, "offset": 0, "limit": 2, "omitted": 2,
        "memories": [{"memory_id": f"m_{c * 20}", "preview": f"Fact {c}.", "within_key_rank": rank, "score": 0.5,
                      "score_kind": "link_weight", "link_weight": 1.0, "validity": FRESH}
                     for c, rank in (("a", 2), ("b", 4))]})
    assert text.splitlines() == ["key: Newton k_0123456789abcdef0123 (name); memories 2-4 of 9",
                                 f"[m_{'a' * 20}] Fact a.", f"[m_{'b' * 20}] Fact b.", line, "(more: offset 4)"]


def test_write_results_are_one_line() -> None:
    keys = [{"key_id": "k_1", "key": "apple", "key_type": "concept"}]
    assert render("remember", {"memory_id": "m_1", "keys": keys, "duplicate": False}) == "stored m_1 (keys: apple k_1)"
    assert render("remember", {"memory_id": "m_1", "keys": keys, "duplicate": True}).startswith("already stored as m_1")
    assert render("correct", {"memory_id": "m_2", "supersedes": "m_1"}) == "stored m_2, replacing m_1"
    assert render("forget", {"memory_id": "m_1", "deleted": True}) == "deleted m_1"


def test_the_ten_tools_fit_6200_characters() -> None:
    """Descriptions and input schemas are in every session's context: at most 6,200 characters together
    (6,000 before recall and read_key took include_seen and seen, ~190 characters after the flags lost
    their "default": false)."""
    from keymem.server.tools import build_server
    from keymem.settings import load_settings

    class Idle:
        async def call(self, *args: Any) -> None: ...
        def counts(self, timeout: float) -> None: ...
        def close(self) -> None: ...
        def kick(self) -> None: ...

    tools = asyncio.run(build_server(load_settings({}), Idle()).list_tools())  # type: ignore[arg-type]
    assert len(tools) == 10
    size = sum(len(t.name) + len(t.description or "") + len(json.dumps(t.input_schema, separators=(",", ":")))
               for t in tools)
    assert size <= 6200, size
    for t in tools:  # no stray indentation in what the model reads
        assert "\n    " not in (t.description or ""), t.name
