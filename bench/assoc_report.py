"""The figures and tables of bench/assoc.py: per case rows, by hops and by tag, and the unrelated prompts.

*Delivered* is what reaches the agent: the memories a ``recall`` result presents (its preview and
its list, each once) and the memories a hook injection names. *Precision* pools every delivery of
a row set: delivered memories that are the case's target or chain (head, bridges) over all
delivered memories (decoys, hub fillers, LoCoMo turns and other cases' memories count against).
A *decoy delivered* is a decoy case where any memory marked (v2) or derived (v1) as a decoy is
delivered.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assoc_agent import ENGINE_TOP_K, HOPS, outranks  # noqa: E402
from assoc_cases import GROUPS, RELEVANT_ROLES, TAGS, group_of, norm_key, role_of_label, tags_of  # noqa: E402

TOPS = (1, 3, 10, 50)
RECALL_BUDGET = 500  # the recall tool's default token budget
# Issue 37's targets for a v2 file: (label, subset, figure, at least (True) or at most (False), value).
TARGETS_V2 = (
    ("recall holds the target", "association", "recall_hit", True, 0.70),
    ("hook holds the target", "association", "hook_hit", True, 0.50),
    ("navigation, 4 calls", "association", "nav_hit", True, 0.80),
    ("three hops, recall", "three-hop", "recall_hit", True, 0.50),
    ("busy keys (hub), recall", "hub", "recall_hit", True, 0.60),
    ("decoy delivered by recall (decoy cases)", "decoy", "recall_decoy_delivered", False, 0.30),
    ("precision of recall's memories", "association", "recall_precision", True, 0.70),
    ("controls, recall", "control", "recall_hit", True, 0.90),
    ("recall's text content <= 500 tokens (share)", "all", "recall_within_budget", True, 1.00),
)


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def _share(flags: list[bool]) -> float:
    return _mean([1.0 if f else 0.0 for f in flags])


def _r(x: float, n: int = 4) -> float:
    return round(x, n)


def case_row(case: dict[str, Any], info: dict[str, Any], ranks: dict[int, list[int | None]],
             server: dict[str, Any]) -> dict[str, Any]:
    """One case's figures: engine ranks, what recall, the hook and the navigation delivered."""
    t = case["target"]
    rec, hook = server["recall"][case["id"]], server["hook"][case["id"]]
    rec_roles = [role_of_label(lb, case, info) for lb in rec["delivered"]]
    hook_roles = [role_of_label(lb, case, info) for lb in dict.fromkeys(hook["injected"])]
    return {
        "id": case["id"], "group": group_of(case), "tags": tags_of(case, info), "question": case["question"],
        "target": case["memories"][t]["content"], "decoys": info["decoys"], "heads": info["heads"],
        "bridges": info["bridges"],
        "engine": {f"hops{h}": ranks[h][t] for h in HOPS},
        "engine_all": {f"hops{h}": ranks[h] for h in HOPS},
        "decoy_outranked": ({f"hops{h}": outranks(ranks[h], t, info["decoys"]) for h in HOPS}
                            if info["decoys"] else None),
        "cluster_named": sorted({norm_key(k) for k in rec["keys"] if k} & set(info["mentioned_keys"])),
        "cluster_chain": sorted({norm_key(k) for k in rec["keys"] if k} & set(info["chain_keys"])),
        "recall": rec, "hook": hook, "navigation": server["navigation"][case["id"]],
        "recall_roles": rec_roles, "hook_roles": hook_roles,
        "recall_decoy": "decoy" in rec_roles, "hook_decoy": "decoy" in hook_roles,
    }


