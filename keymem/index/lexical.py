"""Incremental BM25 (Lucene variant) over memory texts, partitioned by namespace.

Why this shape
--------------
bm25s builds a fast, immutable, precomputed sparse index but cannot add a document.  Memories
arrive every turn, so each namespace keeps

* a **main** part: a bm25s index (``method="lucene"``, k1=1.5, b=0.75) built from a snapshot,
  holding per (term, doc) the precomputed ``idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))``;
* a small exact **delta** of documents added since that snapshot, scored in Python from an
  inverted dict with the same formula;
* a boolean ``alive`` array over the main's rows: deletion, deactivation and replacement only
  flip a bit (score filtering), no rebuild.

Statistics are global for the namespace and kept exact under every write: document count
``N`` and document frequency ``df`` of live documents in main + delta.  At query time each
main posting list is multiplied by ``idf_now(t) / idf_at_build(t)``, so main and delta are
scored with the *current* IDF, i.e. exactly like a from-scratch index, except for one documented
approximation: while a main exists, ``avgdl`` stays the main's value at build time (for main and
delta alike, so all documents are normalised the same way).  The error is bounded by the
rebuild threshold (the delta plus masked rows never exceed ``max(rebuild_min, rebuild_ratio *
main rows)``) and vanishes at each rebuild; a namespace below ``rebuild_min`` documents never has
a main and is scored exactly.  ``stats(namespace)["avgdl"]`` reports the value in use.

When ``len(delta) + masked`` passes the threshold, the namespace is rebuilt: under the lock a
snapshot of its live documents (term ids, no text) is taken; the expensive bm25s ``index()``
runs outside the lock (in a background thread unless ``background=False``); the swap happens
under the lock and keeps a snapshot row alive only if that exact document object is still the
live version of its id.  Anything added, replaced or removed during the build therefore stays
in the new delta / gets masked: no write is lost and every write is visible to the next search.

Scoring reads the bm25s CSC arrays (``scores["data"/"indices"/"indptr"]``) directly instead of
calling ``retrieve(weight_mask=...)``: retrieve sums the precomputed scores and cannot apply
the per-term IDF correction above.  Masked rows are dropped by filtering the candidates on the
``alive`` array, which is what ``weight_mask`` would do.

Namespaces: one index per namespace, not one index with a namespace mask
-------------------------------------------------------------------------
Building a mask from a per-doc namespace-code array is cheap (~10 us per query at 100k docs),
so that cost is not the reason.  Per-namespace shards are chosen because (1) BM25 statistics
then belong to the namespace: with a shared index the scores (and the ``content_relevance``
derived from them) in namespace A would move whenever B writes, which is both a cross-tenant
signal and irreproducible; (2) a search costs in proportion to its own namespace's postings:
measured, a query in a 1k-doc namespace takes ~0.03 ms next to a 100k-doc namespace, while
scoring a shared 101k-doc index and masking costs what the big namespace's search costs
(~0.45 ms); (3) rebuilds are per namespace, so one busy agent does not make everyone's index
be rebuilt.  Isolation is structural: a search only ever touches its own shard.

Measured (2 cores shared with other work, CPython 3.11, numpy 2.4, bm25s 0.3.16; 100k English
docs of 14-26 words in one namespace; CPU time because wall-clock on the shared box was noisy;
script in ``tests/index/test_lexical.py``):

* ``add_many`` of 100k docs: ~5.7 s CPU, ~4.5 s of it tokenisation; the main build ~0.5 s.
* ``add()``: ~0.14 ms CPU amortised, counting the background rebuilds' CPU (every ~5k adds).
* full rebuild of ~113k docs: ~0.4-0.5 s CPU (0.4-1.3 s wall), outside the lock.  bm25s's own
  builder takes ~1.2 s for the same work (see :class:`_VectorizedBM25`).
* ``search`` (k=10, 3-6 word queries): p50 ~0.45 ms, p95 ~0.8 ms right after a rebuild;
  p50 ~0.6 ms, p95 ~1.2 ms with a 3.7k-doc delta and 1k masked rows.
* memory: ~50 MB of retained Python/numpy objects for 100k docs (tracemalloc; texts are not
  kept, only int32 term ids); process RSS +160 MB after the bulk load because the allocator
  keeps the build's transient buffers (~130 MB peak) for the next rebuild.
"""

