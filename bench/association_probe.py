"""Why does expansion change so little? Per-question evidence analysis on LoCoMo.

Usage::

    python bench/association_probe.py --data DIR [--keys DIR] [--only conv-26,...] [--source agent]

For every question (categories 1-4) it ranks the top 100 with ``recall_direct`` at hops 0 and
hops 2 and reports, for each evidence turn missed in the hops-0 top 10:

* whether it shares a walkable key (at most 50 visible memories) with a hops-0 top-5 hit
  ("one shared key away"), and that key's size;
* whether one of the query's routed keys links to it;
* its rank at hops 0 and at hops 2 (101 = not in the top 100).

It prints the counts and the distribution of ranks, which is what docs/design.md cites.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import locomo  # noqa: E402

FANOUT = 50


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--keys", default=None)
    p.add_argument("--only", default=None)
    p.add_argument("--source", choices=["agent", "suggested"], default="agent")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=1)
    from keymem.memory.query import Query
    from keymem.memory.recall import named_keys, route_keys

    out: list[dict[str, Any]] = []
    for path in locomo.select_files(args.data, args.only, None):
        conv = locomo.load_conversation(path)
        turns = conv["turns"]
        known = {t["dia_id"] for t in turns}
        if args.source == "agent":
            kf = locomo.agent_key_file(Path(args.keys) if args.keys else None, conv["name"])
            if kf is None:
                continue
            items = locomo.agent_items(conv, kf)
        else:
            items = locomo.memory_items(conv, 6)
        _common.deterministic_ids(f"{conv['name']}/{args.source}")
        with tempfile.TemporaryDirectory() as tmp:
            g = _common.open_graph(Path(tmp) / "d", model_dir, emb)
            m2d = locomo.build_store(g, turns, items)
            d2m = {d: m for m, ds in m2d.items() for d in ds}
            now = g.now()
            for qa in conv["qa"]:
                cat = str(qa.get("category"))
                ev = locomo.evidence_ids(qa.get("evidence", []), known)
                if cat not in locomo.CATEGORIES or not ev:
                    continue
                q = qa["question"]
                r0 = [h.memory_id for h in g.recall_direct(query=q, top_k=100, hops=0, reinforce=False, rerank=False).results]
                r2 = [h.memory_id for h in g.recall_direct(query=q, top_k=100, hops=2, reinforce=False, rerank=False).results]
                analysed = Query.analyse(g, q)
                routed = route_keys(g, analysed.vector, named_keys(g, analysed, "default"), "default", 10)
                for v in analysed.phrase_vectors:
                    for k, c in g.vectors.search(v, "default", 5, min_score=g.thresholds.key_recall):
                        routed.setdefault(k, (c, "key_cosine"))
                top5_keys: dict[str, int] = {}
                for mid in r0[:5]:
                    for k, _ in g.mirror.memory_keys(mid):
                        n = g.mirror.memory_count(k, now)
                        if n <= FANOUT:
                            top5_keys[k] = n
                for d in ev:
                    mid = d2m[d]
                    rank0 = r0.index(mid) + 1 if mid in r0 else 101
                    rank2 = r2.index(mid) + 1 if mid in r2 else 101
                    keys = [k for k, _ in g.mirror.memory_keys(mid)]
                    shared = [top5_keys[k] for k in keys if k in top5_keys]
                    out.append({"conv": conv["name"], "cat": cat, "q": q, "dia": d, "rank0": rank0, "rank2": rank2,
                                "shared_with_top5": bool(shared) and rank0 > 5,
                                "shared_key_size": min(shared) if shared else None,
                                "routed_key_links": any(k in routed for k in keys),
                                "all_keys_hub": all(g.mirror.memory_count(k, now) > FANOUT for k in keys)})
            g.close()
        print(f"{conv['name']}: done", file=sys.stderr)
    miss = [r for r in out if r["rank0"] > 10]
    print(f"evidence turns: {len(out)}; missed in hops-0 top 10: {len(miss)}")
    for name, rows in (("all", miss), ("cat1", [r for r in miss if r["cat"] == "1"])):
        n = len(rows) or 1
        print(f"[{name}] missed {len(rows)}: one walkable key from a top-5 hit {sum(r['shared_with_top5'] for r in rows)}"
              f" ({sum(r['shared_with_top5'] for r in rows) / n:.0%}); linked to a routed key "
              f"{sum(r['routed_key_links'] for r in rows)}; only hub keys {sum(r['all_keys_hub'] for r in rows)}")
        b = Counter()
        for r in rows:
            for lo, hi, lab in ((11, 20, "11-20"), (21, 50, "21-50"), (51, 100, "51-100"), (101, 101, ">100")):
                if lo <= r["rank0"] <= hi:
                    b["h0 " + lab] += 1
                if lo <= r["rank2"] <= hi:
                    b["h2 " + lab] += 1
        print(f"[{name}] ranks: " + ", ".join(f"{k}: {b[k]}" for k in sorted(b)))
        moved = [r for r in rows if r["rank2"] < r["rank0"]]
        print(f"[{name}] moved up by hops 2: {len(moved)}; into the top 10: {sum(r['rank2'] <= 10 for r in rows)}")
        sizes = Counter(r["shared_key_size"] for r in rows if r["shared_with_top5"])
        print(f"[{name}] size of the smallest shared key: {sorted(sizes.items())}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