def figures(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one set of case rows."""
    nav = [r["navigation"] for r in rs]
    decoy_rows = [r for r in rs if r["decoys"]]

    def precision(key: str) -> float:
        roles = [role for r in rs for role in r[key]]
        return _r(_share([role in RELEVANT_ROLES for role in roles])) if roles else float("nan")

    def role_counts(key: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rs:
            for role in r[key] or ["(none)"]:
                out[role] = out.get(role, 0) + 1
        return dict(sorted(out.items()))

    return {
        "n": len(rs),
        "engine": {f"hops{h}": {f"top{k}": _r(_share([(r["engine"][f"hops{h}"] or 10**9) <= k for r in rs]))
                                for k in TOPS} for h in HOPS},
        "engine_median_rank": {f"hops{h}": statistics.median([r["engine"][f"hops{h}"] or ENGINE_TOP_K + 1
                                                              for r in rs]) for h in HOPS},
        "recall_hit": _r(_share([r["recall"]["hit"] for r in rs])),
        "recall_id": _r(_share([r["recall"]["id"] for r in rs])),
        "recall_tokens": _r(_mean([r["recall"]["tokens"] for r in rs]), 1),
        "recall_tokens_max": max(r["recall"]["tokens"] for r in rs),
        "recall_within_budget": _r(_share([r["recall"]["tokens"] <= RECALL_BUDGET for r in rs])),
        "recall_keys": _r(_mean([len(r["recall"]["keys"]) for r in rs]), 2),
        "recall_delivered": _r(_mean([len(r["recall_roles"]) for r in rs]), 2),
        "recall_precision": precision("recall_roles"),
        "cluster_named": _r(_share([bool(r["cluster_named"]) for r in rs])),
        "cluster_chain": _r(_share([bool(r["cluster_chain"]) for r in rs])),
        "hook_hit": _r(_share([r["hook"]["hit"] for r in rs])),
        "hook_injects": _r(_share([bool(r["hook"]["injected"]) or r["hook"]["tokens"] > 0 for r in rs])),
        "hook_tokens": _r(_mean([r["hook"]["tokens"] for r in rs]), 1),
        "hook_delivered": _r(_mean([len(r["hook_roles"]) for r in rs]), 2),
        "hook_precision": precision("hook_roles"),
        "nav_hit": _r(_share([n["hit"] for n in nav])),
        "nav_hit_within_budget": _r(_share([n["hit_within_budget"] for n in nav])),
        "nav_calls": _r(_mean([n["calls"] for n in nav]), 2),
        "nav_tokens": _r(_mean([n["tokens"] for n in nav]), 1),
        "nav_tokens_to_hit": _r(_mean([n["tokens_to_hit"] for n in nav if n["tokens_to_hit"]]), 1),
        "decoy_cases": len(decoy_rows),
        "recall_decoy_delivered": _r(_share([r["recall_decoy"] for r in decoy_rows])) if decoy_rows else None,
        "hook_decoy_delivered": _r(_share([r["hook_decoy"] for r in decoy_rows])) if decoy_rows else None,
        "decoy_outranked": {f"hops{h}": _r(_share([r["decoy_outranked"][f"hops{h}"] for r in decoy_rows]))
                            for h in HOPS} if decoy_rows else None,
        "recall_delivered_roles": role_counts("recall_roles"),
        "hook_injected_roles": role_counts("hook_roles"),
    }


def subsets(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Row sets reported: each group, all association cases, every case, and each tag (association cases)."""
    assoc = [r for r in rows if r["group"] != "control"]
    out = {g: [r for r in rows if r["group"] == g] for g in GROUPS}
    out["association"] = assoc
    out["all"] = rows
    for t in TAGS:
        out[t] = [r for r in assoc if t in r["tags"]]
    return {name: rs for name, rs in out.items() if rs}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {name: figures(rs) for name, rs in subsets(rows).items()}


def unrelated_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The prompts about nothing stored: all of them, the plain ones and the hard negatives apart."""
    out: dict[str, Any] = {}
    for name, rs in (("all", rows), ("plain", [r for r in rows if not r["hard"]]),
                     ("hard", [r for r in rows if r["hard"]])):
        if not rs:
            continue
        inj = [r for r in rs if r["hook_injects"]]
        out[name] = {
            "n": len(rs), "hook_injects": len(inj), "hook_silent": _r(_share([not r["hook_injects"] for r in rs])),
            "hook_tokens_mean": _r(_mean([r["hook_tokens"] for r in rs]), 1),
            "hook_tokens_when_injecting": _r(_mean([r["hook_tokens"] for r in inj]), 1),
            "hook_memories_mean": _r(_mean([len(r["hook_injected"]) for r in rs]), 2),
            "recall_presents": sum(r["recall_presents"] for r in rs),
            "recall_not_confident": _r(_share([r["recall_confident"] is False for r in rs])),
            "recall_tokens_mean": _r(_mean([r["recall_tokens"] for r in rs]), 1),
            "recall_preview_score_max": max((s for r in rs for s in r["recall_scores"]
                                             if isinstance(s, (int, float))), default=None)}
    return out


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 37's dev-v2 targets beside this run's figures (v2 files only)."""
    s, out = res["summary"], []
    for label, subset, name, at_least, value in TARGETS_V2:
        got = s.get(subset, {}).get(name)
        met = None if got is None or got != got else (got >= value if at_least else got <= value)
        out.append({"target": label, "figure": got, "want": f"{'>=' if at_least else '<='} {value:.2f}", "met": met})
    u = res["unrelated"].get("all")
    if u:
        out.append({"target": "hook silent, unrelated prompts", "figure": u["hook_silent"], "want": ">= 0.90",
                    "met": u["hook_silent"] >= 0.90})
    return out


# -- printing ------------------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "   -" if x is None or x != x else f"{100 * x:3.0f}%"


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.0f}"


