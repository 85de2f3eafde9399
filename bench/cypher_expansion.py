"""One expansion hop in Cypher vs. over the in-memory mirror, on an existing store.

Usage::

    python bench/scale.py --memories 100000 --dir /tmp/s100k --no-baseline   # makes a store
    python bench/cypher_expansion.py --store /tmp/s100k/data [--frontier 12] [--runs 20]

A hop of ``recall_direct`` goes from the frontier (the best ``BEAM`` = 12 memories) through
their non-hub keys to the other memories of those keys. This times that hop as Kuzu 0.11.3
statements - the frontier as an UNWIND of primary-key matches, as ``WHERE id IN``, and one
statement per frontier memory - each with the hub keys passed in as an exclusion list, and
the same hop over keymem's ``GraphMirror`` (what ``associative._expand`` does). Prints median
milliseconds per hop and the rows each returns.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

HUB_FANOUT = 50
VIA_UNWIND = """UNWIND $frontier AS sid
MATCH (s:Memory {id: sid})<-[l1:LINKS]-(k:Key)
WHERE NOT k.id IN $hubs
MATCH (k)-[l2:LINKS]->(m:Memory)
WHERE m.id <> sid AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN sid AS src, k.id AS key_id, l1.weight AS w1, m.id AS dst, l2.weight AS w2"""
VIA_IN = """MATCH (s:Memory)<-[l1:LINKS]-(k:Key)
WHERE s.id IN $frontier AND NOT k.id IN $hubs
MATCH (k)-[l2:LINKS]->(m:Memory)
WHERE m.id <> s.id AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN s.id AS src, k.id AS key_id, l1.weight AS w1, m.id AS dst, l2.weight AS w2"""
ONE_SOURCE = """MATCH (s:Memory)<-[l1:LINKS]-(k:Key)-[l2:LINKS]->(m:Memory)
WHERE s.id = $sid AND NOT k.id IN $hubs AND m.id <> s.id AND m.active
  AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS key_id, l1.weight AS w1, m.id AS dst, l2.weight AS w2"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True, help="a keymem data dir")
    p.add_argument("--frontier", type=int, default=12)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args(argv)
    from keymem.index.mirror import GraphMirror
    from keymem.store.db import Store

    data = Path(args.store)
    settings = _common.settings(data, _common.minilm_dir())
    store = Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb)
    mirror = GraphMirror(store, settings)
    mirror.load()
    conn = store.connection().conn
    ids = [r[0] for r in conn.execute("MATCH (m:Memory) WHERE m.active RETURN m.id").get_all()]
    hubs = [r[0] for r in conn.execute(
        "MATCH (k:Key)-[l:LINKS]->() WITH k, count(l) AS n WHERE n > $n RETURN k.id", {"n": HUB_FANOUT}).get_all()]
    rng = random.Random(1)
    frontiers = [rng.sample(ids, args.frontier) for _ in range(args.runs)]
    now = time.time()

    def cypher(text: str) -> Any:
        def run(fr: list[str]) -> int:
            return len(conn.execute(text, {"frontier": fr, "hubs": hubs, "now": now}).get_all())
        return run

    def per_source(fr: list[str]) -> int:
        return sum(len(conn.execute(ONE_SOURCE, {"sid": s, "hubs": hubs, "now": now}).get_all()) for s in fr)

    def over_mirror(fr: list[str]) -> int:
        rows = 0
        for src in fr:
            for key_id, _ in mirror.memory_keys(src):
                if mirror.memory_count(key_id, now) <= HUB_FANOUT:
                    dst, _, _ = mirror.key_links(key_id, now)
                    rows += sum(1 for d in dst if d != src)
        return rows

    print(f"{len(ids)} active memories, {len(hubs)} hub keys (> {HUB_FANOUT} links), frontier {args.frontier}")
    for name, fn in (("mirror", over_mirror), ("cypher UNWIND", cypher(VIA_UNWIND)), ("cypher IN", cypher(VIA_IN)),
                     ("cypher per source", per_source)):
        times, rows = [], 0
        for fr in frontiers:
            t = time.perf_counter()
            rows = fn(fr)
            times.append(time.perf_counter() - t)
        print(f"  {name:18s} {statistics.median(times) * 1000:8.2f} ms per hop (median of {args.runs}), "
              f"last hop {rows} rows")
    store.close()


if __name__ == "__main__":
    main()
