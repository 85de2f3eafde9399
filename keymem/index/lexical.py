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
snapshot of its live documents is taken (the main's live rows, the delta's document objects:
term ids, no text); the score matrix is built outside the lock (in a background thread unless
``background=False``); the swap happens under the lock and keeps a snapshot row alive only if
its document is still where the snapshot took it from (the same main row, not masked since, or
the very same delta object).  Anything added, replaced or removed during the build therefore
stays in the new delta / gets masked: no write is lost and every write is visible to the next
search.  A main holds its documents as arrays, not objects (see ``bm25._Main``); opening a
store fills the mains directly (``load``).

Scoring reads the bm25s CSC arrays (``scores["data"/"indices"/"indptr"]``) directly instead of
calling ``retrieve(weight_mask=...)``: retrieve sums the precomputed scores and cannot apply
the per-term IDF correction above.  Masked rows are dropped by filtering the candidates on the
``alive`` array, which is what ``weight_mask`` would do.

Why one index per namespace, and what it costs (measured): docs/design.md, "BM25 index".
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import Collection, Container, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from keymem.index.bm25 import (
    K1,
    B,
    _build_main,
    _Doc,
    _Main,
    _rank_key,
    _Snapshot,
    build_from_terms,
    idf,
)
from keymem.native import trim_heap
from keymem.text.stem import stem
from keymem.text.tokenize import TERMS_SEP, tokenize

__all__ = ["LexicalIndex"]

LOAD_CHUNK = 4096  # documents whose tokens are split and mapped at once by ``load``

log = logging.getLogger(__name__)

class _Vocab(dict[str, int]):
    """Term -> global term id. Terms with one stem (keymem.text.stem) share an id; a term whose
    stem is unseen gets the next id on first lookup. The dict caches term -> id, so each
    distinct term is stemmed once."""

    __slots__ = ("stems",)

    def __init__(self) -> None:
        super().__init__()
        self.stems: dict[str, int] = {}

    def __missing__(self, term: str) -> int:
        s = stem(term)
        tid = self.stems.get(s)
        if tid is None:
            tid = self.stems[s] = len(self.stems)
        self[term] = tid
        return tid

    def find(self, term: str) -> int | None:
        """The id of ``term``'s stem if any document had it, without adding anything (queries)."""
        tid = self.get(term)
        return tid if tid is not None else self.stems.get(stem(term))

    def find_stem(self, term_stem: str) -> int | None:
        """The id of a stem if any document had it (``find`` of a term whose stem is known)."""
        return self.stems.get(term_stem)


