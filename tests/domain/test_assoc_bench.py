"""The association benchmark's parts (bench/assoc*.py) on small synthetic cases and a tiny real store,
without a server process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from keymem.memory.graph import MemoryGraph
from tests import bench_modules


@pytest.fixture(scope="module")
def assoc() -> ModuleType:
    """bench/assoc.py, the one command; its parts are the modules it imports (bench/assoc_*.py)."""
    return bench_modules.load("assoc")


@pytest.fixture(scope="module")
def cases(assoc: ModuleType) -> ModuleType:
    return sys.modules["assoc_cases"]


@pytest.fixture(scope="module")
def store(assoc: ModuleType) -> ModuleType:
    return sys.modules["assoc_store"]


@pytest.fixture(scope="module")
def agent(assoc: ModuleType) -> ModuleType:
    return sys.modules["assoc_agent"]


@pytest.fixture(scope="module")
def server(assoc: ModuleType) -> ModuleType:
    return sys.modules["assoc_server"]


@pytest.fixture(scope="module")
def report(assoc: ModuleType) -> ModuleType:
    return sys.modules["assoc_report"]


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


# v2: three hops, an alias, a key written two ways, a busy (hub) key, a marked decoy; a control with a
# decoy; prompts about nothing stored.
V2_CASES: list[dict[str, Any]] = [
    {"id": "h3-t-quill", "domain": "devops", "hops": 3, "control": False, "target": 3,
     "question": "Can Ottilie's team ship a release tomorrow afternoon?",
     "hard": ["alias", "keyform", "decoy", "hub"], "alias_map": {"Ottilie": "Ottilie Brandvold"},
     "key_variants": [["Quillfeather", "Quillfeather app"]], "hub_key": "Jenkins",
     "memories": [
         mem("Ottilie Brandvold leads the Quillfeather mobile app team.",
             ("Ottilie Brandvold", N), ("Quillfeather", P), ("team lead", C)),
         mem("Quillfeather's builds run on the company Jenkins farm.",
             ("Quillfeather app", P), ("Jenkins", P), ("build farm", C)),
         mem("The Jenkins controller is the VM jenkins-ctl-09.",
             ("Jenkins", P), ("jenkins-ctl-09", P), ("controller VM", C)),
         mem("jenkins-ctl-09 is rebooted for OS patching every Thursday 14:00-15:00 UTC.",
             ("jenkins-ctl-09", P), ("patch window", C), ("reboots", C)),
         {**mem("Ottilie Brandvold goes bouldering with Tobias on weekends.",
                ("Ottilie Brandvold", N), ("bouldering", C)), "decoy": True}]},
    {"id": "c0-t-marlowe", "domain": "family", "hops": 0, "control": True, "target": 0, "hard": [],
     "question": "What food does Marlowe the parrot eat?",
     "memories": [
         mem("Marlowe the parrot eats sunflower seeds and fresh fruit every morning.",
             ("Marlowe", N), ("parrot food", C)),
         {**mem("Marlowe the parrot was adopted from a rescue centre in 2019.", ("Marlowe", N), ("adoption", C)),
          "decoy": True}]},
]
V2_UNRELATED = [
    {"id": "u-plain-t1", "unrelated": True, "question": "What's 3 times 7?", "hard_negative": False},
    {"id": "u-hard-t1", "unrelated": True, "question": "Is bouldering good exercise?", "hard_negative": True,
     "near_key": "bouldering"},
]


def test_roles_follow_check_py(cases: ModuleType) -> None:
    one, two, ctrl = (cases.roles(c) for c in CASES)
    assert one["heads"] == [0] and one["dist"][1] == 1 and one["bridges"] == [] and one["decoys"] == []
    assert two["heads"] == [0] and two["dist"][2] == 2 and two["bridges"] == [1]
    assert two["chain_keys"] == ["apple", "strawberry"]
    assert 1 in ctrl["heads"] and ctrl["dist"][1] == 0
    assert [cases.group_of(c) for c in CASES] == ["one-hop", "two-hop", "control"]
    assert cases.memory_role(CASES[1], two, 1) == "bridge" and cases.memory_role(CASES[1], two, 2) == "target"
    assert [cases.tags_of(c, cases.roles(c)) for c in CASES] == [[], [], []]  # v1: decoy only when derived


def test_v2_roles_follow_marks_variants_and_aliases(cases: ModuleType) -> None:
    three, ctrl = V2_CASES
    info = cases.roles(three)
    assert info["heads"] == [0] and info["decoys"] == [4] and info["bridges"] == [1, 2]
    assert info["dist"][3] == 3 and info["dist"][4] == 0  # the decoy names Ottilie too
    assert {"quillfeather", "quillfeather app", "jenkin", "jenkin ctl 09"} <= set(info["chain_keys"])
    assert "ottilie brandvold" in info["mentioned_keys"]
    assert [cases.memory_role(three, info, i) for i in range(5)] == ["head", "bridge", "bridge", "target", "decoy"]
    assert cases.group_of(three) == "three-hop" and cases.tags_of(three, info) == ["alias", "keyform", "decoy", "hub"]
    # the declared variant pair is what joins the head to the chain: without it the target is out of reach
    assert 3 not in cases.roles({**three, "key_variants": []})["dist"]
    # an alias names the head although no key word is in the question
    aliased = {**three, "question": "Can the mobile lead's crew ship tomorrow?", "alias_map": {"mobile lead": "team lead"}}
    assert cases.roles(aliased)["heads"] == [0]
    cinfo = cases.roles(ctrl)
    assert cinfo["heads"] == [0] and cinfo["decoys"] == [1] and cinfo["dist"][0] == 0
    assert cases.group_of(ctrl) == "control" and cases.memory_role(ctrl, cinfo, 1) == "decoy"
    assert cases.role_of_label("hub:Jenkins#3", three, info) == "hub filler"
    assert cases.role_of_label("c0-t-marlowe#0", three, info) == "other case"
    assert cases.role_of_label("conv-26:D1:3", three, info) == "distractor"


def test_case_files_and_unrelated_prompts(cases: ModuleType, tmp_path: Path) -> None:
    v2 = tmp_path / "v2.jsonl"
    v2.write_text("\n".join(json.dumps(c) for c in [*V2_CASES, *V2_UNRELATED]) + "\n")
    lines = cases.load_lines(v2)
    assert cases.is_v2(lines) and [c["id"] for c in cases.load_cases(v2)] == ["h3-t-quill", "c0-t-marlowe"]
    prompts = cases.unrelated_prompts(lines)
    assert [(u["id"], u["hard"], u["near_key"]) for u in prompts] == [("u-plain-t1", False, None),
                                                                       ("u-hard-t1", True, "bouldering")]
    v1 = tmp_path / "v1.jsonl"
    v1.write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    builtin = cases.unrelated_prompts(cases.load_lines(v1))  # a v1 file has none: the built-in plain prompts
    assert not cases.is_v2(cases.load_lines(v1)) and [u["prompt"] for u in builtin] == list(cases.UNRELATED)
    assert not any(u["hard"] for u in builtin) and len(set(cases.UNRELATED)) == len(cases.UNRELATED) >= 20
    assert [c["id"] for c in cases.select_cases(CASES, "h2,c0")] == ["h2-t-newton", "c0-t-bramblewick"]


def test_dev_set_decoys_as_documented(cases: ModuleType) -> None:
    dev = cases.DEFAULT_CASES
    if not dev.is_file():
        pytest.skip(f"{dev} not available")
    loaded = cases.load_cases(dev)
    info = {c["id"]: cases.roles(c) for c in loaded}
    assert all(info[c["id"]]["dist"].get(c["target"]) == c["hops"] for c in loaded)
    decoy_groups = [cases.group_of(c) for c in loaded if info[c["id"]]["decoys"]]
    assert decoy_groups.count("one-hop") == 5 and decoy_groups.count("two-hop") == 5  # the README's 10 decoy cases


def test_dev_v2_as_documented(cases: ModuleType) -> None:
    dev = cases.DEFAULT_CASES_V2
    if not dev.is_file():
        pytest.skip(f"{dev} not available")
    lines = cases.load_lines(dev)
    loaded = cases.load_cases(dev)
    info = {c["id"]: cases.roles(c) for c in loaded}
    groups = [cases.group_of(c) for c in loaded]
    assert [groups.count(g) for g in cases.GROUPS] == [12, 24, 12, 12]  # the README's table
    assoc_cases = [c for c in loaded if not c["control"]]
    tags = [t for c in assoc_cases for t in cases.tags_of(c, info[c["id"]])]
    assert [tags.count(t) for t in cases.TAGS] == [21, 21, 21, 18]
    assert all(info[c["id"]]["dist"].get(c["target"]) == c["hops"] for c in loaded)
    assert all(info[c["id"]]["decoys"] for c in loaded if c["control"] or "decoy" in c["hard"])
    prompts = cases.unrelated_prompts(lines)
    assert len(prompts) == 30 and sum(u["hard"] for u in prompts) == 15


def test_hub_fillers(store: ModuleType) -> None:
    assert store.hub_keys(V2_CASES + CASES) == [("Jenkins", "proper_noun")]
    items = store.hub_items(V2_CASES, per_key=40, seed=30)
    assert [label for label, _ in items] == [f"hub:Jenkins#{n}" for n in range(40)]
    assert all(it["keys"][0] == "Jenkins" and it["key_types"][0] == "proper_noun" and "Jenkins" in it["content"]
               and len(it["keys"]) == len(it["key_types"]) >= 2 for _, it in items)
    assert len({it["content"].casefold() for _, it in items}) == 40  # the store would merge equal texts
    people = {k for _, it in items for k, t in zip(it["keys"], it["key_types"], strict=True) if t == "name"}
    assert people and "Tobias Lind" not in people  # "Tobias" is a word of a case: no filler names him
    assert store.hub_items(V2_CASES, per_key=40, seed=30) == items
    assert store.hub_items(V2_CASES, per_key=40, seed=31) != items
    assert store.hub_items(CASES, per_key=40, seed=30) == []


def test_what_the_client_receives(agent: ModuleType, server: ModuleType) -> None:
    content = 'Odalys said "no pets"  in August.'
    as_json = json.dumps({"memory": {"content": content, "memory_id": "m_ab12"}}, indent=2)
    assert agent.holds(as_json, content)  # escaped quotes, whitespace collapsed
    assert agent.holds("- [m_ab12] (fresh) Odalys said \"no pets\" in August.", content)
    assert not agent.holds(json.dumps({"preview": content[:20] + "…"}), content)
    assert agent.mentions(as_json, "m_ab12") and not agent.mentions(as_json, "m_ab13")
    assert server.injected_ids("- [m_ab12] (fresh) x\n- [m_ff] (aging) y", {"m_ab12": "a#0"}) == ["a#0"]
    assert agent.previews({"keys": [], "memory": None}) == []
    both = {"memory": {"memory_id": "m_1"}, "memories": [{"memory_id": "m_1"}, {"memory_id": "m_2"}]}
    assert [p["memory_id"] for p in agent.previews(both)] == ["m_1", "m_1", "m_2"]
    assert agent.delivered_ids(both) == ["m_1", "m_2"]  # the preview repeats the first delivered memory
    payload = server.hook_payload("What is 17 times 23?", "/tmp")
    assert payload["hook_event_name"] == "UserPromptSubmit" and payload["prompt"] == "What is 17 times 23?"
    assert agent.outranks([3, 1, 5], 0, [2]) and not agent.outranks([3, 1, 2], 0, [2])
    assert agent.outranks([3, 1, None], 0, [2]) and not agent.outranks([None, 1, None], 0, [2])


def test_navigator_policy_order(agent: ModuleType) -> None:
    nav = agent.Navigator("q", max_calls=8)
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
    hebbian = agent.Navigator("q", hebbian=True, listed=[("m_1", "k_a")], calls=1)
    assert hebbian.next_call() == ("read_memory", {"memory_id": "m_1", "via_key_id": "k_a"})
    steps = [agent.Step("recall", {}, 500, False), agent.Step("read_key", {}, 900, True)]
    row = agent.navigation_row(steps, budget=1500)
    assert row["hit"] and row["hit_call"] == 2 and row["tokens_to_hit"] == 1400 and row["hit_within_budget"]
    assert not agent.navigation_row(steps, budget=1000)["hit_within_budget"]


def _server_result(recall: dict[str, list[str]], hook: dict[str, list[str]], nav_hit: dict[str, bool]) -> dict[str, Any]:
    """What assoc_server.server_paths returns, for the given delivered labels."""
    targets = {c["id"]: f"{c['id']}#{c['target']}" for c in V2_CASES}
    return {
        "recall": {c: {"hit": targets[c] in got, "id": targets[c] in got, "tokens": 100 + 50 * len(got),
                       "delivered": got, "presented": got, "keys": ["Ottilie Brandvold", "Jenkins"],
                       "confident": True} for c, got in recall.items()},
        "hook": {c: {"hit": targets[c] in got, "injected": got, "tokens": 40 * len(got)} for c, got in hook.items()},
        "navigation": {c: {"hit": hit, "hit_within_budget": hit, "calls": 1, "tokens": 300,
                           "tokens_to_hit": 300 if hit else None, "hit_call": 1 if hit else None}
                       for c, hit in nav_hit.items()}}


def test_report_by_hops_and_tag(cases: ModuleType, report: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    three, ctrl = V2_CASES
    srv = _server_result(
        recall={"h3-t-quill": ["h3-t-quill#0", "hub:Jenkins#3", "h3-t-quill#3", "h3-t-quill#4"],
                "c0-t-marlowe": ["c0-t-marlowe#0"]},
        hook={"h3-t-quill": ["h3-t-quill#3"], "c0-t-marlowe": []},
        nav_hit={"h3-t-quill": True, "c0-t-marlowe": True})
    ranks = {"h3-t-quill": {h: [1, 5, None, 3 if h else None, 2] for h in range(4)},
             "c0-t-marlowe": {h: [1, 2] for h in range(4)}}
    rows = [report.case_row(c, cases.roles(c), ranks[c["id"]], srv) for c in V2_CASES]
    assert rows[0]["recall_roles"] == ["head", "hub filler", "target", "decoy"] and rows[0]["recall_decoy"]
    assert rows[0]["hook_roles"] == ["target"] and not rows[0]["hook_decoy"]
    assert rows[0]["decoy_outranked"] == {"hops0": False, "hops1": False, "hops2": False, "hops3": False}
    assert rows[1]["decoy_outranked"]["hops0"] and not rows[1]["recall_decoy"]
    s = report.summarise(rows)
    assert set(s) == {"three-hop", "control", "association", "all", "alias", "keyform", "decoy", "hub"}
    assert s["three-hop"]["recall_precision"] == 0.5 and s["three-hop"]["hook_precision"] == 1.0
    assert s["all"]["recall_precision"] == 0.6  # pooled: 3 of 5 delivered memories are the cases' own
    assert s["decoy"]["recall_decoy_delivered"] == 1.0 and s["control"]["recall_decoy_delivered"] == 0.0
    assert s["control"]["hook_precision"] != s["control"]["hook_precision"]  # nothing injected: no precision
    assert s["all"]["recall_tokens_max"] == 300 and s["all"]["recall_within_budget"] == 1.0
    assert s["association"]["engine"]["hops0"]["top3"] == 0.0 and s["association"]["engine"]["hops2"]["top3"] == 1.0
    unrelated = [
        {"id": "u-plain-t1", "prompt": "p", "hard": False, "hook_injects": False, "hook_tokens": 0, "hook_injected": [],
         "recall_presents": False, "recall_confident": False, "recall_tokens": 30, "recall_scores": []},
        {"id": "u-hard-t1", "prompt": "h", "hard": True, "hook_injects": True, "hook_tokens": 60,
         "hook_injected": ["h3-t-quill#4"], "recall_presents": True, "recall_confident": True, "recall_tokens": 90,
         "recall_presented": ["h3-t-quill#4", "h3-t-quill#4"], "recall_delivered": ["h3-t-quill#4"],
         "recall_scores": [0.7]}]
    u = report.unrelated_summary(unrelated)
    assert (u["all"]["hook_silent"], u["plain"]["hook_silent"], u["hard"]["hook_silent"]) == (0.5, 1.0, 0.0)
    assert u["plain"]["recall_not_confident"] == 1.0 and u["hard"]["recall_presents"] == 1
    res = {"cases_file": "v2.jsonl", "cases": 2, "summary": s, "unrelated": u, "rows": rows, "unrelated_rows": unrelated,
           "store": {"memories": 50, "case_memories": 7, "hub_fillers": 40, "distractors": 3, "convs": ["conv-26"],
                     "seed": 30}, "navigation": {"calls": 4, "budget_tokens": 1500}, "seconds": {}}
    res["targets"] = report.targets(res)
    met = {t["target"]: t["met"] for t in res["targets"]}
    assert met["three hops, recall"] and met["controls, recall"] and not met["decoy delivered by recall (decoy cases)"]
    assert met["hook silent, unrelated prompts"] is False
    report.print_tables(res)
    report.print_unrelated_row(unrelated[1])
    out = capsys.readouterr().out
    assert "three-hop" in out and "keyform" in out and "issue 37 targets" in out and "MISSED" in out
    assert "presents h3-t-quill#4 confident=True" in out and "hook failures (time limit, no daemon): 0" in out


def test_a_hook_that_fails_is_not_a_quiet_hook(server: ModuleType, minilm_dir: Path, tmp_path: Path) -> None:
    """The real hook with no daemon to ask prints nothing; the benchmark records why."""
    env = server.server_env(tmp_path / "data", minilm_dir)
    ctx, seconds, failure = server.run_hook(env, "What is 17 times 23?", str(tmp_path))
    assert ctx == "" and seconds > 0 and failure.startswith("keymem hook:")


def test_core_on_a_tiny_store(store: ModuleType, agent: ModuleType, graph: MemoryGraph, minilm_dir: Path) -> None:
    items = store.case_items(CASES + V2_CASES) + store.hub_items(V2_CASES, per_key=6, seed=30)
    ids = store.write_store(graph, items, seed=30)
    assert sorted(ids) == sorted(label for label, _ in items) and len(set(ids.values())) == len(items)
    ranks = {c["id"]: agent.engine_ranks(graph, c, ids) for c in CASES + V2_CASES}
    assert all(set(r) == set(agent.HOPS) for r in ranks.values())
    assert ranks["c0-t-bramblewick"][0][1] == 1  # the direct path
    assert ranks["h1-t-pistachio"][2][1] is not None  # the walk reaches the one-hop target
    assert ranks["c0-t-marlowe"][0][0] is not None
    ntok = agent.tokenizer(minilm_dir)
    assert ntok("What is 17 times 23?") > 0 and ntok("") == 0
    call = agent.in_process_caller(graph)
    ctrl = CASES[2]
    steps = agent.navigate_sync(call, ctrl["question"], ctrl["memories"][1]["content"], ntok)
    row = agent.navigation_row(steps, 1500)
    assert steps[0].tool == "recall" and len(steps) <= 4 and all(s.tokens > 0 for s in steps)
    assert row["hit"] and row["hit_call"] == 1
    one = CASES[0]
    steps = agent.navigate_sync(call, one["question"], one["memories"][1]["content"], ntok)
    assert {s.tool for s in steps[1:]} <= {"read_key", "read_memory"}


def test_distractors_are_locomo_turns_with_agent_keys(store: ModuleType) -> None:
    if not (store.DEFAULT_LOCOMO / "conv-26.json").is_file() or not store.DEFAULT_KEYS.is_dir():
        pytest.skip("LoCoMo data not available")
    out = store.distractor_items(store.DEFAULT_LOCOMO, store.DEFAULT_KEYS, ["conv-26"], 40, seed=30)
    assert len(out) == 40 and all(label.startswith("conv-26:D") for label, _ in out)
    assert all(item["keys"] and len(item["keys"]) == len(item["key_types"]) for _, item in out)
    again = store.distractor_items(store.DEFAULT_LOCOMO, store.DEFAULT_KEYS, ["conv-26"], 40, seed=30)
    assert [label for label, _ in again] == [label for label, _ in out]
    every = store.distractor_items(store.DEFAULT_LOCOMO, store.DEFAULT_KEYS, ["conv-26"], None, seed=30)
    assert len(every) > 40 and {label for label, _ in out} <= {label for label, _ in every}