def print_case(r: dict[str, Any]) -> None:
    e = " ".join(f"h{h}:{r['engine'][f'hops{h}'] or '-'}" for h in HOPS)
    rec, hook, nav = r["recall"], r["hook"], r["navigation"]
    shown = ",".join(rec["delivered"]) or "none"
    dec = ""
    if r["decoy_outranked"]:
        dec = " | decoy " + "".join("+" if r["decoy_outranked"][f"hops{h}"] else "-" for h in HOPS)
    print(f"{r['id']:<28} {r['group']:<9} rank {e:<24} | recall {'HIT ' if rec['hit'] else 'miss'} "
          f"{rec['tokens']:4d}t [{shown}] | hook {'HIT ' if hook['hit'] else 'miss'} {hook['tokens']:4d}t "
          f"[{','.join(hook['injected'])}] | nav {'HIT@' + str(nav['hit_call']) if nav['hit'] else 'miss '} "
          f"{nav['calls']}c {nav['tokens']}t{dec}")


def print_unrelated_row(u: dict[str, Any]) -> None:
    print(f"unrelated{' (hard)' if u['hard'] else ''}: hook {len(u['hook_injected'])} ({u['hook_tokens']}t) recall "
          f"{'presents ' + ','.join(u['recall_delivered']) if u['recall_presents'] else 'no memory'} "
          f"confident={u['recall_confident']} ({u['recall_tokens']}t) | {u['prompt']}")


def _order(s: dict[str, Any]) -> list[str]:
    return [g for g in (*GROUPS[:3], "association", "control", *TAGS, "all") if g in s]


