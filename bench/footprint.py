"""Where the daemon's memory goes: RSS per component, loaded one at a time in a fresh process.

Usage::

    python bench/footprint.py --memories 10000 --dir D [--queries 200] [--json OUT]
    python bench/footprint.py --memories 100000 --dir D --set buffer_pool_mb=128 --ort arena=0

``D`` holds (or receives) a store built by ``bench/scale.py --build-only --dir D`` (the same
deterministic corpus; built first if ``D`` has fewer than N memories, resumable). Then two fresh
child processes open it the way the daemon does, one component at a time, and record after each
step (after ``gc.collect()`` and ``malloc_trim``, so freed transients do not count):

* RSS (``/proc/self/statm``) and its delta, and the peak (VmHWM) so far;
* Kuzu's buffer-pool use (``CALL BM_INFO()``: pages the pool holds, cached ones included);
* in the second child, ``tracemalloc``'s traced heap (Python objects and numpy arrays; native
  allocations of Kuzu, onnxruntime and Kiwi are not traced), which separates the Python-side
  part of a step from the native part of its RSS delta.

Steps: python + imports; the MiniLM tokenizer; the onnxruntime session + model (what
``OnnxEmbedder`` holds besides the tokenizer); the first query embeddings and 500 short keys
embedded in batches (what a write batch embeds: the arena's growth); Kiwi (first Hangul text);
Kuzu open + schema check; key-vector cache load; BM25 index load; graph-mirror load; the
open's sweep; then Q queries (``recall`` and ``recall_direct(hops=2, reinforce=False)``, drawn
like bench/scale.py's). At the end the retained structures are sized directly
(``deep_size``: containers walked, numpy ``nbytes``), per attribute of the key-vector cache,
the BM25 index and the mirror.

Options for A/B runs: ``--set FIELD=VALUE`` overrides a keymem setting (e.g.
``buffer_pool_mb=128``, ``key_vector_dtype=float16``); ``--ort arena=0|1,pattern=0|1`` sets the
onnxruntime session options of the embedder (defaults: keymem's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


# -- measuring helpers (stdlib only until the imports step) ---------------------------------------
def _statm_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _trim() -> None:
    import contextlib
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes held by ``obj`` and everything it references (containers, slots, __dict__, numpy buffers).

    Modules, classes, functions and locks are not followed; an object reached twice counts once
    (per ``seen``).
    """
    import types
    from array import array

    import numpy as np

    seen = set() if seen is None else seen
    total = 0
    stack = [obj]
    skip = (types.ModuleType, type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, skip):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):  # getsizeof includes the buffer of an array that owns it
            total += sys.getsizeof(o)
            if o.base is not None:
                stack.append(o.base)
            continue
        total += sys.getsizeof(o)
        if isinstance(o, (str, bytes, int, float, bool, array, type(None))):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        else:
            cls_slots = [s for c in type(o).__mro__ for s in getattr(c, "__slots__", ())]
            for name in cls_slots:
                if hasattr(o, name):
                    stack.append(getattr(o, name))
            d = getattr(o, "__dict__", None)
            if d is not None:
                stack.append(d)
    return total


def sizes_of(obj: Any, attrs: list[str] | None = None, exclude: tuple[str, ...] = ()) -> dict[str, float]:
    """MiB per attribute of ``obj`` (one shared ``seen`` set, so shared objects count once, first)."""
    names = attrs or [a for a in vars(obj) if a not in exclude]
    seen: set[int] = set()
    out = {}
    for a in names:
        v = getattr(obj, a)
        if callable(v) and not isinstance(v, (dict, list)):
            continue
        if type(v).__name__ in ("RLock", "Lock", "Condition", "Store", "Settings", "Thread"):
            continue
        out[a] = round(deep_size(v, seen) / 2**20, 2)
    return out


