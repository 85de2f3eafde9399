"""Key-vector search: exact numpy scan vs LadybugDB's HNSW index, by number of keys.

    python bench/vector_paths.py --keys 10000,50000 [--dim 384] [--queries 200] [--json OUT]
    python bench/vector_paths.py --keys 74018,200000,500000 --exact-only

Prints, per size: HNSW build time, top-10 latency p50/p95 for both paths, and HNSW recall@10
against the exact answer. This is the measurement behind KEYMEM_VECTOR_INDEX_MIN_KEYS. The HNSW
index needs LadybugDB's VECTOR extension (``keymem extensions download``); where it is not
installed, or with ``--exact-only``, only the exact scan is measured, on the cache keymem
searches (``store/vectors._Block``; no store), with the matrix's memory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from keymem.store import migrations
from keymem.store.db import Store
from keymem.store.vectors import KeyVectors


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * (len(s) - 1)))] * 1000


def exact_only(n: int, dim: int, queries: int) -> dict[str, float]:
    """The exact path alone: the per-namespace matrix keymem holds, searched as recall searches it."""
    from keymem.store.vectors import _Block

    vecs, qs = _data(n, dim, queries)
    block = _Block(dim, growth=2.0)
    for i in range(n):
        block.add(f"k_{i:012x}", vecs[i])
    block.trim()
    times = []
    for q in qs:
        t = time.perf_counter()
        block.search(q, 10, -1.0)
        times.append(time.perf_counter() - t)
    return {"keys": n, "exact_ms_p50": round(pct(times, 0.5), 3), "exact_ms_p95": round(pct(times, 0.95), 3),
            "matrix_mb": round(block.mat.nbytes / 2**20, 1)}


def _data(n: int, dim: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    # clustered vectors (like real keys), not uniform noise
    centers = rng.normal(size=(max(8, n // 200), dim)).astype(np.float32)
    vecs = centers[rng.integers(0, len(centers), n)] + 0.6 * rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    qs = vecs[rng.integers(0, n, queries)] + 0.3 * rng.normal(size=(queries, dim)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    return vecs, qs


def run(n: int, dim: int, queries: int) -> dict[str, float]:
    vecs, qs = _data(n, dim, queries)
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "k.lbug", buffer_pool_mb=1024)
        migrations.migrate(store)
        exact = KeyVectors(store, dim, index_min_keys=n + 1)
        exact.create_table()
        for start in range(0, n, 2000):
            with store.write() as tx:
                for i in range(start, min(n, start + 2000)):
                    exact.insert(tx, f"k_{i:012x}", "default", vecs[i])
        exact.load()
        t_exact, truth = [], []
        for q in qs:
            t = time.perf_counter()
            truth.append({k for k, _ in exact.search(q, "default", 10)})
            t_exact.append(time.perf_counter() - t)
        hnsw = KeyVectors(store, dim, index_min_keys=1)
        t0 = time.perf_counter()
        hnsw.load()  # builds the index
        build = time.perf_counter() - t0
        t_hnsw, hits = [], 0
        for q, want in zip(qs, truth, strict=True):
            t = time.perf_counter()
            got = {k for k, _ in hnsw.search(q, "default", 10)}
            t_hnsw.append(time.perf_counter() - t)
            hits += len(got & want)
        store.close()
    return {
        "keys": n, "hnsw_build_s": round(build, 2),
        "exact_ms_p50": round(pct(t_exact, 0.5), 3), "exact_ms_p95": round(pct(t_exact, 0.95), 3),
        "hnsw_ms_p50": round(pct(t_hnsw, 0.5), 3), "hnsw_ms_p95": round(pct(t_hnsw, 0.95), 3),
        "hnsw_recall@10": round(hits / (10 * queries), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default="10000,50000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--exact-only", action="store_true", help="only the exact scan (no store, no extension)")
    a = ap.parse_args()
    if not a.exact_only:
        from keymem.cli.engine_cmds import vector_status

        loads, why = vector_status()
        if not loads:
            print(f"VECTOR extension not available ({why}): measuring the exact scan only")
            a.exact_only = True
    measure = exact_only if a.exact_only else run
    rows = [measure(int(n), a.dim, a.queries) for n in a.keys.split(",")]
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
