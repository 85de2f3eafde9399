"""onnxruntime session options vs RSS and embedding latency (MiniLM int8, one thread).

Usage::

    python bench/onnx_memory.py [--repeats 3] [--json OUT]

Each variant runs in a fresh process: RSS after the session opens, after 200 single short-query
embeddings (recall's shape), after 500 short keys in batches of 32 (a write batch's shape), and
after 8 texts of 256 tokens (the longest input; an arena keeps what the largest call needed), and
the p50/p95 of the single-query embedding. Variants: the CPU memory arena and the memory-pattern
planner on/off (``keymem.models._onnx.CPU_MEM_ARENA`` / ``MEM_PATTERN``). Repeated ``--repeats``
times, interleaved, medians reported: RSS varies little between runs, latency on a shared
machine does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = {"arena+pattern (ORT default)": (1, 1), "arena, no pattern": (1, 0),
            "no arena, pattern": (0, 1), "no arena, no pattern": (0, 0)}


def child(arena: int, pattern: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import _common

    from keymem.models import _onnx

    _onnx.CPU_MEM_ARENA, _onnx.MEM_PATTERN = bool(arena), bool(pattern)
    out: dict[str, Any] = {}
    base = _common.rss_mb()
    emb = _common.embedder(_common.minilm_dir(), threads=1)
    out["session_mb"] = _common.rss_mb() - base
    words = ["coffee", "beans", "Dennis", "Marlow", "travel", "plan", "Seoul", "meeting", "notes", "budget", "garden"]
    queries = [" ".join(words[i % 7: i % 7 + 1 + i % 4]) for i in range(200)]
    times = []
    for q in queries:
        t = time.perf_counter()
        emb.embed([q])
        times.append(time.perf_counter() - t)
    out["after_queries_mb"] = _common.rss_mb() - base
    keys = [f"{words[i % 11]} {words[(i * 7) % 11]}" if i % 3 else words[i % 11] for i in range(500)]
    t = time.perf_counter()
    emb.embed(keys)
    out["keys_500_s"] = time.perf_counter() - t
    out["after_keys_mb"] = _common.rss_mb() - base
    emb.embed([" ".join(words * 30)] * 8)  # 256 tokens after truncation
    out["after_long_mb"] = _common.rss_mb() - base
    times = []
    for q in queries:
        t = time.perf_counter()
        emb.embed([q])
        times.append(time.perf_counter() - t)
    out["query_ms_p50"] = _common.pct(times, 0.5) * 1000
    out["query_ms_p95"] = _common.pct(times, 0.95) * 1000
    out["peak_mb"] = _common.peak_rss_mb()
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        arena, pattern = (int(x) for x in args.child.split(","))
        print(json.dumps(child(arena, pattern)))
        return
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name, (arena, pattern) in VARIANTS.items():
            res = subprocess.run([sys.executable, __file__, "--child", f"{arena},{pattern}"], check=True,
                                 capture_output=True, text=True)
            runs[name].append(json.loads(res.stdout))
    summary = {name: {k: round(statistics.median(r[k] for r in rs), 2) for k in rs[0]} for name, rs in runs.items()}
    print("| variant | session | +200 queries | +500 keys | +256-token batch | query p50 / p95 | 500 keys |")
    print("|---|---|---|---|---|---|---|")
    for name, s in summary.items():
        print(f"| {name} | {s['session_mb']:.0f} MB | {s['after_queries_mb']:.0f} MB | {s['after_keys_mb']:.0f} MB | "
              f"{s['after_long_mb']:.0f} MB | {s['query_ms_p50']:.2f} / {s['query_ms_p95']:.2f} ms | "
              f"{s['keys_500_s']:.2f} s |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"summary": summary, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
