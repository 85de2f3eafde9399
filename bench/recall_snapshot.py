"""Every recall entry point's result on a fixed store, as JSON lines: a refactoring must leave them byte-identical.

Usage::

    python bench/recall_snapshot.py --out FILE [--convs 26,30] [--limit N]

The store (built in a temp dir, in-process, deterministic ids, a clock frozen after the build):
the cases of ``assoc-chains/dev.jsonl`` and ``dev-v2.jsonl`` with 40 hub fillers per hub key
(bench/assoc_store.py), LoCoMo turns of ``--convs`` with their agent keys, and a few memories in
Korean, Japanese and with apostrophes (``EXTRA``). The queries: every case question and unrelated
prompt of both files, the LoCoMo questions of ``--convs``, and ``EXTRA_QUERIES`` (Korean, a
possessive, a long prompt, a lone hub name, punctuation only). Per query, in this order: ``recall``
(default, then ``top_k=3, budget=200`` with a ``context``), ``recall_direct`` (hops 0, 2, 3, top 10,
``explain``), ``recall_inject``, ``read_key`` on recall's first key with the query; then, for the
first 60 queries in turn, ``recall_direct`` with Hebbian reinforcement followed by ``recall`` again
(the writes change later rankings the same way on every run).

ONNX runs with one thread (its results may differ in the last bits between thread counts). The
output's sha256 is printed: two runs of one tree print the same one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import locomo  # noqa: E402
from assoc_cases import DEFAULT_CASES, DEFAULT_CASES_V2, load_lines, unrelated_prompts  # noqa: E402
from assoc_store import DEFAULT_KEYS, DEFAULT_LOCOMO, BuildClock, case_items, distractor_items, hub_items  # noqa: E402

EXTRA: list[dict[str, Any]] = [
    {"content": "동건이는 파이썬을 좋아하고 주말마다 서울에서 코딩 모임에 간다.",
     "keys": ["동건", "파이썬", "코딩 모임"], "key_types": ["name", "concept", "concept"]},
    {"content": "김민지 씨는 부산 출장 때마다 해운대 근처 호텔에 묵는다.",
     "keys": ["김민지", "부산 출장", "호텔"], "key_types": ["name", "concept", "concept"]},
    {"content": "東京の会議は毎月第一月曜日に開かれる。", "keys": ["東京", "会議"],
     "key_types": ["proper_noun", "concept"]},
    {"content": "Siobhan O'Brien's café on Rue de l'Église closes early on Sundays.",
     "keys": ["Siobhan O'Brien", "café", "Rue de l'Église"], "key_types": ["name", "concept", "proper_noun"]},
    {"content": "The user's K8s cluster runs three worker nodes on RHEL 8.",
     "keys": ["K8s", "worker nodes", "RHEL 8"], "key_types": ["proper_noun", "concept", "proper_noun"]},
]
EXTRA_QUERIES = [
    "동건이는 무엇을 좋아해?",
    "김민지 씨는 부산에서 어디에 묵어?",
    "東京の会議はいつ?",
    "When does O'Brien's café close?",
    "What does my k8s cluster run on?",
    "Caroline?",
    "???",
    "Melanie and Caroline: which of them went camping, and did both paint?",
    "Tell me everything. " + "The user wants a long prompt about their week, work, family and plans. " * 12,
]
CONTEXT = "Earlier in this session the user talked about their weekend plans and a work deadline."


def items_and_queries(convs: list[str], limit: int | None) -> tuple[list[dict[str, Any]], list[str]]:
    v1, v2 = load_lines(DEFAULT_CASES), load_lines(DEFAULT_CASES_V2)
    cases = [c for c in v1 + v2 if not c.get("unrelated")]
    labelled = case_items(cases) + hub_items(cases, 40, 30) + distractor_items(DEFAULT_LOCOMO, DEFAULT_KEYS, convs,
                                                                                None, 30)
    items = [item for _, item in labelled] + EXTRA
    queries = [c["question"] for c in cases]
    queries += [u["prompt"] for u in unrelated_prompts(v1) + unrelated_prompts(v2)]
    for conv in convs:
        queries += [q["question"] for q in locomo.load_conversation(DEFAULT_LOCOMO / f"{conv}.json")["qa"]
                    if q.get("question")]
    queries += EXTRA_QUERIES
    return items, queries[:limit] if limit else queries


def snapshot(graph: Any, queries: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def record(n: int, call: str, result: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = result.dump()
        out.append({"q": n, "call": call, "result": dumped})
        return dumped

    for n, q in enumerate(queries):
        rec = record(n, "recall", graph.recall(query=q))
        record(n, "recall/context", graph.recall(query=q, top_k=3, budget=200, context=CONTEXT))
        for hops in (0, 2, 3):
            record(n, f"recall_direct/h{hops}",
                   graph.recall_direct(query=q, top_k=10, hops=hops, rerank=False, explain=True, reinforce=False))
        record(n, "recall_inject", graph.recall_inject(prompt=q))
        if rec["keys"]:
            record(n, "read_key", graph.read_key(key_id=rec["keys"][0]["key_id"], query=q, limit=10))
    for n, q in enumerate(queries[:60]):
        record(n, "recall_direct/reinforce", graph.recall_direct(query=q, top_k=5, rerank=False))
        record(n, "recall/after", graph.recall(query=q))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON lines file to write")
    p.add_argument("--convs", default="26,30", help="LoCoMo conversations (turns and questions)")
    p.add_argument("--limit", type=int, default=None, help="first N queries only")
    args = p.parse_args(argv)
    convs = [f"conv-{c.strip().removeprefix('conv-')}" for c in args.convs.split(",") if c.strip()]
    items, queries = items_and_queries(convs, args.limit)
    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=1)
    work = Path(tempfile.mkdtemp(prefix="keymem-snapshot-"))
    from keymem.memory.graph import MemoryGraph

    try:
        _common.deterministic_ids("recall-snapshot")
        clock = BuildClock(1_800_000_000.0)
        graph = MemoryGraph.open(_common.settings(work / "data", model_dir), embedder=emb, reranker=None,
                                 clock=clock, progress=False)
        try:
            for start in range(0, len(items), 500):
                graph.remember_batch(items[start: start + 500])
            clock.freeze()
            t0 = time.perf_counter()
            rows = snapshot(graph, queries)
            seconds = time.perf_counter() - t0
        finally:
            graph.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    Path(args.out).write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    print(f"{len(items)} memories, {len(queries)} queries, {len(rows)} results in {seconds:.1f}s; sha256 {digest}")


if __name__ == "__main__":
    main()
