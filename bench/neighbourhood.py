"""The association walk's neighbourhood: Cypher in the store's engine vs the in-memory mirror, on an existing store.

Usage::

    python bench/scale.py --memories 100000 --dir /tmp/km100k --no-baseline   # makes a store
    python bench/neighbourhood.py --store /tmp/km100k/data [--queries 200] [--json OUT]
    python bench/neighbourhood.py --store DIR/data --store-url falkordb://HOST:PORT/GRAPH   # on FalkorDB

With ``--store-url`` the store is that server graph (``DIR/data`` is the daemon's data dir beside it;
``bench/engines.py --walk`` runs this on both engines).

Queries are made the way ``bench/scale.py`` makes them (1-3 of a stored memory's concept keys,
sometimes with its name key), from memories drawn with a fixed seed. Each runs through
``recall_direct(hops=2, reinforce=False)`` once with a recorder around the mirror's
``Neighbourhood``, which keeps the frontiers the walk really asks about (the best
``SEED_MEMORIES`` direct hits at hop 1, the best ``BEAM`` reached memories at hop 2). Then:

1. *Neighbourhood*: every query's two hops are replayed through ``MirrorNeighbourhood`` and
   ``CypherNeighbourhood`` (alternating, ``--rounds`` times), timed per query (both hops), and
   the rows compared: they must be identical. The Cypher side's IdBooks are loaded first, as in
   a long-lived graph (``--cold``: a new CypherNeighbourhood per query, which learns every id
   and offset it meets, one primary-key lookup per seed).
2. *recall_direct*: the whole call with each implementation as ``MemoryGraph.neighbourhood``
   (alternating per query), p50/p95, and the returned ids compared.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

SEED = 17


class Recorder:
    """A Neighbourhood that keeps every question asked of the one it wraps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, list[str], float, int]] = []

    def key_members(self, key_ids: list[str], now: float, fanout: int) -> Any:
        self.calls.append(("key_members", list(key_ids), now, fanout))
        return self.inner.key_members(key_ids, now, fanout)

    def step(self, frontier: list[str], now: float, fanout: int) -> Any:
        self.calls.append(("step", list(frontier), now, fanout))
        return self.inner.step(frontier, now, fanout)


def make_queries(graph: Any, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """Queries like bench/scale.py's: 1-3 concept keys of a stored memory, + its name 40% of the time."""
    now = graph.now()
    active = sorted(mid for mid in graph.mirror.memory_ids() if graph.mirror.memory(mid, now) is not None)
    out: list[tuple[str, str]] = []
    while len(out) < n:
        mid = rng.choice(active)
        m = graph.mirror.memory(mid, now)
        if m is None:
            continue
        keys = graph.mirror.keys(k for k, _ in graph.mirror.memory_keys(mid))
        concepts = sorted(k["text"] for k in keys if k["key_type"] == "concept")
        names = sorted(k["text"] for k in keys if k["key_type"] == "name")
        if not concepts:
            continue
        picked = rng.sample(concepts, k=min(len(concepts), rng.randint(1, 3)))
        if names and rng.random() < 0.4:
            picked.append(names[0])
        out.append((" ".join(picked), m["namespace"]))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True, help="a keymem data dir (e.g. made by bench/scale.py --dir)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3, help="replays of every query's hops per implementation")
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--buffer-pool-mb", type=int, default=None)
    p.add_argument("--cold", action="store_true", help="a new CypherNeighbourhood (empty IdBooks) per query")
    p.add_argument("--store-url", default=None, help="KEYMEM_STORE_URL of the store (default: the file in --store)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    from keymem.index.neighbourhood import CypherNeighbourhood, MirrorNeighbourhood

    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=1)
    extra: dict[str, Any] = {"buffer_pool_mb": args.buffer_pool_mb} if args.buffer_pool_mb else {}
    if args.store_url:
        extra["store_url"] = args.store_url
    t0 = time.perf_counter()
    graph = _common.open_graph(Path(args.store), model_dir, emb, **extra)
    counts = graph.counts()
    print(f"opened {args.store} in {time.perf_counter() - t0:.1f} s: {counts}", file=sys.stderr)
    mirror, cypher = MirrorNeighbourhood(graph.mirror), CypherNeighbourhood(graph.store)
    t0 = time.perf_counter()
    cypher.load()
    load_s = time.perf_counter() - t0
    queries = make_queries(graph, args.queries, random.Random(SEED))

    # The frontiers recall_direct asks about, recorded per query.
    recorded: list[list[tuple[str, list[str], float, int]]] = []
    for q, ns in queries:
        rec = Recorder(mirror)
        graph.neighbourhood = rec
        graph.recall_direct(query=q, namespace=ns, hops=args.hops, reinforce=False)
        recorded.append(rec.calls)
    steps = [c for calls in recorded for c in calls if c[0] == "step"]
    sizes = sorted(len(c[1]) for c in steps)

    def replay(nb: Any, calls: list[tuple[str, list[str], float, int]]) -> list[Any]:
        return [getattr(nb, kind)(ids, now, fanout) for kind, ids, now, fanout in calls]

    for calls in recorded[:5]:  # warm-up: statement preparation, buffer pool
        replay(cypher, calls)
        replay(mirror, calls)
    times: dict[str, list[float]] = {"mirror": [], "cypher": []}
    rows: list[int] = []
    mismatches = 0
    for _ in range(args.rounds):
        for calls in recorded:
            if not calls:
                continue
            t = time.perf_counter()
            got_c = replay(CypherNeighbourhood(graph.store) if args.cold else cypher, calls)
            times["cypher"].append(time.perf_counter() - t)
            t = time.perf_counter()
            got_m = replay(mirror, calls)
            times["mirror"].append(time.perf_counter() - t)
            if got_c != got_m:
                mismatches += 1
            rows.append(sum(len(v) for hop in got_m if hasattr(hop, "members")
                            for part in (hop.keys_of, hop.members, hop.related) for v in part.values()))

    # The whole recall_direct with each implementation.
    direct: dict[str, list[float]] = {"mirror": [], "cypher": []}
    differ = 0
    for i, (q, ns) in enumerate(queries):
        order = [("mirror", mirror), ("cypher", cypher)]
        if i % 2:
            order.reverse()
        got: dict[str, list[str]] = {}
        for name, nb in order:
            graph.neighbourhood = nb
            t = time.perf_counter()
            res = graph.recall_direct(query=q, namespace=ns, hops=args.hops, reinforce=False)
            direct[name].append(time.perf_counter() - t)
            got[name] = [h.memory_id for h in res.results]
        differ += got["mirror"] != got["cypher"]
    graph.close()

    out = {
        "store": str(args.store), "engine": graph.store.capabilities.engine, "counts": counts, "queries": len(queries),
        "hops": args.hops, "steps": len(steps), "cold": args.cold, "id_book_load_s": round(load_s, 2),
        "frontier": {"median": sizes[len(sizes) // 2] if sizes else 0, "max": sizes[-1] if sizes else 0},
        "rows_per_query": {"median": sorted(rows)[len(rows) // 2] if rows else 0},
        "neighbourhood_ms": {k: _common.summary_ms(v) for k, v in times.items()},
        "neighbourhood_mismatches": mismatches,
        "recall_direct_ms": {k: _common.summary_ms(v) for k, v in direct.items()},
        "recall_direct_differ": differ,
    }
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