def print_tables(res: dict[str, Any]) -> None:
    s, st = res["summary"], res["store"]
    print(f"== {res['cases_file']}: {res['cases']} cases; store: {st['memories']} memories ({st['case_memories']} "
          f"case, {st['hub_fillers']} hub fillers, {st['distractors']} LoCoMo turns of {','.join(st['convs'])}), "
          f"seed {st['seed']}")
    print(f"\nengine: recall_direct(top_k={ENGINE_TOP_K}, reinforce=False, rerank=False), share of targets at rank <= k")
    print(f"{'rows':<12} {'n':>3} {'hops':>4} | " + " ".join(f"{'top' + str(k):>6}" for k in TOPS) + " | median rank")
    for g in (*GROUPS, "association"):
        if g not in s:
            continue
        for h in HOPS:
            e, med = s[g]["engine"][f"hops{h}"], s[g]["engine_median_rank"][f"hops{h}"]
            print(f"{g:<12} {s[g]['n']:>3} {h:>4} | " + " ".join(f"{_pct(e[f'top{k}']):>6}" for k in TOPS)
                  + f" | {med if med <= ENGINE_TOP_K else '>' + str(ENGINE_TOP_K)}")
    nb = res["navigation"]
    print(f"\ndelivery by hops and by tag (real server over MCP stdio; real `keymem hook`): target's full text "
          f"received; navigation <= {nb['calls']} calls ('budget': within {nb['budget_tokens']} tokens); decoy: share "
          f"of the rows' decoy cases where a decoy was delivered; precision: delivered memories that are the "
          f"case's target or chain; tokens: mean (recall: max too)")
    print(f"{'rows':<12} {'n':>3} | {'recall':>6} {'hook':>5} {'nav':>5} {'budget':>6} | {'decoy':>5} {'rec':>5} "
          f"{'hook':>5} | {'prec':>5} {'hook':>5} | {'rec tok':>7} {'max':>4} {'hook':>5} {'nav':>5} {'n-calls':>7}")
    for g in _order(s):
        x = s[g]
        print(f"{g:<12} {x['n']:>3} | {_pct(x['recall_hit']):>6} {_pct(x['hook_hit']):>5} {_pct(x['nav_hit']):>5} "
              f"{_pct(x['nav_hit_within_budget']):>6} | {x['decoy_cases']:>5} {_pct(x['recall_decoy_delivered']):>5} "
              f"{_pct(x['hook_decoy_delivered']):>5} | {_pct(x['recall_precision']):>5} "
              f"{_pct(x['hook_precision']):>5} | {x['recall_tokens']:>7.0f} {x['recall_tokens_max']:>4} "
              f"{x['hook_tokens']:>5.0f} {x['nav_tokens']:>5.0f} {x['nav_calls']:>7.2f}")
    decoys = [(g, s[g]) for g in _order(s) if s[g]["decoy_cases"]]
    if decoys:
        print("\ndecoys (engine): target outranks every decoy in recall_direct")
        print(f"{'rows':<12} {'n':>3} | " + " ".join(f"{'hops' + str(h):>6}" for h in HOPS))
        for g, x in decoys:
            print(f"{g:<12} {x['decoy_cases']:>3} | " + " ".join(f"{_pct(x['decoy_outranked'][f'hops{h}']):>6}"
                                                              for h in HOPS))
    print("\nrecall's key cluster: mean keys; share holding a key the question names (check.py's rule, aliases "
          "included); share holding a chain key")
    for g in _order(s):
        print(f"{g:<12} keys {s[g]['recall_keys']:.2f} | named {_pct(s[g]['cluster_named'])} | "
              f"chain {_pct(s[g]['cluster_chain']) if g != 'control' else '   -'}")
    print("\nwhat recall delivers / what the hook injects, by the memory's role in the case (counts)")
    for g in _order(s):
        print(f"{g:<12} recall: {s[g]['recall_delivered_roles']}  hook: {s[g]['hook_injected_roles']}")
    print("\nunrelated prompts: hook silent (injects for how many, tokens when it does); recall presents a memory "
          "for how many; recall says confident=false")
    for name, u in res["unrelated"].items():
        print(f"{name:<6} {u['n']:>3} | hook silent {_pct(u['hook_silent'])} (injects {u['hook_injects']}, "
              f"{u['hook_memories_mean']:.2f} memories, {_num(u['hook_tokens_when_injecting'])} tokens when it does) "
              f"| recall presents {u['recall_presents']}, not confident {_pct(u['recall_not_confident'])} "
              f"({u['recall_tokens_mean']:.0f} tokens; best preview score {u['recall_preview_score_max']})")
    if res.get("targets"):
        print("\nissue 37 targets (dev-v2)")
        for t in res["targets"]:
            mark = "-" if t["met"] is None else ("met" if t["met"] else "MISSED")
            print(f"  {t['target']:<44} {_pct(t['figure']):>5}  want {t['want']:<8} {mark}")
    failures = [r["id"] for r in res["rows"] if r["hook"].get("failure")]
    failures += [u["id"] for u in res["unrelated_rows"] if u.get("hook_failure")]
    errors = [r["id"] for r in res["rows"] if r["recall"].get("error") or r["navigation"].get("errors")]
    print(f"\nhook failures (time limit, no daemon): {len(failures)} {failures[:10]}; tool errors: {len(errors)} "
          f"{errors[:10]}")
    print(f"\nseconds: {res['seconds']}")