from __future__ import annotations

import ctypes
import heapq
import logging
import math
import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field

import bm25s
import numpy as np

from keymem.text.tokenize import tokenize

__all__ = ["K1", "B", "LexicalIndex", "capped", "relevance", "idf"]

log = logging.getLogger(__name__)

# bm25s sets its own logger to DEBUG at import, which makes every rebuild log "Building index"
# through the application's handlers.  Quiet it unless the application configured it itself.
_bm25s_log = logging.getLogger("bm25s")
if _bm25s_log.level == logging.DEBUG:
    _bm25s_log.setLevel(logging.WARNING)

# Lucene/bm25s defaults.  Not tuned: the project has no labelled recall set for this yet, and
# short memories make b (length normalisation) matter little.
K1 = 1.5
B = 0.75


def _rank_key(hit: tuple[str, float]) -> tuple[float, str]:
    """Best first; equal scores ordered by id so results are deterministic."""
    return (-hit[1], hit[0])


def release_freed_memory() -> None:
    """Hand the build's freed buffers back to the OS (glibc keeps them otherwise: ~100 MB at 100k docs)."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
        except OSError:
            _LIBC = False
    if isinstance(_LIBC, ctypes.CDLL):
        _LIBC.malloc_trim(0)


_LIBC: ctypes.CDLL | bool | None = None


def idf(n_docs: int, df: int) -> float:
    """Lucene BM25 IDF, always > 0 (the same expression bm25s uses for ``method="lucene"``)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def capped(score: float) -> float:
    """Map a raw BM25 score to [0, 1): ``s / (1 + s)`` (0 for non-positive or NaN input).

    This is the ``content_relevance`` shown to agents.  It is monotone in the raw score and
    saturates smoothly; it is not a probability and is not comparable across namespaces with very
    different sizes.  (Floats round scores above ~1e16 to exactly 1.0.)
    """
    if not score > 0.0:  # also catches NaN
        return 0.0
    if math.isinf(score):
        return 1.0
    return score / (1.0 + score)


# relevance() defaults: as if every query term occurred in 1 memory out of 10, in a collection
# whose memories average 12 terms (a ~20-word memory after stopword removal).
_REL_IDF = idf(10, 1)  # ~1.99
_REL_AVGDL = 12.0


def relevance(query: str, text: str, *, term_idf: float = _REL_IDF, avgdl: float = _REL_AVGDL) -> float:
    """BM25-like score of one ad-hoc ``text`` for ``query``, without a collection.

    With no collection there is no IDF, so each distinct query term that occurs in ``text``
    contributes ``term_idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` with a constant
    ``term_idf`` (default: the IDF of a term found in 1 of 10 memories, ~1.99) and a fixed
    ``avgdl`` (default 12 terms).  The scale is thus close to an index score for a
    moderately rare term, so ``capped(relevance(...))`` reads like ``capped`` of a search score:
    one matched term in a 12-term text gives ~0.8 (capped ~0.44), three give ~2.4 (~0.7).
    """
    q = set(tokenize(query))
    if not q:
        return 0.0
    terms = tokenize(text)
    if not terms:
        return 0.0
    tf = Counter(terms)
    norm = K1 * (1.0 - B + B * len(terms) / avgdl)
    return sum(term_idf * tf[t] / (tf[t] + norm) for t in q if t in tf)


@dataclass(slots=True, eq=False)
class _Doc:
    """An indexed document.  Immutable: re-adding an id creates a new object."""

    ns: str
    terms: array[int]  # global term ids, in text order, duplicates kept

    @property
    def length(self) -> int:
        return len(self.terms)


