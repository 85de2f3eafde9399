"""Scale benchmark: write throughput, tool latencies, store size and RSS at N memories.

Usage::

    python bench/scale.py --memories 10000 [--queries 200] [--json OUT] [--huge]
    python bench/scale.py --memories 1000000 --huge --dir D [--build-only] [--max-minutes M]
    python bench/scale.py --memories 10000 --store-url falkordb://127.0.0.1:PORT/bench   # on FalkorDB

``--store-url`` puts the store on a server (an empty graph; ``bench/engines.py`` starts one and runs
this script on both engines).

With ``--dir D`` the store is kept in ``D/data`` and the build is resumable: ``D/progress.json``
records after every batch how many corpus items are written and the cumulative build seconds; run
the same command again (after a stop, a signal, ``--max-minutes`` or a crash) and it opens the
store, regenerates the corpus stream skipping the written items (the corpus is one seeded stream;
skipping 1M items costs seconds) and continues. SIGTERM/SIGINT finish the batch in flight and
record it. Once all N are written the measurements below run (``--build-only`` stops before them).

Corpus (synthetic, deterministic, seed 7): memories of 8-20 words built from a Zipf-distributed
vocabulary, so a few keys are hubs linked to thousands of memories and most keys are rare.

* English words: the whole-word entries of the MiniLM WordPiece vocabulary (real English words,
  roughly frequency-ordered); Korean words: proper nouns (NNP) from Kiwi's bundled dictionary,
  most frequent first. One memory in five is Korean.
* Every memory has one person name (``name`` key, Zipf over 2,000 English + Korean names), 2-4
  Zipf-drawn concept keys, and sometimes a place (``proper_noun``).
* Five namespaces of Zipf-decreasing size (``default`` ~ 44%).

Measured, in this order, in one process (model loaded first):

1. ``remember_batch`` in batches of 500 until N memories: sustained memories/s (key embedding,
   merging, Kuzu writes and the BM25 index included);
2. 50 single ``remember`` calls (p50);
3. Q queries (made from memories' words, 1-4 words, some with a name): the MCP ``recall`` tool
   and ``recall_direct(hops=2, reinforce=False)``, p50/p95/p99; then ``read_key`` on the top key
   and ``read_memory`` on the top memory (p50); then the same queries through ``recall_direct``
   with Hebbian updates on (the default: one write transaction per call);
4. store size on disk, and the time to open it again (``reopen_s``, a daemon start; ``open_s`` is
   this session's first open, the whole store's on a resumed build); RSS: ``rss_curve`` = RSS and
   peak after the models (MiniLM, Kiwi) load, after the store opens, after each 10% of the writes
   (of this session) and after the query phase, printed and in the JSON; ``rss_mb`` is the peak
   minus RSS after the open (the store, caches and indexes, not the model weights). Only the
   corpus items queries are drawn from are kept in memory, so the curve is the engine's.
5. Linear-scan baseline over the same data and queries (every active memory read back from the
   store): every key vector scored with numpy and every memory scored with BM25 (bm25s ``get_scores`` over all documents): the top key's
   memories ranked by BM25 (tool path) and BM25 + key cosine fused by RRF (direct path).

Reranker off; embedding model all-MiniLM-L6-v2 int8, one ONNX thread (the default on 2 cores).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

SEED = 7
BATCH = 500
NAMESPACES = ("default", "work", "family", "travel", "research")
EN_TEMPLATES = (
    "{name} said the {a} {b} was {c} near {d}",
    "{name} wants to {a} the {b} before {c} because of {d}",
    "Note from {name}: {a} and {b} are linked to {c}; check {d}",
    "{name} bought a {a} {b} for the {c} at {place}",
    "{name} prefers {a} over {b} when {c} {d}",
    "Remember that {name} met {place} people about {a} {b} and {c}",
)
KO_TEMPLATES = (
    "{name}는 {a}와 {b}에 대해 이야기했다. {c} 관련",
    "{name}이 {place}에서 {a} {b}을 준비했다",
    "{a} {b} 일정은 {name}와 {c}에 달려 있다",
    "{name}의 메모: {a}, {b}, {c}",
)


def english_words() -> list[str]:
    vocab = json.loads((_common.MINILM_FIXTURE / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    words = sorted((t for t in vocab if t.isascii() and t.isalpha() and t.islower() and len(t) >= 4),
                   key=lambda t: vocab[t])
    import bm25s.stopwords as sw

    stop = set(sw.STOPWORDS_EN_PLUS)
    return [w for w in words if w not in stop]


def korean_words() -> list[str]:
    import kiwipiepy_model

    path = Path(kiwipiepy_model.__file__).parent / "default.dict"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1] == "NNP" and 2 <= len(parts[0]) <= 5 and parts[0].isalpha():
            try:
                rows.append((float(parts[2]), parts[0]))
            except ValueError:
                continue
    rows.sort(key=lambda r: (-r[0], r[1]))
    return list(dict.fromkeys(w for _, w in rows))[:8000]


class Zipf:
    def __init__(self, items: list[Any], s: float, rng: random.Random) -> None:
        self.items = items
        w = 1.0 / np.arange(1, len(items) + 1) ** s
        self.cdf = np.cumsum(w / w.sum())
        self.rng = rng

    def __call__(self) -> Any:
        i = int(np.searchsorted(self.cdf, self.rng.random(), side="right"))
        return self.items[min(i, len(self.items) - 1)]


class Corpus:
    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        en = english_words()
        ko = korean_words()
        self.en = Zipf(en[:12000], 1.05, self.rng)
        self.ko = Zipf(ko[2000:8000], 1.05, self.rng)
        cap = [w.capitalize() for w in en[4000:9000]]
        names = [f"{cap[i]} {cap[-1 - i]}" for i in range(1200)] + ko[:800]
        self.rng.shuffle(names)
        self.names = Zipf(names, 1.0, self.rng)
        places = [w.capitalize() for w in en[9000:10000]] + ko[800:1200]
        self.places = Zipf(places, 1.1, self.rng)
        self.ns = Zipf(list(NAMESPACES), 1.0, self.rng)

    def item(self) -> dict[str, Any]:
        rng = self.rng
        korean = rng.random() < 0.2
        draw = self.ko if korean else self.en
        words = []
        while len(words) < 4:
            w = draw()
            if w not in words:
                words.append(w)
        name = self.names()
        place = self.places()
        tpl = rng.choice(KO_TEMPLATES if korean else EN_TEMPLATES)
        text = tpl.format(name=name, a=words[0], b=words[1], c=words[2], d=words[3], place=place)
        filler = [draw() for _ in range(rng.randint(0, 8))]
        if filler:
            text += (" - " if not korean else " / ") + " ".join(filler)
        keys = [name] + words[: rng.randint(2, 4)]
        types = ["name"] + ["concept"] * (len(keys) - 1)
        if "{place}" in tpl:
            keys.append(place)
            types.append("proper_noun")
        return {"content": text, "keys": keys, "key_types": types, "namespace": self.ns()}

    def query(self, item: dict[str, Any]) -> str:
        rng = self.rng
        concepts = [k for k, t in zip(item["keys"], item["key_types"], strict=True) if t == "concept"]
        picked = rng.sample(concepts, k=min(len(concepts), rng.randint(1, 3)))
        if rng.random() < 0.4:
            picked.append(item["keys"][0])
        return " ".join(picked)


# -- linear-scan baseline ------------------------------------------------------------------------
class LinearBaseline:
    def __init__(self, graph: Any, docs: list[tuple[str, str, str]]) -> None:
        import bm25s

        self.graph = graph
        self.bm25s = bm25s
        rows = graph.store.raw("MATCH (k:Key) RETURN k.id AS id, k.namespace AS ns, k.text AS text")
        vec_rows = {r["id"]: np.asarray(r["vec"], dtype=np.float32) for r in graph.store.stream("vectors/all")}
        self.key_ids = [k for k in vec_rows]
        ns_of = {r["id"]: r["ns"] for r in rows}
        self.key_ns = np.array([ns_of[k] for k in self.key_ids])
        self.key_matrix = np.stack([vec_rows[k] for k in self.key_ids]).astype(np.float32) if self.key_ids else \
            np.zeros((0, graph.embedder.dimension), np.float32)
        self.doc_ids = [d[0] for d in docs]
        self.doc_ns = np.array([d[2] for d in docs])
        self.bm25 = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.bm25.index(bm25s.tokenize([d[1] for d in docs], show_progress=False), show_progress=False)
        self.vocab = None

    def _bm25_all(self, query: str, ns: str) -> np.ndarray:
        tok = self.bm25s.tokenize([query], show_progress=False, return_ids=False)[0]
        scores = self.bm25.get_scores(tok) if tok else np.zeros(len(self.doc_ids), np.float32)
        return np.where(self.doc_ns == ns, scores, 0.0)

    def _keys_all(self, query: str, ns: str) -> np.ndarray:
        q = self.graph.embed([query])[0]
        scores = self.key_matrix @ q
        return np.where(self.key_ns == ns, scores, -1.0)

    def recall(self, query: str, ns: str) -> Any:
        ks = self._keys_all(query, ns)
        if not len(ks):
            return None
        top_key = self.key_ids[int(np.argmax(ks))]
        mids = {r["memory_id"] for r in self.graph.store.query("recall/key_memories", ids=[top_key], now=time.time())}
        bm = self._bm25_all(query, ns)
        best = max(mids, key=lambda m: bm[self.index[m]] if m in self.index else 0.0, default=None)
        return best

    def recall_direct(self, query: str, ns: str, k: int = 10) -> list[str]:
        ks = self._keys_all(query, ns)
        bm = self._bm25_all(query, ns)
        top_keys = [self.key_ids[i] for i in np.argsort(-ks)[:10] if ks[i] > 0.5]
        keyed = []
        if top_keys:
            keyed = [r["memory_id"] for r in self.graph.store.query("recall/key_memories", ids=top_keys, now=time.time())]
        lex = [self.doc_ids[i] for i in np.argsort(-bm)[:100] if bm[i] > 0]
        fused: dict[str, float] = defaultdict(float)
        for r, m in enumerate(lex, 1):
            fused[m] += 1 / (60 + r)
        for r, m in enumerate(keyed[:200], 1):
            fused[m] += 1 / (60 + r)
        return sorted(fused, key=lambda m: -fused[m])[:k]

    @property
    def index(self) -> dict[str, int]:
        if self.vocab is None:
            self.vocab = {m: i for i, m in enumerate(self.doc_ids)}
        return self.vocab


# -- run -------------------------------------------------------------------------------------------
PROGRESS = "progress.json"  # in --dir: what the build wrote so far (a build can resume across sessions)


def rss_point(curve: list[dict[str, Any]], phase: str, written: int) -> None:
    """Append (phase, memories written, current RSS, peak RSS) to the run's RSS curve."""
    curve.append({"phase": phase, "written": written, "rss_mb": round(_common.rss_mb(), 1),
                  "peak_mb": round(_common.peak_rss_mb(), 1)})