@dataclass(slots=True, eq=False)
class _Shard:
    """Everything about one namespace.  Guarded by the index lock."""

    name: str = ""
    main: _Main | None = None
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
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
        self._vocab = _Vocab()
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
        return array("i", map(self._vocab.__getitem__, tokens))

    def _find(self, doc_id: str) -> tuple[_Shard, _Doc | int] | None:
        """Where ``doc_id`` lives: its namespace's shard and its delta document or main row."""
        for shard in self._shards.values():
            doc = shard.delta.get(doc_id)
            if doc is not None:
                return shard, doc
            if shard.main is not None:
                row = shard.main.find(doc_id)
                if row >= 0 and shard.alive[row]:
                    return shard, row
        return None

    def load(self, pages: Iterable[tuple[str, list[str], list[str]]]) -> None:
        """Fill an empty index from pages of ``(namespace, ids, terms)`` (opening a store).

        ``terms`` are each document's tokens joined by ``TERMS_SEP`` (as stored in the store). Each
        namespace's documents go straight into its main as flat term-id arrays: no object per
        document, no delta; a page's tokens are split and mapped to ids in one pass each. At 1M
        memories this took the load from 46 s to ~12 s (docs/design.md, "BM25 index").
        The lock is held throughout: a search waits for the whole index instead of seeing part of it.
        """
        with self._lock:
            if self._shards:
                raise RuntimeError("LexicalIndex.load() fills an empty index")
            getitem = self._vocab.__getitem__
            chunks: dict[str, tuple[list[str], list[np.ndarray], list[np.ndarray]]] = {}
            for ns, ids, page_terms in pages:
                if not ids:
                    continue
                acc = chunks.setdefault(ns, ([], [], []))
                acc[0].extend(ids)
                # A few thousand documents at a time: their token strings are the only transient
                # objects, and a whole page's (1.6M at 65k memories) would stay in the allocator.
                for start in range(0, len(page_terms), LOAD_CHUNK):
                    terms = page_terms[start:start + LOAD_CHUNK]
                    # tokens per document: separators + 1, and 0 for an empty one (no Python loop)
                    lengths = np.fromiter(map(str.count, terms, repeat(TERMS_SEP)), dtype=np.int64, count=len(terms))
                    lengths += np.fromiter(map(bool, terms), dtype=bool, count=len(terms))
                    joined = TERMS_SEP.join(filter(None, terms))
                    tokens = joined.split(TERMS_SEP) if joined else []
                    acc[1].append(np.fromiter(map(getitem, tokens), dtype=np.int32, count=len(tokens)))
                    acc[2].append(lengths)
                    del joined, tokens
            per_ns = {ns: (ids, np.concatenate(flats), np.concatenate(lens)) for ns, (ids, flats, lens) in chunks.items()}
            chunks.clear()
            for ns in sorted(per_ns):
                main, _ = build_from_terms(*per_ns.pop(ns))  # popped: each namespace's inputs freed once built
                shard = self._shards[ns] = _Shard(name=ns, main=main, alive=np.ones(main.rows, dtype=bool),
                                                  df=main.df(), n=main.rows, total_len=int(main.terms.size))
                # An id given twice: its last version (the later of the adjacent rows) counts.
                for row in np.flatnonzero(main.keys[:-1] == main.keys[1:]).tolist():
                    dup = main.doc_terms(row)
                    shard.alive[row] = False
                    shard.masked += 1
                    self._uncount(shard, set(dup.tolist()), len(dup))
        trim_heap()

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
            found = self._find(doc_id)
            if found is None:
                return
            self._remove_locked(doc_id, *found)
            run_now = self._maybe_schedule(found[0].name)
        if run_now:
            self._drain()

    def _add_locked(self, doc_id: str, terms: array[int], ns: str, *, post: bool = True) -> None:
        """Index a document into the delta.  ``post=False`` (bulk load) defers its postings:
        a bulk load usually ends in a rebuild, and 100k docs of per-term dicts would cost
        ~150 MB of transient memory for nothing."""
        found = self._find(doc_id)
        if found is not None:
            self._remove_locked(doc_id, *found)
        doc = _Doc(ns, terms)
        shard = self._shards.get(ns)
        if shard is None:
            shard = self._shards[ns] = _Shard(name=ns)
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

    def _remove_locked(self, doc_id: str, shard: _Shard, where: _Doc | int) -> None:
        """Drop a document found by ``_find``: a delta document leaves the delta, a main row is masked."""
        if isinstance(where, _Doc):
            length = len(where.terms)
            unique = set(where.terms)
            del shard.delta[doc_id]
            if doc_id in shard.unindexed:
                shard.unindexed.discard(doc_id)
            else:
                self._unpost(shard, doc_id, unique)
        else:
            assert shard.main is not None
            terms = shard.main.doc_terms(where)
            length = len(terms)
            unique = set(terms.tolist())
            shard.alive[where] = False
            shard.masked += 1
        self._uncount(shard, unique, length)

    @staticmethod
    def _uncount(shard: _Shard, unique: set[int], length: int) -> None:
        """Take a document's terms out of its namespace's statistics."""
        for tid in unique:
            c = shard.df[tid] - 1
            if c:
                shard.df[tid] = c
            else:
                del shard.df[tid]
        shard.n -= 1
        shard.total_len -= length

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

    def _begin_rebuild(self, ns: str) -> tuple[_Shard, _Snapshot] | None:
        """Mark ``ns`` as rebuilding and snapshot its live documents (main rows + delta documents)."""
        with self._lock:
            shard = self._shards.get(ns)
            if shard is None or shard.rebuilding:
                return None
            shard.rebuilding = True
            self._active += 1
            rows = np.flatnonzero(shard.alive) if shard.main is not None else np.zeros(0, dtype=np.int64)
            return shard, _Snapshot(shard.main, rows, list(shard.delta.items()))

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
        trim_heap()  # the build's freed buffers (glibc keeps them otherwise: ~100 MB at 100k docs)
        return again

    def _swap_locked(self, shard: _Shard, main: _Main | None) -> None:
        """Install ``main``; rows whose document changed during the build are masked.

        A row is still live if its document is where the snapshot took it from: the same main row
        (not removed or replaced since), or the very delta object (not replaced since).
        """
        alive = np.zeros(0 if main is None else main.rows, dtype=bool)
        moved: set[str] = set()  # delta documents now held by the new main
        if main is not None and main.origin is not None:
            (origin, source), main.origin = main.origin, None
            n_old = len(origin.main_rows)
            from_old = source < n_old
            if n_old and shard.main is origin.old:
                alive[from_old] = shard.alive[origin.main_rows[source[from_old]]]
            delta = shard.delta
            for row in np.flatnonzero(~from_old).tolist():
                doc_id, doc = origin.delta[int(source[row]) - n_old]
                if delta.get(doc_id) is doc:
                    alive[row] = True
                    moved.add(doc_id)
        # Delta documents now in the main leave the delta; later additions stay.  The delta is
        # usually far smaller than what moved, so rebuild its postings instead of deleting.
        if moved:
            shard.delta = {d: doc for d, doc in shard.delta.items() if d not in moved}
            shard.postings = {}
            shard.unindexed = set()
            for doc_id, doc in shard.delta.items():
                shard.post(doc_id, doc)
        live = int(alive.sum())
        shard.main = main if main is not None and live else None
        shard.alive = alive if shard.main is not None else np.zeros(0, dtype=bool)
        shard.masked = (shard.main.rows - live) if shard.main is not None else 0

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
        return self.search_stems({stem(t) for t in tokenize(query)}, k, namespace, exclude)

    def search_stems(
        self, stems: Collection[str], k: int, namespace: str, exclude: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """``search`` for a query already analysed: the stems of its terms (``memory.query.Query``)."""
        if k <= 0 or not stems:
            return []
        with self._lock:
            shard = self._shards.get(namespace)
            if shard is None or shard.n == 0:
                return []
            vocab = self._vocab
            n = shard.n
            weights: dict[int, float] = {}
            for tid in {vocab.find_stem(s) for s in stems}:
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
        out: list[tuple[str, float]] = []
        m = min(cand.size, 2 * k + 16)
        while True:
            part = np.argpartition(-cand_scores, m - 1)[:m] if m < cand.size else np.arange(cand.size)
            order = part[np.lexsort((cand[part], -cand_scores[part]))]
            out = []
            for doc_id, score in zip(main.doc_ids(cand[order]), cand_scores[order].tolist(), strict=True):
                if exclude is not None and doc_id in exclude:
                    continue
                out.append((doc_id, score))
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
            tids = [tid for tid in {vocab.find(t) for t in tokens} if tid is not None]
            for doc_id in doc_ids:
                found = self._find(doc_id)
                if found is None:
                    continue
                shard, where = found
                score = 0.0
                if tids:
                    terms = where.terms if isinstance(where, _Doc) else shard.main.doc_terms(where).tolist()  # type: ignore[union-attr]
                    tf = Counter(terms)
                    norm = K1 * (1.0 - B + B * len(terms) / shard.avgdl())
                    for tid in tids:
                        c = tf.get(tid)
                        if c:
                            score += idf(shard.n, shard.df[tid]) * c / (c + norm)
                out[doc_id] = score
        return out

    def __len__(self) -> int:
        with self._lock:
            return sum(s.n for s in self._shards.values())

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            return isinstance(doc_id, str) and self._find(doc_id) is not None

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
                    "main": rows - s.masked,
                    "main_rows": rows,
                    "delta": len(s.delta),
                    "masked": s.masked,
                    "avgdl": s.avgdl(),
                    "live_avgdl": (s.total_len / s.n) if s.n else 0.0,
                    "rebuilding": s.rebuilding,
                }
            shards = self._shards.values()
            return {
                "docs": sum(s.n for s in shards),
                "namespaces": sum(1 for s in shards if s.n),
                "main": sum(s.main.rows - s.masked for s in shards if s.main),
                "main_rows": sum(s.main.rows for s in shards if s.main),
                "delta": sum(len(s.delta) for s in shards),
                "masked": sum(s.masked for s in shards),
                "vocab": len(self._vocab.stems),
                "rebuilds": self._rebuilds,
                "rebuild_failures": self._rebuild_failures,
                "rebuilding": self._active > 0 or bool(self._queue),
                "last_rebuild_seconds": self._last_rebuild_s,
            }
