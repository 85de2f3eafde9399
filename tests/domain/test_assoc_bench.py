"""The association benchmark's core (bench/assoc.py) on a tiny real store, without a server process."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from keymem.memory.graph import MemoryGraph
from tests import bench_modules


@pytest.fixture(scope="module")
def assoc() -> ModuleType:
    return bench_modules.load("assoc")


def mem(content: str, *keys: tuple[str, str]) -> dict[str, Any]:
    return {"content": content, "keys": [{"key": k, "type": t} for k, t in keys]}


C, N, P = "concept", "name", "proper_noun"
CASES: list[dict[str, Any]] = [
    {"id": "h1-t-pistachio", "domain": "pets", "hops": 1, "control": False, "target": 1,
     "question": "Can you sort out who looks after Pistachio next month?",
     "memories": [
         mem("User's tabby cat Pistachio stays with neighbour Odalys Ferreira whenever the user is away.",
             ("Pistachio", N), ("tabby cat", C), ("Odalys Ferreira", N), ("pet sitting", C)),
         mem("Odalys Ferreira is in Lisbon for all of August and cannot take in any animals then.",
             ("Odalys Ferreira", N), ("Lisbon", P), ("summer absence", C))]},
    {"id": "h2-t-newton", "domain": "diet", "hops": 2, "control": False, "target": 2,
     "question": "What should I know before baking a Newton-themed dessert?",
     "memories": [
         mem("User is reading a biography of Isaac Newton and keeps retelling the apple story.",
             ("Isaac Newton", N), ("biography", C), ("apple", C)),
         mem("The user's go-to summer fruit salad mixes apple slices with fresh strawberries.",
             ("apple", C), ("fruit salad", C), ("strawberry", C)),
         mem("Severe allergy: the user breaks out in hives after eating strawberries.",
             ("strawberry", C), ("allergy", C), ("hives", C))]},
    {"id": "c0-t-bramblewick", "domain": "pets", "hops": 0, "control": True, "target": 1,
     "question": "What food can I give Bramblewick?",
     "memories": [
         mem("Bramblewick the hedgehog hibernates in the shed box from November to March.",
             ("Bramblewick", N), ("hibernation", C), ("garden shed", C)),
         mem("Bramblewick eats meaty cat food and must never be given milk.",
             ("Bramblewick", N), ("hedgehog diet", C))]},
]


def test_roles_follow_check_py(assoc: ModuleType) -> None:
    one, two, ctrl = (assoc.roles(c) for c in CASES)
    assert one["heads"] == [0] and one["dist"][1] == 1 and one["bridges"] == [] and one["decoys"] == []
    assert two["heads"] == [0] and two["dist"][2] == 2 and two["bridges"] == [1]
    assert two["chain_keys"] == ["apple", "strawberry"]
    assert 1 in ctrl["heads"] and ctrl["dist"][1] == 0
    assert [assoc.group_of(c) for c in CASES] == ["one-hop", "two-hop", "control"]
    assert assoc.memory_role(CASES[1], two, 1) == "bridge" and assoc.memory_role(CASES[1], two, 2) == "target"


def test_dev_set_decoys_as_documented(assoc: ModuleType) -> None:
    dev = assoc.DEFAULT_CASES
    if not dev.is_file():
        pytest.skip(f"{dev} not available")
    cases = assoc.load_cases(dev)
    info = {c["id"]: assoc.roles(c) for c in cases}
    assert all(info[c["id"]]["dist"].get(c["target"]) == c["hops"] for c in cases)
    decoy_groups = [assoc.group_of(c) for c in cases if info[c["id"]]["decoys"]]
    assert decoy_groups.count("one-hop") == 5 and decoy_groups.count("two-hop") == 5  # the README's 10 decoy cases


def test_what_the_client_receives(assoc: ModuleType) -> None:
    content = 'Odalys said "no pets"  in August.'
    as_json = json.dumps({"memory": {"content": content, "memory_id": "m_ab12"}}, indent=2)
    assert assoc.holds(as_json, content)  # escaped quotes, whitespace collapsed
    assert assoc.holds("- [m_ab12] (fresh) Odalys said \"no pets\" in August.", content)
    assert not assoc.holds(json.dumps({"preview": content[:20] + "…"}), content)
    assert assoc.mentions(as_json, "m_ab12") and not assoc.mentions(as_json, "m_ab13")
    assert assoc.injected_ids("- [m_ab12] (fresh) x\n- [m_ff] (aging) y", {"m_ab12": "a#0"}) == ["a#0"]
    assert assoc.previews({"keys": [], "memory": None}) == []
    assert [p["memory_id"] for p in assoc.previews({"memory": {"memory_id": "m_1"}, "memories": [{"memory_id": "m_2"}]})] == ["m_1", "m_2"]
    payload = assoc.hook_payload("What is 17 times 23?", "/tmp")
    assert payload["hook_event_name"] == "UserPromptSubmit" and payload["prompt"] == "What is 17 times 23?"
    assert len(set(assoc.UNRELATED)) == len(assoc.UNRELATED) >= 20
    assert assoc.outranks([3, 1, 5], 0, [2]) and not assoc.outranks([3, 1, 2], 0, [2])
    assert assoc.outranks([3, 1, None], 0, [2]) and not assoc.outranks([None, 1, None], 0, [2])


def test_navigator_policy_order(assoc: ModuleType) -> None:
    nav = assoc.Navigator("q", max_calls=8)
    assert nav.next_call() == ("recall", {"query": "q", "top_k": 5})
    nav.observe("recall", {}, {"keys": [{"key_id": "k_a"}, {"key_id": "k_b"}],
                               "memory": {"memory_id": "m_p", "matched_key": {"key_id": "k_a"},
                                          "connected_keys": [{"key_id": "k_p"}]}})
    assert nav.next_call() == ("read_key", {"key_id": "k_a", "query": "q", "limit": 10})
    nav.observe("read_key", {"key_id": "k_a"}, {"memories": [{"memory_id": "m_p", "preview": "x"},
                                                             {"memory_id": "m_1", "preview": "y…"}]})
    assert nav.next_call()[1]["key_id"] == "k_b"  # type: ignore[index]
    nav.observe("read_key", {"key_id": "k_b"}, {"memories": [{"memory_id": "m_2", "preview": "z",
                                                              "keys": [{"key_id": "k_c"}]}]})
    # a page that lists its memories' keys is followed
    assert nav.next_call()[1]["key_id"] == "k_c"  # type: ignore[index]
    nav.observe("read_key", {"key_id": "k_c"}, {"memories": []})
    # the recall preview's keys are known: the first listed memory whose keys are unknown is read
    assert nav.next_call() == ("read_memory", {"memory_id": "m_1"})  # no via_key_id: no Hebbian write
    nav.observe("read_memory", {"memory_id": "m_1"}, {"keys": [{"key_id": "k_d"}]})
    assert nav.next_call()[1]["key_id"] == "k_d"  # type: ignore[index]
    nav.observe("read_key", {"key_id": "k_d"}, {"memories": []})
    # the preview's connected keys come last
    assert nav.next_call()[1]["key_id"] == "k_p"  # type: ignore[index]
    nav.observe("read_key", {"key_id": "k_p"}, None)
    assert nav.next_call() is None and nav.full == {"m_p", "m_1", "m_2"}
    hebbian = assoc.Navigator("q", hebbian=True, listed=[("m_1", "k_a")], calls=1)
    assert hebbian.next_call() == ("read_memory", {"memory_id": "m_1", "via_key_id": "k_a"})
    steps = [assoc.Step("recall", {}, 500, False), assoc.Step("read_key", {}, 900, True)]
    row = assoc.navigation_row(steps, budget=1500)
    assert row["hit"] and row["hit_call"] == 2 and row["tokens_to_hit"] == 1400 and row["hit_within_budget"]
    assert not assoc.navigation_row(steps, budget=1000)["hit_within_budget"]


def test_core_on_a_tiny_store(assoc: ModuleType, graph: MemoryGraph, minilm_dir: Path) -> None:
    items = assoc.case_items(CASES)
    ids = assoc.write_store(graph, items, seed=30)
    assert sorted(ids) == sorted(label for label, _ in items) and len(set(ids.values())) == len(items)
    ranks = {c["id"]: assoc.engine_ranks(graph, c, ids) for c in CASES}
    assert all(set(r) == set(assoc.HOPS) for r in ranks.values())
    assert ranks["c0-t-bramblewick"][0][1] == 1  # the direct path
    assert ranks["h1-t-pistachio"][2][1] is not None  # the walk reaches the one-hop target
    ntok = assoc.tokenizer(minilm_dir)
    assert ntok("What is 17 times 23?") > 0 and ntok("") == 0
    call = assoc.in_process_caller(graph)
    ctrl = CASES[2]
    steps = assoc.navigate_sync(call, ctrl["question"], ctrl["memories"][1]["content"], ntok)
    row = assoc.navigation_row(steps, 1500)
    assert steps[0].tool == "recall" and len(steps) <= 4 and all(s.tokens > 0 for s in steps)
    assert row["hit"] and row["hit_call"] == 1
    one = CASES[0]
    steps = assoc.navigate_sync(call, one["question"], one["memories"][1]["content"], ntok)
    assert {s.tool for s in steps[1:]} <= {"read_key", "read_memory"}


def test_distractors_are_locomo_turns_with_agent_keys(assoc: ModuleType) -> None:
    if not (assoc.DEFAULT_LOCOMO / "conv-26.json").is_file() or not assoc.DEFAULT_KEYS.is_dir():
        pytest.skip("LoCoMo data not available")
    out = assoc.distractor_items(assoc.DEFAULT_LOCOMO, assoc.DEFAULT_KEYS, ["conv-26"], 40, seed=30)
    assert len(out) == 40 and all(label.startswith("conv-26:D") for label, _ in out)
    assert all(item["keys"] and len(item["keys"]) == len(item["key_types"]) for _, item in out)
    again = assoc.distractor_items(assoc.DEFAULT_LOCOMO, assoc.DEFAULT_KEYS, ["conv-26"], 40, seed=30)
    assert [label for label, _ in again] == [label for label, _ in out]