@dataclass(slots=True, eq=False)
class _Main:
    """An immutable bm25s index over a snapshot of one namespace."""

    data: np.ndarray  # float32 precomputed scores, CSC by term column
    indices: np.ndarray  # row of each entry
    indptr: np.ndarray  # column start offsets
    col_of: dict[int, int]  # global term id -> column
    idf_built: np.ndarray  # float64 IDF per column at build time
    avgdl: float
    ids: list[str]  # row -> doc id
    docs: list[_Doc]  # row -> the document object indexed in that row

    @property
    def rows(self) -> int:
        return len(self.ids)


@dataclass(slots=True, eq=False)
class _Shard:
    """Everything about one namespace.  Guarded by the index lock."""

    main: _Main | None = None
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_of: dict[str, int] = field(default_factory=dict)  # live ids stored in main
    masked: int = 0
    delta: dict[str, _Doc] = field(default_factory=dict)
    postings: dict[int, dict[str, int]] = field(default_factory=dict)  # delta: term -> {id: tf}
    unindexed: set[str] = field(default_factory=set)  # bulk-loaded delta ids without postings yet
    df: dict[int, int] = field(default_factory=dict)  # live docs (main + delta)
    n: int = 0
    total_len: int = 0
    rebuilding: bool = False

    def avgdl(self) -> float:
        if self.main is not None and self.main.avgdl > 0:
            return self.main.avgdl
        if self.n and self.total_len:
            return self.total_len / self.n
        return 1.0

    def pending(self) -> int:
        return len(self.delta) + self.masked

    def post(self, doc_id: str, doc: _Doc) -> None:
        """Add ``doc``'s delta postings."""
        postings = self.postings
        for tid, c in Counter(doc.terms).items():
            p = postings.get(tid)
            if p is None:
                p = postings[tid] = {}
            p[doc_id] = c

    def ensure_posted(self) -> None:
        """Post bulk-loaded delta documents (``add_many`` defers this; a search needs it)."""
        if self.unindexed:
            for doc_id in self.unindexed:
                self.post(doc_id, self.delta[doc_id])
            self.unindexed.clear()


class _VectorizedBM25(bm25s.BM25):
    """``bm25s.BM25`` with a vectorised ``build_index_from_ids`` (the hook bm25s documents for
    building "in a different way").

    bm25s's stock builder loops over documents in Python (Counter + small numpy ops per doc):
    ~1.2 s at 100k docs, all of it holding the GIL, so concurrent ``add``/``search`` calls queue
    behind the 5 ms GIL switch interval (on the loaded 2-core dev box add() went from ~0.05 ms to
    several ms while it ran).  This one does the same arithmetic with whole-array numpy operations
    (~0.3 s at 100k, mostly in sorts that release the GIL) and returns the same CSC layout;
    ``tests/index/test_lexical.py`` checks it against the stock builder.  Lucene/Robertson term
    frequency only (the only variant this module uses).
    """

    def build_index_from_ids(
        self,
        unique_token_ids: list[int],
        corpus_token_ids: list[np.ndarray],
        show_progress: bool = True,
        leave_progress: bool = False,
    ) -> dict[str, np.ndarray | int]:
        if self.method not in ("lucene", "robertson"):  # pragma: no cover - guarded by caller
            raise ValueError(f"vectorised builder does not support method={self.method!r}")
        n_vocab = len(unique_token_ids)
        n_docs = len(corpus_token_ids)
        lengths = np.fromiter((len(d) for d in corpus_token_ids), dtype=np.int64, count=n_docs)
        flat = np.concatenate(corpus_token_ids).astype(np.int64) if n_docs else np.zeros(0, np.int64)
        avg_doc_len = float(lengths.mean()) if n_docs else 0.0
        doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        pairs, tf = np.unique(doc_of * max(n_vocab, 1) + flat, return_counts=True)
        rows = pairs // max(n_vocab, 1)
        cols = pairs % max(n_vocab, 1)
        df = np.bincount(cols, minlength=n_vocab)
        idf_arr = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(self.dtype)
        tf_f = tf.astype(self.dtype)
        norm = self.k1 * ((1.0 - self.b) + self.b * lengths[rows] / avg_doc_len) if len(rows) else 0.0
        scores = (idf_arr[cols] * (tf_f / (norm + tf_f))).astype(self.dtype)
        order = np.argsort(cols, kind="stable")  # by term; rows stay ascending within a term
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        return {
            "data": scores[order],
            "indices": rows[order].astype(self.int_dtype),
            "indptr": indptr,
            "num_docs": n_docs,
        }