# -- the child: open the store one component at a time --------------------------------------------
def child(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    state: dict[str, Any] = {"prev": _statm_mb(), "pool": 0.0}
    trace = args.trace
    if trace:
        import tracemalloc

        tracemalloc.start()

    def pool_mb() -> float:
        store = state.get("store")
        if store is None:
            return 0.0
        used, _ = store.pool_usage()
        return used / 2**20

    def mark(step: str, note: str = "") -> None:
        _trim()
        rss = _statm_mb()
        pool = pool_mb()
        row = {"step": step, "rss_mb": round(rss, 1), "delta_mb": round(rss - state["prev"], 1),
               "peak_mb": round(_status_kb("VmHWM") / 1024, 1), "pool_mb": round(pool, 1),
               "pool_delta_mb": round(pool - state["pool"], 1)}
        if trace:
            import tracemalloc

            cur, _peak = tracemalloc.get_traced_memory()
            row["traced_mb"] = round(cur / 2**20, 1)
            row["traced_delta_mb"] = round((cur - state.get("traced", 0)) / 2**20, 1)
            state["traced"] = cur
        if note:
            row["note"] = note
        rows.append(row)
        state["prev"], state["pool"] = rss, pool
        print(f"  {step:<34} rss {rss:7.1f}  +{row['delta_mb']:6.1f}  pool {pool:6.1f}"
              + (f"  traced +{row['traced_delta_mb']:.1f}" if trace else ""), file=sys.stderr, flush=True)

    mark("python")
    import bm25s  # noqa: F401
    import kiwipiepy  # noqa: F401
    import ladybug  # noqa: F401
    import numpy  # noqa: F401
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    sys.path.insert(0, str(HERE))
    import _common
    import scale

    from keymem.memory.graph import MemoryGraph
    from keymem.models import _onnx
    from keymem.native import trim_heap
    from keymem.store import migrations
    from keymem.store.db import Store

    mark("imports (numpy, kuzu, onnxruntime, tokenizers, bm25s, kiwipiepy, keymem)")
    for item in filter(None, (args.ort or "").split(",")):
        name, _, value = item.partition("=")
        attr = {"arena": "CPU_MEM_ARENA", "pattern": "MEM_PATTERN"}[name.strip()]
        setattr(_onnx, attr, value.strip() not in ("0", "false", "off"))
    model_dir = _common.minilm_dir()
    tok = _onnx.open_tokenizer(model_dir / "tokenizer.json", 256)
    mark("MiniLM tokenizer (tokenizers)")
    emb = _common.embedder(model_dir, threads=1)
    del tok
    mark("onnxruntime session + MiniLM int8 model", "OnnxEmbedder minus the tokenizer above")
    corpus = scale.Corpus()
    for q in ("warm up the model", "Dennis Marlow said", "coffee beans"):
        emb.embed([q])
    mark("first query embeddings (3 calls)")
    keys = [k for _ in range(120) for k in corpus.item()["keys"]][:500]
    emb.embed(keys)
    mark("500 keys embedded (write-batch shapes)", "ORT arena/pattern growth for batches of 32")
    from keymem.text.tokenize import tokenize

    tokenize("한국어 형태소 분석기 불러오기")
    mark("Kiwi (kiwipiepy model)")

    overrides = dict(json.loads(args.set_json or "{}"))
    settings = _common.settings(Path(args.store) / "data", model_dir, **overrides)
    store = Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb)
    state["store"] = store
    migrations.migrate(store)
    graph = MemoryGraph(settings, store, emb, reranker=None)
    graph._check_fingerprint(False)
    mark(f"Kuzu open + schema check (pool {store.buffer_pool_mb} MiB)")
    t = time.perf_counter()
    graph.vectors.load()
    load_s = {"vectors": time.perf_counter() - t}
    mark("key-vector cache")
    t = time.perf_counter()
    graph._load_lexical()
    load_s["bm25"] = time.perf_counter() - t
    mark("BM25 index (stored terms)")
    t = time.perf_counter()
    graph.mirror.load()
    load_s["mirror"] = time.perf_counter() - t
    mark("graph mirror")
    trim_heap()
    graph.sweep()
    mark("sweep (end of open)")
    open_peak = _status_kb("VmHWM") / 1024

    import random

    qrng = random.Random(scale.SEED + 1)
    n = graph.mirror.memory_total()
    # Queries drawn like bench/scale.py's from items of the corpus stream (only the sampled ones kept).
    sample = sorted({qrng.randrange(n) for _ in range(args.queries)})
    wanted, items = set(sample), {}
    gen = scale.Corpus()
    for i in range(max(sample) + 1 if sample else 0):
        it = gen.item()
        if i in wanted:
            items[i] = it
    queries = [(gen.query(items[i]), items[i]["namespace"]) for i in sample]
    t_recall, t_direct = [], []
    before = None
    if trace:
        import tracemalloc

        before = tracemalloc.take_snapshot()
    for q, ns in queries:
        t = time.perf_counter()
        graph.recall(query=q, namespace=ns)
        t_recall.append(time.perf_counter() - t)
        t = time.perf_counter()
        graph.recall_direct(query=q, namespace=ns, hops=2, reinforce=False)
        t_direct.append(time.perf_counter() - t)
    mark(f"after {len(queries)} queries (recall + recall_direct)")
    query_growth = []
    if before is not None:
        import tracemalloc

        diff = tracemalloc.take_snapshot().compare_to(before, "lineno")
        query_growth = [f"{d.size_diff / 2**20:+.2f} MB {d.traceback[0].filename.split('site-packages/')[-1]}:"
                        f"{d.traceback[0].lineno}" for d in diff[:8]]

    vec = graph.vectors
    blocks = list(vec._blocks.values())
    vec_detail = {
        "keys": sum(len(b.ids) for b in blocks),
        "matrix_used_mb": round(sum(len(b.ids) * b.mat.shape[1] * b.mat.itemsize for b in blocks) / 2**20, 2),
        "matrix_allocated_mb": round(sum(b.mat.nbytes for b in blocks) / 2**20, 2),
        "dtype": str(blocks[0].mat.dtype) if blocks else None,
        "ids_and_positions_mb": round(sum(deep_size(b.ids) + deep_size(b.pos) for b in blocks) / 2**20, 2),
    }
    lex = graph.lexical
    shards = list(lex._shards.values())
    mains = [s.main for s in shards if s.main is not None]
    lex_detail = {
        "docs": len(lex),
        "vocab": len(lex._vocab),
        "vocab_dict_mb": round(deep_size(lex._vocab) / 2**20, 2),
        "main_scores_mb (data, indices, indptr, idf)": round(sum(
            m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + m.idf_built.nbytes for m in mains) / 2**20, 2),
        "main_terms_mb (flat term ids + row starts)": round(sum(m.terms.nbytes + m.starts.nbytes for m in mains) / 2**20, 2),
        "main_ids_mb (sorted UTF-8 ids)": round(sum(m.keys.nbytes for m in mains) / 2**20, 2),
        "main_col_of_mb": round(sum(deep_size(m.col_of) for m in mains) / 2**20, 2),
        "alive_mb": round(sum(s.alive.nbytes for s in shards) / 2**20, 2),
        "df_mb": round(sum(deep_size(s.df) for s in shards) / 2**20, 2),
        "delta_mb": round(sum(deep_size(s.delta) + deep_size(s.postings) for s in shards) / 2**20, 2),
        "total_mb": round(deep_size(lex) / 2**20, 2),
    }
    mirror_detail = sizes_of(graph.mirror, exclude=("store", "_lock"))
    mirror_detail["total_mb"] = round(sum(mirror_detail.values()), 2)
    graph.close()
    return {
        "steps": rows,
        "open_peak_mb": round(open_peak, 1),
        "peak_mb": round(_status_kb("VmHWM") / 1024, 1),
        "load_s": {k: round(v, 2) for k, v in load_s.items()},
        "recall_ms": _common.summary_ms(t_recall),
        "recall_direct_ms": _common.summary_ms(t_direct),
        "memories": n,
        "key_vectors": vec_detail,
        "bm25": lex_detail,
        "mirror_mb": mirror_detail,
        "buffer_pool_mb": settings.buffer_pool_mb,
        "settings": overrides,
        "ort": args.ort or "",
        "tracemalloc": trace,
        "query_growth_top": query_growth,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


# -- the parent: build if needed, run the children, print the table --------------------------------
def ensure_store(root: Path, n: int) -> None:
    prog = root / "progress.json"
    written = json.loads(prog.read_text())["written"] if prog.is_file() else 0
    if written >= n:
        return
    print(f"building {n} memories into {root} (bench/scale.py --build-only; resumable)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, str(HERE / "scale.py"), "--memories", str(n), "--dir", str(root),
                    "--build-only", "--huge"], check=True)


