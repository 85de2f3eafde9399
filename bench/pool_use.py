"""Buffer-pool use per tool: how much engine memory each call takes, alone and four at once.

    python bench/pool_use.py --store D/data [--pool-mb N] [--calls 20] [--json OUT]

The store (a ``bench/scale.py --dir D`` build) is copied to a temporary data dir and opened as the
daemon opens it (MiniLM int8, reranker off). A sampler thread reads the engine's pool use
(``CALL BM_INFO()``: pages held, evictable cache included) every millisecond. For each tool:

* ``first``: how much the pool grew over the tool's first call (the pages it brings into cache);
* ``alone``: the highest use above the level before, over ``--calls`` calls one after another
  (transient memory: hash tables, sorts, results; plus pages not yet cached);
* ``x4``: the same with four threads calling at once (the daemon's worker pool is four threads);
* p50 and p95 latency of the sequential calls, alone on the store.

``engine_browse`` is ``browse_keys`` as the engine aggregate it was before it answered from the
graph mirror (every LINKS edge of the namespace counted and sorted in the pool), for comparison.

Also printed: the pool after the open (the mirror, BM25 and key-vector loads leave their pages
cached), the pool size, the process RSS after the open and at the end, and the store's counts.
Calls are seeded (same queries every run).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import embedder, minilm_dir, open_graph, pct, rss_mb  # noqa: E402

MIB = 1024 * 1024
# browse_keys as the engine aggregate it was before it answered from the mirror: the comparison row.
ENGINE_BROWSE = ("MATCH (k:Key)-[:LINKS]->(m:Memory) "
                 "WHERE k.namespace = $namespace AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now) "
                 "WITH k, count(m) AS n WHERE n >= $min_count "
                 "RETURN k, n ORDER BY n DESC, k.norm ASC SKIP $offset LIMIT $limit")


class Sampler:
    """The pool's use, read every millisecond on a connection of its own."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self) -> int:
        return self.store.pool_usage()[0]

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.store.pool_usage()[0])
            time.sleep(0.001)

    def reset(self) -> int:
        time.sleep(0.005)
        level = self.now()
        self.peak = level
        return level

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def plans(graph: Any, rng: random.Random, n: int) -> dict[str, list[dict[str, Any]]]:
    """Seeded arguments per tool, drawn from the store's own keys and memories."""
    browse = graph.browse_keys(namespace="default", limit=200).keys
    words = [k.key for k in browse]
    mids = [m.memory_id for k in browse[:20] for m in graph.read_key(key_id=k.key_id, limit=5).memories]
    out: dict[str, list[dict[str, Any]]] = {
        "recall": [{"query": " ".join(rng.sample(words, 2))} for _ in range(n)],
        "read_key": [{"key_id": rng.choice(browse).key_id, "query": rng.choice(words)} for _ in range(n)],
        "read_memory": [{"memory_id": rng.choice(mids)} for _ in range(n)],
        "browse_keys": [{"namespace": "default", "limit": 20, "offset": rng.randrange(0, 200)} for _ in range(n)],
        "browse_hubs": [{"namespace": "default", "hubs_only": True, "limit": 20} for _ in range(n)],
        "remember": [{"content": f"pool probe {i}: {' '.join(rng.sample(words, 4))}", "keys": rng.sample(words, 3)}
                     for i in range(n)],
        "confirm_memory": [{"memory_id": rng.choice(mids), "evidence": "the user said so again"} for _ in range(n)],
        "counts": [{} for _ in range(n)],
        "engine_browse": [{"namespace": "default", "now": time.time(), "min_count": 1, "offset": o, "limit": 20}
                          for o in range(n)],
    }
    return out


def call(graph: Any, tool: str, args: dict[str, Any]) -> None:
    if tool == "browse_hubs":
        graph.browse_keys(**args)
    elif tool == "counts":
        graph.counts()
    elif tool == "engine_browse":
        graph.store.raw(ENGINE_BROWSE, args)
    else:
        getattr(graph, tool)(**args)


def measure(graph: Any, sampler: Sampler, tool: str, args: list[dict[str, Any]]) -> dict[str, Any]:
    before = sampler.reset()
    call(graph, tool, args[0])
    first = sampler.peak - before
    level = sampler.reset()
    lat = []
    for a in args[1:]:
        t0 = time.perf_counter()
        call(graph, tool, a)
        lat.append(time.perf_counter() - t0)
    alone = sampler.peak - level
    level = sampler.reset()
    threads = [threading.Thread(target=lambda part=args[i::4]: [call(graph, tool, a) for a in part]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    x4 = sampler.peak - level
    return {"first_mib": round(first / MIB, 2), "alone_mib": round(alone / MIB, 2), "x4_mib": round(x4 / MIB, 2),
            "p50_ms": round(pct(lat, 0.5) * 1000, 2), "p95_ms": round(pct(lat, 0.95) * 1000, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a keymem data dir (copied; never changed)")
    ap.add_argument("--pool-mb", type=int, default=None, help="buffer pool (default: keymem's default)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="km-pool-"))
    try:
        data = work / "data"
        shutil.copytree(args.store, data)
        extra = {"buffer_pool_mb": args.pool_mb} if args.pool_mb else {}
        graph = open_graph(data, minilm_dir(work / "model"), embedder(minilm_dir(work / "model"), threads=1), **extra)
        store = graph.store
        sampler = Sampler(store)
        opened = sampler.now()
        report: dict[str, Any] = {"counts": graph.counts(), "pool_mib": store.buffer_pool_mb,
                                  "after_open_mib": round(opened / MIB, 1), "rss_after_open_mb": round(rss_mb(), 1),
                                  "tools": {}}
        print(f"store {report['counts']}; pool {store.buffer_pool_mb} MiB, {report['after_open_mib']} MiB in use "
              f"after the open; RSS {report['rss_after_open_mb']} MB")
        for tool, calls in plans(graph, random.Random(7), args.calls).items():
            row = report["tools"][tool] = measure(graph, sampler, tool, calls)
            print(f"  {tool:15s} first {row['first_mib']:7.2f}  alone {row['alone_mib']:7.2f}  "
                  f"x4 {row['x4_mib']:7.2f} MiB   p50 {row['p50_ms']:7.2f}  p95 {row['p95_ms']:7.2f} ms")
        sampler.stop()
        report["pool_end_mib"] = round(store.pool_usage()[0] / MIB, 1)
        report["rss_end_mb"] = round(rss_mb(), 1)
        report["refused_statements"] = store.pool_failures
        print(f"pool in use at the end {report['pool_end_mib']} MiB; RSS {report['rss_end_mb']} MB; "
              f"statements refused for lack of pool: {store.pool_failures}")
        graph.close()
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