def _build_main(snapshot: list[tuple[str, _Doc]]) -> _Main:
    """Build a bm25s index for ``snapshot``.  Runs without the lock: touches no shared state."""
    ids = [doc_id for doc_id, _ in snapshot]
    docs = [doc for _, doc in snapshot]
    lengths = np.fromiter((len(d.terms) for d in docs), dtype=np.int64, count=len(docs))
    flat = np.frombuffer(b"".join(d.terms for d in docs), dtype=np.int32)
    avgdl = float(lengths.mean()) if len(docs) else 0.0
    if flat.size == 0:
        return _Main(
            data=np.zeros(0, np.float32),
            indices=np.zeros(0, np.int32),
            indptr=np.zeros(1, np.int64),
            col_of={},
            idf_built=np.zeros(0),
            avgdl=avgdl,
            ids=ids,
            docs=docs,
        )
    uniq, inverse = np.unique(flat, return_inverse=True)
    col_of = {t: i for i, t in enumerate(uniq.tolist())}
    inverse = inverse.reshape(-1)
    ends = np.cumsum(lengths).tolist()
    corpus = [inverse[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    model = _VectorizedBM25(k1=K1, b=B, method="lucene")
    # Tuple form (token ids per doc, vocab) skips bm25s's string-vocabulary pass.
    model.index((corpus, dict(col_of)), create_empty_token=False, show_progress=False)
    scores = model.scores
    indptr = np.asarray(scores["indptr"])
    df = np.diff(indptr).astype(np.float64)  # one entry per (doc, term): nnz per column == df
    n = float(len(docs))
    idf_built = np.log1p((n - df + 0.5) / (df + 0.5))
    return _Main(
        data=np.asarray(scores["data"]),
        indices=np.asarray(scores["indices"]),
        indptr=indptr,
        col_of=col_of,
        idf_built=idf_built,
        avgdl=avgdl,
        ids=ids,
        docs=docs,
    )


class LexicalIndex:
    """Namespaced BM25 index with instant writes; see the module docstring for the design.

    Thread safety: one lock guards all structures; tokenisation and the bm25s build run
    outside it.  ``add``/``remove``/``search`` may be called from any thread, concurrently with
    a background rebuild.
    """

    def __init__(self, *, rebuild_min: int = 2000, rebuild_ratio: float = 0.05, background: bool = True):
        self._rebuild_min = max(1, int(rebuild_min))
        self._rebuild_ratio = float(rebuild_ratio)
        self._background = background
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._vocab: dict[str, int] = {}
        self._docs: dict[str, _Doc] = {}
        self._shards: dict[str, _Shard] = {}
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._worker: threading.Thread | None = None
        self._active = 0  # rebuilds in progress
        self._rebuilds = 0
        self._rebuild_failures = 0
        self._last_rebuild_s = 0.0

    # ------------------------------------------------------------------ writes

    def _term_ids(self, tokens: list[str]) -> array[int]:
        vocab = self._vocab
        out = array("i")
        for t in tokens:
            tid = vocab.get(t)
            if tid is None:
                tid = vocab[t] = len(vocab)
            out.append(tid)
        return out

    def add(self, doc_id: str, text: str, namespace: str, *, tokens: list[str] | None = None) -> None:
        """Index ``text`` (or its already computed ``tokens``) under ``doc_id``, replacing any
        previous version; visible at once."""
        if tokens is None:
            tokens = tokenize(text)
        with self._lock:
            self._add_locked(doc_id, self._term_ids(tokens), namespace)
            run_now = self._maybe_schedule(namespace)
        if run_now:
            self._drain()

    def add_many(self, docs: Iterable[tuple[str, str | list[str], str]]) -> None:
        """Bulk add ``(id, text or its tokens, namespace)``; for loading a store at open.

        A namespace that received more documents than its main holds is rebuilt synchronously
        before returning (so a freshly opened store searches at full speed); others follow the
        normal policy.
        """
        touched: set[str] = set()
        batch: list[tuple[str, list[str], str]] = []

        def apply() -> None:
            # Tokenise outside the lock, index a batch under it: bounded memory, and searches
            # interleave with a long bulk load.
            with self._lock:
                for doc_id, tokens, ns in batch:
                    self._add_locked(doc_id, self._term_ids(tokens), ns, post=False)
                    touched.add(ns)
            batch.clear()

        for doc_id, text, ns in docs:
            batch.append((doc_id, tokenize(text) if isinstance(text, str) else text, ns))
            if len(batch) >= 1024:
                apply()
        apply()
        sync: list[str] = []
        with self._lock:
            for ns in touched:
                shard = self._shards.get(ns)
                if shard is None:
                    continue
                main_rows = shard.main.rows if shard.main else 0
                if shard.pending() > self._threshold(shard) and shard.pending() >= main_rows:
                    sync.append(ns)
                else:
                    self._maybe_schedule(ns)
        for ns in sync:
            self._rebuild(ns)
        if not self._background:
            self._drain()

    def remove(self, doc_id: str) -> None:
        """Drop ``doc_id`` from search (forget, TTL, deactivation).  Unknown ids are ignored."""
        with self._lock:
            doc = self._docs.get(doc_id)
            if doc is None:
                return
            self._remove_locked(doc_id, doc)
            run_now = self._maybe_schedule(doc.ns)
        if run_now:
            self._drain()

    def _add_locked(self, doc_id: str, terms: array[int], ns: str, *, post: bool = True) -> None:
        """Index a document into the delta.  ``post=False`` (bulk load) defers its postings:
        a bulk load usually ends in a rebuild, and 100k docs of per-term dicts would cost
        ~150 MB of transient memory for nothing."""
        old = self._docs.get(doc_id)
        if old is not None:
            self._remove_locked(doc_id, old)
        doc = _Doc(ns, terms)
        shard = self._shards.get(ns)
        if shard is None:
            shard = self._shards[ns] = _Shard()
        self._docs[doc_id] = doc
        shard.delta[doc_id] = doc
        if post:
            shard.post(doc_id, doc)
        else:
            shard.unindexed.add(doc_id)
        df = shard.df
        for tid in set(terms):
            df[tid] = df.get(tid, 0) + 1
        shard.n += 1
        shard.total_len += len(terms)

    def _remove_locked(self, doc_id: str, doc: _Doc) -> None:
        del self._docs[doc_id]
        shard = self._shards[doc.ns]
        unique = set(doc.terms)
        if shard.delta.pop(doc_id, None) is not None:
            if doc_id in shard.unindexed:
                shard.unindexed.discard(doc_id)
            else:
                self._unpost(shard, doc_id, unique)
        else:
            row = shard.row_of.pop(doc_id)
            shard.alive[row] = False
            shard.masked += 1
        for tid in unique:
            c = shard.df[tid] - 1
            if c:
                shard.df[tid] = c
            else:
                del shard.df[tid]
        shard.n -= 1
        shard.total_len -= len(doc.terms)

    @staticmethod
    def _unpost(shard: _Shard, doc_id: str, unique: set[int]) -> None:
        for tid in unique:
            p = shard.postings[tid]
            del p[doc_id]
            if not p:
                del shard.postings[tid]

    # ------------------------------------------------------------------ rebuilds

    def _threshold(self, shard: _Shard) -> int:
        rows = shard.main.rows if shard.main else 0
        return max(self._rebuild_min, int(self._rebuild_ratio * rows))

    def _maybe_schedule(self, ns: str) -> bool:
        """Queue ``ns`` if over threshold (lock held).  True if the caller must run it now."""
        shard = self._shards.get(ns)
        if shard is None or shard.rebuilding or ns in self._queued:
            return False
        if shard.pending() <= self._threshold(shard):
            return False
        self._queue.append(ns)
        self._queued.add(ns)
        if not self._background:
            return True
        if self._worker is None:
            self._worker = threading.Thread(target=self._drain, name="keymem-bm25-rebuild", daemon=True)
            self._worker.start()
        return False

    def _drain(self) -> None:
        """Run queued rebuilds until the queue is empty (worker thread or synchronous caller)."""
        while True:
            with self._lock:
                if not self._queue:
                    if self._worker is threading.current_thread():
                        self._worker = None
                    self._cond.notify_all()
                    return
                ns = self._queue.popleft()
                self._queued.discard(ns)
            self._rebuild(ns)

    def _rebuild(self, ns: str) -> None:
        """Snapshot under the lock, build outside it, swap under it."""
        begun = self._begin_rebuild(ns)
        if begun is None:
            return
        shard, snapshot = begun
        started = time.perf_counter()
        try:
            main = _build_main(snapshot) if snapshot else None
        except Exception:  # pragma: no cover - a bm25s failure must not lose documents
            log.exception("lexical index rebuild failed for namespace %r; keeping the delta", ns)
            with self._lock:
                shard.rebuilding = False
                self._active -= 1
                self._rebuild_failures += 1
                self._cond.notify_all()
            return
        if self._finish_rebuild(ns, shard, main, started):
            self._drain()

    def _begin_rebuild(self, ns: str) -> tuple[_Shard, list[tuple[str, _Doc]]] | None:
        """Mark ``ns`` as rebuilding and snapshot its live documents (ids + term arrays)."""
        with self._lock:
            shard = self._shards.get(ns)
            if shard is None or shard.rebuilding:
                return None
            shard.rebuilding = True
            self._active += 1
            snapshot: list[tuple[str, _Doc]] = []
            if shard.main is not None:
                main = shard.main
                snapshot.extend((main.ids[r], main.docs[r]) for r in shard.row_of.values())
            snapshot.extend(shard.delta.items())
            return shard, snapshot

    def _finish_rebuild(self, ns: str, shard: _Shard, main: _Main | None, started: float) -> bool:
        """Install a built main.  True if the caller must run a follow-up rebuild now."""
        with self._lock:
            try:
                self._swap_locked(shard, main)
                self._rebuilds += 1
                self._last_rebuild_s = time.perf_counter() - started
            finally:
                shard.rebuilding = False
                self._active -= 1
                if shard.n == 0 and not shard.delta and shard.main is None and self._shards.get(ns) is shard:
                    del self._shards[ns]
                again = self._maybe_schedule(ns) if ns in self._shards else False
                self._cond.notify_all()
        release_freed_memory()
        return again

    def _swap_locked(self, shard: _Shard, main: _Main | None) -> None:
        """Install ``main``; rows whose document changed during the build are masked."""
        docs = self._docs
        if main is None:
            alive = np.zeros(0, dtype=bool)
            row_of: dict[str, int] = {}
        else:
            alive = np.zeros(main.rows, dtype=bool)
            row_of = {}
            for row, (doc_id, doc) in enumerate(zip(main.ids, main.docs, strict=True)):
                if docs.get(doc_id) is doc:
                    alive[row] = True
                    row_of[doc_id] = row
        # Delta documents now in the main leave the delta; later additions stay.  The delta is
        # usually far smaller than what moved, so rebuild its postings instead of deleting.
        if row_of:
            shard.delta = {d: doc for d, doc in shard.delta.items() if d not in row_of}
            shard.postings = {}
            shard.unindexed = set()
            for doc_id, doc in shard.delta.items():
                shard.post(doc_id, doc)
        shard.main = main if main is not None and row_of else None
        if shard.main is None:
            alive = np.zeros(0, dtype=bool)
            row_of = {}
        shard.alive = alive
        shard.row_of = row_of
        shard.masked = (shard.main.rows - len(row_of)) if shard.main is not None else 0

    def flush(self) -> None:
        """Rebuild every namespace with a delta or masked rows, now; for tests and benchmarks."""
        self.wait_rebuild()
        for _ in range(3):
            with self._lock:
                todo = [ns for ns, s in self._shards.items() if s.pending()]
            if not todo:
                return
            for ns in todo:
                self._rebuild(ns)
            self.wait_rebuild()

    def wait_rebuild(self, timeout: float | None = None) -> bool:
        """Block until no rebuild is queued or running.  False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._queue or self._active or self._worker is not None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    # ------------------------------------------------------------------ reads

    def search(
        self, query: str, k: int, namespace: str, exclude: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``k`` ``(doc_id, raw BM25)`` in ``namespace``, best first, scores > 0 only.

        Ties are broken by id so results are deterministic.  ``exclude`` ids are skipped
        (they do not use up ``k``).
        """
        if k <= 0:
            return []
        tokens = set(tokenize(query))
        if not tokens:
            return []
        with self._lock:
            shard = self._shards.get(namespace)
            if shard is None or shard.n == 0:
                return []
            vocab = self._vocab
            n = shard.n
            weights: dict[int, float] = {}
            for t in tokens:
                tid = vocab.get(t)
                if tid is not None:
                    df = shard.df.get(tid, 0)
                    if df:
                        weights[tid] = idf(n, df)
            if not weights:
                return []
            main_hits = self._search_main(shard, weights, k, exclude)
            delta_hits = self._search_delta(shard, weights, k, exclude)
        hits = main_hits + delta_hits
        hits.sort(key=_rank_key)
        return hits[:k]

    @staticmethod
    def _search_main(
        shard: _Shard, weights: dict[int, float], k: int, exclude: Container[str] | None
    ) -> list[tuple[str, float]]:
        main = shard.main
        if main is None:
            return []
        scores: np.ndarray | None = None
        data, indices, indptr = main.data, main.indices, main.indptr
        for tid, w in weights.items():
            col = main.col_of.get(tid)
            if col is None:
                continue
            s, e = int(indptr[col]), int(indptr[col + 1])
            if s == e:
                continue
            if scores is None:
                scores = np.zeros(main.rows, dtype=np.float64)
            # rows are unique within a column, so fancy-index += is exact (no np.add.at needed)
            scores[indices[s:e]] += data[s:e] * (w / main.idf_built[col])
        if scores is None:
            return []
        cand = np.flatnonzero(scores)
        cand = cand[shard.alive[cand]]
        if cand.size == 0:
            return []
        cand_scores = scores[cand]
        ids = main.ids
        out: list[tuple[str, float]] = []
        m = min(cand.size, 2 * k + 16)
        while True:
            part = np.argpartition(-cand_scores, m - 1)[:m] if m < cand.size else np.arange(cand.size)
            order = part[np.lexsort((cand[part], -cand_scores[part]))]
            out = []
            for i in order.tolist():
                doc_id = ids[int(cand[i])]
                if exclude is not None and doc_id in exclude:
                    continue
                out.append((doc_id, float(cand_scores[i])))
                if len(out) >= k:
                    break
            if len(out) >= k or m >= cand.size:
                return out
            m = min(cand.size, m * 4)

    @staticmethod
    def _search_delta(
        shard: _Shard, weights: dict[int, float], k: int, exclude: Container[str] | None
    ) -> list[tuple[str, float]]:
        if not shard.delta:
            return []
        shard.ensure_posted()
        norm_a = K1 * (1.0 - B)
        norm_b = K1 * B / shard.avgdl()
        delta = shard.delta
        acc: dict[str, float] = {}
        for tid, w in weights.items():
            p = shard.postings.get(tid)
            if not p:
                continue
            for doc_id, tf in p.items():
                s = w * tf / (tf + norm_a + norm_b * delta[doc_id].length)
                acc[doc_id] = acc.get(doc_id, 0.0) + s
        items: Iterable[tuple[str, float]] = acc.items()
        if exclude is not None:
            items = [(d, s) for d, s in items if d not in exclude]
        return heapq.nsmallest(k, items, key=_rank_key)

    def score_docs(self, query: str, doc_ids: Sequence[str]) -> dict[str, float]:
        """Raw BM25 of each known id for ``query`` (0.0 if no term matches).

        Each document is scored with its own namespace's statistics.  Unknown (or removed) ids
        are left out of the result.
        """
        tokens = set(tokenize(query))
        out: dict[str, float] = {}
        with self._lock:
            vocab = self._vocab
            tids = [tid for tid in (vocab.get(t) for t in tokens) if tid is not None]
            for doc_id in doc_ids:
                doc = self._docs.get(doc_id)
                if doc is None:
                    continue
                shard = self._shards[doc.ns]
                score = 0.0
                if tids:
                    tf = Counter(doc.terms)
                    norm = K1 * (1.0 - B + B * doc.length / shard.avgdl())
                    for tid in tids:
                        c = tf.get(tid)
                        if c:
                            score += idf(shard.n, shard.df[tid]) * c / (c + norm)
                out[doc_id] = score
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            return doc_id in self._docs

    def namespaces(self) -> list[str]:
        """Namespaces that currently hold at least one document."""
        with self._lock:
            return sorted(ns for ns, s in self._shards.items() if s.n)

    def stats(self, namespace: str | None = None) -> dict[str, float | int | bool]:
        """Sizes and rebuild figures, for the whole index or one namespace.

        Whole index: ``docs``, ``namespaces``, ``main`` (live rows in mains), ``main_rows``,
        ``delta``, ``masked``, ``vocab``, ``rebuilds``, ``rebuild_failures``, ``rebuilding``,
        ``last_rebuild_seconds``.  One namespace: ``docs``, ``main``, ``main_rows``, ``delta``,
        ``masked``, ``avgdl`` (the value scoring uses) and ``live_avgdl``.
        """
        with self._lock:
            if namespace is not None:
                s = self._shards.get(namespace) or _Shard()
                rows = s.main.rows if s.main else 0
                return {
                    "docs": s.n,
                    "main": len(s.row_of),
                    "main_rows": rows,
                    "delta": len(s.delta),
                    "masked": s.masked,
                    "avgdl": s.avgdl(),
                    "live_avgdl": (s.total_len / s.n) if s.n else 0.0,
                    "rebuilding": s.rebuilding,
                }
            shards = self._shards.values()
            return {
                "docs": len(self._docs),
                "namespaces": sum(1 for s in shards if s.n),
                "main": sum(len(s.row_of) for s in shards),
                "main_rows": sum(s.main.rows for s in shards if s.main),
                "delta": sum(len(s.delta) for s in shards),
                "masked": sum(s.masked for s in shards),
                "vocab": len(self._vocab),
                "rebuilds": self._rebuilds,
                "rebuild_failures": self._rebuild_failures,
                "rebuilding": self._active > 0 or bool(self._queue),
                "last_rebuild_seconds": self._last_rebuild_s,
            }