def run_child(root: Path, args: argparse.Namespace, trace: bool) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(root), "--queries", str(args.queries),
           "--set-json", json.dumps(parse_sets(args.set))]
    if args.ort:
        cmd += ["--ort", args.ort]
    if trace:
        cmd.append("--trace")
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def parse_sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        name, _, value = item.partition("=")
        try:
            out[name] = int(value)
        except ValueError:
            out[name] = value
    return out


def table(rss: dict[str, Any], traced: dict[str, Any] | None) -> str:
    lines = ["| step | RSS after | RSS delta | Kuzu pool delta | traced heap delta |", "|---|---|---|---|---|"]
    tr = {r["step"]: r for r in (traced or {}).get("steps", [])}
    for r in rss["steps"]:
        t = tr.get(r["step"])
        lines.append(f"| {r['step']} | {r['rss_mb']:.0f} MB | {r['delta_mb']:+.0f} MB | {r['pool_delta_mb']:+.0f} MB | "
                     + (f"{t['traced_delta_mb']:+.1f} MB" if t else "-") + " |")
    lines.append(f"| peak during the open / whole run | {rss['open_peak_mb']:.0f} / {rss['peak_mb']:.0f} MB | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int)
    p.add_argument("--dir", help="store directory (built there by bench/scale.py if it holds fewer memories)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--json", default=None)
    p.add_argument("--set", action="append", default=[], help="FIELD=VALUE keymem setting override (repeatable)")
    p.add_argument("--ort", default=None, help="onnxruntime options of the embedder: arena=0|1,pattern=0|1")
    p.add_argument("--no-trace", action="store_true", help="skip the tracemalloc child")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--set-json", default=None, help=argparse.SUPPRESS)
    p.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.store = args.child
        res = child(args)
        print(json.dumps(res))
        return
    if not args.memories or not args.dir:
        p.error("--memories and --dir are required")
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    ensure_store(root, args.memories)
    print("RSS child:", file=sys.stderr, flush=True)
    rss = run_child(root, args, trace=False)
    traced = None
    if not args.no_trace:
        print("tracemalloc child:", file=sys.stderr, flush=True)
        traced = run_child(root, args, trace=True)
    out = {"memories": args.memories, "rss": rss, "traced": traced}
    print(table(rss, traced))
    print(json.dumps({k: rss[k] for k in ("key_vectors", "bm25", "mirror_mb", "load_s", "recall_ms",
                                          "recall_direct_ms", "buffer_pool_mb", "settings", "ort")}, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