def load_progress(root: Path, n: int, queries: int) -> dict[str, Any]:
    """The build's progress file in ``root`` (a fresh one for an empty directory).

    A directory holding a store without the file was not built by this script: refused, since the
    corpus could not be resumed on it.
    """
    path = root / PROGRESS
    if path.is_file():
        prog: dict[str, Any] = json.loads(path.read_text())
        if prog.get("seed") != SEED or prog.get("batch") != BATCH:
            raise SystemExit(f"{path}: built with seed {prog.get('seed')} / batch {prog.get('batch')}, "
                             f"this script uses {SEED} / {BATCH}")
        if prog["written"] > n:
            raise SystemExit(f"{path}: the store already holds {prog['written']} bench memories, more than --memories {n}")
        prog["target"] = n
        return prog
    if (root / "data" / "keymem.lbug").exists():
        raise SystemExit(f"{root} holds a store without {PROGRESS}: not built by bench/scale.py; use an empty directory")
    return {"seed": SEED, "batch": BATCH, "target": n, "written": 0, "memories": 0, "build_seconds": 0.0,
            "sessions": [], "queries": queries}


def save_progress(root: Path, prog: dict[str, Any]) -> None:
    tmp = root / (PROGRESS + ".tmp")
    tmp.write_text(json.dumps(prog, indent=2))
    os.replace(tmp, root / PROGRESS)


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = args.memories
    if n > 100_000 and not args.huge:
        raise SystemExit("more than 100k memories needs --huge")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    curve: list[dict[str, Any]] = []
    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=args.threads)
    emb.embed(["warm up the model"])
    from keymem.text.tokenize import tokenize

    tokenize("한국어 형태소 분석기 불러오기")  # Kiwi's model (~100+ MB) is a model too: load it before the baseline
    gc.collect()
    rss_point(curve, "models_loaded", 0)
    corpus = Corpus()
    tmp = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="keymem-scale-"))
    tmp.mkdir(parents=True, exist_ok=True)
    data_dir = tmp / "data"
    prog = load_progress(tmp, n, args.queries)
    extra: dict[str, Any] = {"buffer_pool_mb": args.buffer_pool_mb} if args.buffer_pool_mb else {}
    if args.store_url:
        extra["store_url"] = args.store_url
    ts = time.perf_counter()
    graph = _common.open_graph(data_dir, model_dir, emb, **extra)
    open_s = time.perf_counter() - ts
    done = prog["written"]
    if args.store_url and not done and graph.mirror.memory_total():
        graph.close()
        raise SystemExit(f"{args.store_url} already holds memories: give an empty graph (a server store is not resumed)")
    if done:
        found = graph.mirror.memory_total()
        if found > prog["memories"]:  # a batch committed just before the progress file was written
            log(f"  the store holds {found} memories, the progress file {prog['memories']}: one more batch was written")
            done = prog["written"] = min(n, done + BATCH)
            prog["memories"] = found
        elif found < prog["memories"]:
            raise SystemExit(f"{tmp}: the store holds {found} memories, fewer than the {prog['memories']} "
                             f"{PROGRESS} records")
    prog["sessions"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "from": done,
                             "open_s": round(open_s, 2)})
    gc.collect()
    rss_base = _common.rss_mb()
    rss_point(curve, "store_open", done)
    log(f"N={n}: store {data_dir} ({done} written before, opened in {open_s:.1f} s), "
        f"RSS after model load + open {rss_base:.0f} MB")

    # Only the memories queries are made from are kept (all of them would be ~1 KB each in Python):
    # the sample is drawn up front from its own generator, the same indices as drawing it after the writes.
    qrng = random.Random(SEED + 1)
    sample = [qrng.randrange(n) for _ in range(args.queries)]
    wanted = set(sample)
    kept: dict[int, dict[str, Any]] = {}
    t_skip = time.perf_counter()
    for i in range(done):  # the corpus is one seeded stream: resuming regenerates (and skips) the written part
        it = corpus.item()
        if i in wanted:
            kept[i] = it
    if done:
        log(f"  regenerated the first {done} corpus items in {time.perf_counter() - t_skip:.1f} s")

    stop = {"signal": None}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["signal"] = signum  # finish the batch in flight, record it, then stop

    old_handlers = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    marks = [max(1, round(n * f / 10)) for f in range(1, 11)]
    next_mark = next((m for m in marks if m > done), None)
    t0 = time.perf_counter()
    last = t0
    session_written = 0
    build_before = prog["build_seconds"]
    while done < n:
        if stop["signal"] is not None or (deadline is not None and time.monotonic() > deadline):
            break
        batch = []
        for _ in range(min(BATCH, n - done)):
            i = done + len(batch)
            it = corpus.item()
            batch.append(it)
            if i in wanted:
                kept[i] = it
        graph.remember_batch(batch)
        done += len(batch)
        session_written += len(batch)
        now = time.perf_counter()
        prog.update(written=done, memories=graph.mirror.memory_total(),
                    build_seconds=round(build_before + now - t0, 1))
        prog["sessions"][-1].update(to=done, seconds=round(now - t0, 1))
        save_progress(tmp, prog)
        if next_mark is not None and done >= next_mark:  # one point per 10% (per batch at small N)
            rss_point(curve, "writes", done)
            next_mark = next((m for m in marks if m > done), None)
        if now - last > 30 or done == n:
            log(f"  {done}/{n} written, {session_written / (now - t0):.0f}/s this session, "
                f"RSS {_common.rss_mb():.0f} MB (peak {_common.peak_rss_mb():.0f} MB)")
            last = now
    for sig, handler in old_handlers.items():
        signal.signal(sig, handler)
    session_s = time.perf_counter() - t0
    if done < n or args.build_only:
        graph.close()
        why = "build-only" if done == n else ("signal" if stop["signal"] is not None else "--max-minutes")
        log(f"  stopped ({why}) at {done}/{n}; {prog['build_seconds']:.0f} s of building so far; "
            f"rerun the same command to continue")
        return {"memories": n, "written": done, "complete": done == n, "build_seconds": prog["build_seconds"],
                "session_seconds": round(session_s, 1), "open_s": round(open_s, 2),
                "store_mb": round(_common.dir_mb(data_dir), 1), "rss_curve": curve}
    resumed = len(prog["sessions"]) > 1 or prog["sessions"][-1]["from"] > 0
    write_s = prog["build_seconds"]
    batch_rate = n / write_s if write_s else float("nan")

    single = []
    for _ in range(50):
        it = corpus.item()
        ts = time.perf_counter()
        graph.remember(**it)
        single.append(time.perf_counter() - ts)

    # Let a background BM25 rebuild triggered by the last writes finish before timing queries.
    for _ in range(600):
        if not graph.lexical.stats().get("rebuilding"):
            break
        time.sleep(0.1)

    queries = [(corpus.query(kept[i]), kept[i]["namespace"]) for i in sample]
    for q, ns in queries[:5]:  # warm-up (statement preparation, caches)
        graph.recall(query=q, namespace=ns)
        graph.recall_direct(query=q, namespace=ns, hops=2, reinforce=False)
    t_recall, t_direct, t_key, t_mem = [], [], [], []
    for q, ns in queries:
        ts = time.perf_counter()
        r = graph.recall(query=q, namespace=ns)
        t_recall.append(time.perf_counter() - ts)
        ts = time.perf_counter()
        graph.recall_direct(query=q, namespace=ns, hops=2, reinforce=False)
        t_direct.append(time.perf_counter() - ts)
        if r.keys:
            ts = time.perf_counter()
            graph.read_key(key_id=r.keys[0].key_id, namespace=ns)
            t_key.append(time.perf_counter() - ts)
        if r.memory is not None:
            ts = time.perf_counter()
            graph.read_memory(memory_id=r.memory.memory_id, namespace=ns)
            t_mem.append(time.perf_counter() - ts)
    # The user default: recall_direct with Hebbian updates (a write per call), after the read-only pass.
    t_hebb = []
    for q, ns in queries:
        ts = time.perf_counter()
        graph.recall_direct(query=q, namespace=ns, hops=2)
        t_hebb.append(time.perf_counter() - ts)
    rss_point(curve, "queries", done)
    rss_peak = _common.peak_rss_mb()
    rss_now = _common.rss_mb()
    store_mb = graph.store.size_bytes() / 2**20 if args.store_url else _common.dir_mb(data_dir)
    counts = graph.counts()
    log(f"  keymem done: recall p50 {_common.pct(t_recall, .5) * 1000:.1f} ms, "
        f"direct p50 {_common.pct(t_direct, .5) * 1000:.1f} ms, RSS {rss_now:.0f} MB (peak {rss_peak:.0f} MB)")

    base: dict[str, Any] = {}
    if not args.no_baseline:
        # Paged like keymem's own loader: one statement over 1M contents exhausts a 256 MiB pool.
        docs = [(mid, content, ns) for page in graph.store.pages("memory/active_docs", now=graph.now())
                for mid, ns, content in zip(page["ids"], page["namespaces"], page["contents"], strict=True)]
        lin = LinearBaseline(graph, docs)
        for q, ns in queries[:5]:
            lin.recall(q, ns)
        b_recall, b_direct = [], []
        for q, ns in queries:
            ts = time.perf_counter()
            lin.recall(q, ns)
            b_recall.append(time.perf_counter() - ts)
            ts = time.perf_counter()
            lin.recall_direct(q, ns)
            b_direct.append(time.perf_counter() - ts)
        base = {"recall_ms": _common.summary_ms(b_recall), "recall_direct_ms": _common.summary_ms(b_direct),
                "keys_scanned": len(lin.key_ids), "docs_scanned": len(lin.doc_ids)}
        del lin, docs
    graph.close()
    # Reopen: what a daemon start costs on this store (migrations, mirror, key vectors, BM25).
    ts = time.perf_counter()
    _common.open_graph(data_dir, model_dir, emb, **extra).close()
    reopen_s = time.perf_counter() - ts
    out = {
        "memories": n,
        "queries": len(queries),
        "keys": counts["keys"],
        "links": counts["links"],
        "remember_batch_per_s": round(batch_rate, 1),
        "write_seconds": round(write_s, 1),
        "build_sessions": len(prog["sessions"]),
        "resumed": resumed,
        "open_s": round(open_s, 2),
        "remember_ms": _common.summary_ms(single, 0.5),
        "recall_ms": _common.summary_ms(t_recall),
        "recall_direct_ms": _common.summary_ms(t_direct),
        "recall_direct_hebbian_ms": _common.summary_ms(t_hebb),
        "read_key_ms": _common.summary_ms(t_key, 0.5),
        "read_memory_ms": _common.summary_ms(t_mem, 0.5),
        "store_mb": round(store_mb, 1),
        "reopen_s": round(reopen_s, 2),
        "rss_mb": round(rss_peak - rss_base, 1),
        "rss_peak_mb": round(rss_peak, 1),
        "rss_after_model_mb": round(curve[0]["rss_mb"], 1),
        "rss_after_open_mb": round(rss_base, 1),
        "rss_end_mb": round(rss_now, 1),
        "rss_curve": curve,
        "baseline": base,
        "machine": {"cpus": os.cpu_count(), "onnx_threads": args.threads, "python": sys.version.split()[0],
                    "load_avg_end": [round(x, 2) for x in os.getloadavg()]},
        "buffer_pool_mb": graph.store.buffer_pool_mb,
        "engine": graph.store.capabilities.engine,
    }
    if not args.dir:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return out


def print_curve(curve: list[dict[str, Any]]) -> None:
    print("RSS curve (MB):", file=sys.stderr)
    for p in curve:
        print(f"  {p['phase']:<14} {p['written']:>9}  rss {p['rss_mb']:>7.0f}  peak {p['peak_mb']:>7.0f}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, required=True)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--json", default=None)
    p.add_argument("--huge", action="store_true", help="allow N > 100k (e.g. 1M)")
    p.add_argument("--threads", type=int, default=1, help="ONNX intra-op threads (default 1, keymem's default on 2 cores)")
    p.add_argument("--dir", default=None, help="keep the store here instead of a temporary directory")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument("--buffer-pool-mb", type=int, default=None, help="LadybugDB buffer pool (default: keymem's)")
    p.add_argument("--store-url", default=None,
                   help="KEYMEM_STORE_URL of an empty server graph (falkordb://host:port/graph) instead of the file")
    p.add_argument("--build-only", action="store_true", help="write the corpus into --dir and stop (no queries)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop building after this long (the batch in flight is finished and recorded); rerun to resume")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    if args.build_only and not args.dir:
        raise SystemExit("--build-only needs --dir")
    res = run(args)
    print_curve(res["rss_curve"])
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
