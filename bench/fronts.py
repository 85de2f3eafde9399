"""Two fronts on one FalkorDB store: how fast one sees the other's writes, and what a catch-up costs.

Usage::

    python bench/fronts.py [--writes 40] [--changes 10,100,1000] [--json OUT]

Starts a FalkorDB server itself (as ``bench/engines.py`` does) and opens two graphs on one FalkorDB
graph in this process, each with its own data dir and in-memory indexes (what two daemons hold), with
MiniLM. Printed:

* visibility lag: front A remembers, and the time from its answer until front B's graph mirror holds
  the memory without B being asked anything (B's background catch-up, every 0.5 s), median and p95
  over ``--writes`` writes spaced at random. A call on B catches up before it reads, so a call sees
  the write at once; this is the lag for a front with no calls;
* the head check a call pays when nothing changed (one small query), median and p95;
* catch-up time for N changes: A writes N memories (one remember each) while B's poll is paused,
  then one ``catch_up`` on B applies them (mirror, BM25, key vectors, aliases).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import embedder, minilm_dir, open_graph, pct  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writes", type=int, default=40, help="writes whose visibility lag is measured")
    p.add_argument("--changes", default="10,100,1000", help="comma-separated change counts for the catch-up time")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from tests.conftest_engines import start_falkordb, stop_falkordb

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keymem-fronts-") as tmp:
        server = start_falkordb(Path(tmp) / "falkordb")
        try:
            model = minilm_dir(Path(tmp) / "minilm")
            emb = embedder(model, threads=1)
            url = server.url("fronts")
            a = open_graph(Path(tmp) / "a", model, emb, store_url=url)
            b = open_graph(Path(tmp) / "b", model, emb, store_url=url)
            try:
                out.update(measure(a, b, args.writes, [int(x) for x in args.changes.split(",")]))
            finally:
                a.close()
                b.close()
        finally:
            stop_falkordb(server)
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


def measure(a: Any, b: Any, writes: int, changes: list[int]) -> dict[str, Any]:
    rnd = random.Random(7)
    lags: list[float] = []
    for i in range(writes):
        time.sleep(rnd.uniform(0.0, 0.5))  # not in step with B's poll
        mid = a.remember(content=f"lag probe {i}: locker {i} code {i * 37}", keys=[f"locker {i}", "lockers"]).memory_id
        acked = time.perf_counter()
        while b.mirror.memory(mid) is None:
            time.sleep(0.001)
        lags.append(time.perf_counter() - acked)
    heads: list[float] = []
    for _ in range(200):
        t0 = time.perf_counter()
        b.catch_up()
        heads.append(time.perf_counter() - t0)
    b.catchup.stop()  # B's background poll paused: the catch-ups below do all the work
    catchups: dict[str, float] = {}
    n_done = 0
    for n in changes:
        for j in range(n):
            a.remember(content=f"batch {n} fact {j}: bin {j} holds {j * 3} screws", keys=[f"bin {j % 50}", "screws"])
        t0 = time.perf_counter()
        applied = b.catch_up()
        catchups[str(n)] = round((time.perf_counter() - t0) * 1000, 1)
        n_done += n
        assert applied == n, (applied, n)
        assert len(b.lexical) == len(a.lexical)
    return {
        "visibility_lag_ms": {"median": round(pct(lags, 0.5) * 1000, 1), "p95": round(pct(lags, 0.95) * 1000, 1),
                              "max": round(max(lags) * 1000, 1), "writes": writes},
        "head_check_ms": {"median": round(pct(heads, 0.5) * 1000, 3), "p95": round(pct(heads, 0.95) * 1000, 3)},
        "catch_up_ms_by_changes": catchups,
    }


if __name__ == "__main__":
    sys.exit(main())
