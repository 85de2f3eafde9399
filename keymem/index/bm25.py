"""BM25 arithmetic and the static part of a namespace's lexical index (keymem/index/lexical.py).

* ``idf``, ``capped`` and ``relevance``: the Lucene BM25 variant's IDF, the ``content_relevance``
  an agent sees, and a collection-free score of one text;
* ``_Main``: a namespace's frozen index (bm25s's Lucene score matrix, CSC by term) with its
  ids and term arrays, built by ``build_from_terms`` (from stored terms, at open) or
  ``_build_main`` (from a rebuild's snapshot). Both compute the matrix with ``_score_csc``, the
  arithmetic of ``_VectorizedBM25``, the bm25s builder hook that ``tests/index/test_lexical.py``
  checks against bm25s's own builder.

No state lives here: ``LexicalIndex`` owns the per-namespace shards and decides when to rebuild.
"""

from __future__ import annotations

import logging
import math
from array import array
from collections import Counter
from dataclasses import dataclass

import bm25s
import numpy as np

from keymem.index import sorted_ids
from keymem.text.stem import stem
from keymem.text.tokenize import tokenize

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
    q = set(map(stem, tokenize(query)))
    if not q:
        return 0.0
    terms = list(map(stem, tokenize(text)))
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
class _Snapshot:
    """What a rebuild indexes: live rows of the namespace's current main, then its delta documents."""

    old: _Main | None
    main_rows: np.ndarray  # rows of ``old`` (int64, ascending)
    delta: list[tuple[str, _Doc]]

    def __len__(self) -> int:
        return len(self.main_rows) + len(self.delta)


@dataclass(slots=True, eq=False)
class _Main:
    """An immutable bm25s index over a snapshot of one namespace.

    Held as arrays, not one object per document (at 1M memories per-document objects, the
    id -> object dict and the id -> row dict cost ~600 bytes a document): rows are in id order,
    ``keys`` holds the ids as UTF-8 bytes (a row is found by binary search), and the documents'
    term ids are one flat array (row ``r`` at ``starts[r]:starts[r + 1]``).
    """

    data: np.ndarray  # float32 precomputed scores, CSC by term column
    indices: np.ndarray  # row of each entry
    indptr: np.ndarray  # column start offsets
    col_of: dict[int, int]  # global term id -> column
    idf_built: np.ndarray  # float64 IDF per column at build time
    avgdl: float
    keys: np.ndarray  # row -> doc id as UTF-8 bytes (numpy "S"), ascending; an id given twice: adjacent rows
    terms: np.ndarray  # int32 global term ids of every row, in text order, duplicates kept
    starts: np.ndarray  # int64, rows + 1
    # Until installed: the snapshot a rebuild built it from, and which snapshot document each row
    # holds (``build_from_terms``'s ``source``); the swap reads them, then drops them.
    origin: tuple[_Snapshot, np.ndarray] | None = None

    @property
    def rows(self) -> int:
        return len(self.keys)

    def doc_ids(self, rows: np.ndarray) -> list[str]:
        return sorted_ids.decode(self.keys, rows)

    def find(self, doc_id: str) -> int:
        """The last row holding ``doc_id``, or -1."""
        return sorted_ids.find(self.keys, doc_id)

    def doc_terms(self, row: int) -> np.ndarray:
        return self.terms[int(self.starts[row]):int(self.starts[row + 1])]

    def df(self) -> dict[int, int]:
        """Documents per global term id (every row counted, live or not)."""
        cols = {c: t for t, c in self.col_of.items()}
        return {cols[c]: int(d) for c, d in enumerate(np.diff(self.indptr).tolist()) if d}


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
        n_docs = len(corpus_token_ids)
        lengths = np.fromiter((len(d) for d in corpus_token_ids), dtype=np.int64, count=n_docs)
        flat = np.concatenate(corpus_token_ids).astype(np.int64) if n_docs else np.zeros(0, np.int64)
        return _score_csc(flat, lengths, len(unique_token_ids), self.k1, self.b, self.dtype, self.int_dtype)


def _score_csc(flat: np.ndarray, lengths: np.ndarray, n_vocab: int, k1: float, b: float, dtype: str,
               int_dtype: str) -> dict[str, np.ndarray | int]:
    """bm25s's Lucene score matrix (CSC by term column) from every document's column ids, flattened."""
    n_docs = len(lengths)
    avg_doc_len = float(lengths.mean()) if n_docs else 0.0
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    pairs, tf = _counted(doc_of * max(n_vocab, 1) + flat)
    rows = pairs // max(n_vocab, 1)
    cols = pairs % max(n_vocab, 1)
    df = np.bincount(cols, minlength=n_vocab)
    idf_arr = np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(dtype)
    tf_f = tf.astype(dtype)
    norm = k1 * ((1.0 - b) + b * lengths[rows] / avg_doc_len) if len(rows) else 0.0
    scores = (idf_arr[cols] * (tf_f / (norm + tf_f))).astype(dtype)
    order = _stable_order(cols)  # by term; rows stay ascending within a term
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {
        "data": scores[order],
        "indices": rows[order].astype(int_dtype),
        "indptr": indptr,
        "num_docs": n_docs,
    }


def _counted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_counts=True)``, faster on keys already sorted by document.

    A stable sort (timsort) uses the runs the document order leaves: 0.44 s against np.unique's
    1.36 s for 25M keys of 1M documents.
    """
    if not keys.size:
        return keys, np.zeros(0, np.int64)
    keys = np.sort(keys, kind="stable")
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    at = np.flatnonzero(first)
    return keys[at], np.diff(np.append(at, keys.size))


def _stable_order(cols: np.ndarray) -> np.ndarray:
    """``np.argsort(cols, kind="stable")`` for non-negative ids below 2**32, as 16-bit radix passes
    (numpy radix-sorts 16-bit keys: 1.4 s against 1.9 s for 18M ids)."""
    if not cols.size or int(cols.max()) < 1 << 16:
        return np.argsort(cols.astype(np.uint16) if cols.size else cols, kind="stable")
    order = np.argsort((cols & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((cols[order] >> 16).astype(np.uint16), kind="stable")]


def _gather_flat(flat: np.ndarray, lengths: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return _pick(flat, starts, rows)


def _pick(flat: np.ndarray, starts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The documents ``rows`` (in that order) of a flat layout: their terms, flat, and lengths."""
    first = starts[rows]
    lengths = starts[rows + 1] - first
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int32), lengths
    # index of each output term in ``flat``: its document's start + its position within the document
    base = np.repeat(first - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return flat[base + np.arange(total)], lengths


def _build_main(snapshot: _Snapshot) -> _Main:
    """Build a bm25s index for ``snapshot``.  Runs without the lock: touches no shared state."""
    old, rows = snapshot.old, snapshot.main_rows
    keys, parts, lens = [], [], []
    if old is not None and len(rows):
        flat_main, len_main = _pick(old.terms, old.starts, rows)
        keys.append(old.keys[rows])
        parts.append(flat_main)
        lens.append(len_main)
    if snapshot.delta:
        keys.append(sorted_ids.encode([doc_id for doc_id, _ in snapshot.delta]))
        parts.append(np.frombuffer(b"".join(d.terms for _, d in snapshot.delta), dtype=np.int32))
        lens.append(np.fromiter((len(d.terms) for _, d in snapshot.delta), dtype=np.int64, count=len(snapshot.delta)))
    flat = np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, np.int32)
    lengths = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    main, source = build_from_terms(np.concatenate(keys) if keys else sorted_ids.encode([]), flat, lengths)
    main.origin = (snapshot, source)
    return main


def build_from_terms(keys: np.ndarray | list[str], flat: np.ndarray,
                     lengths: np.ndarray) -> tuple[_Main, np.ndarray]:
    """A main over documents given as ids and global term ids (``flat``, ``lengths`` per document),
    and ``source``: which input document each of its rows holds.

    Rows are put in id order (stable: an id given twice keeps its order).
    """
    keys = sorted_ids.encode(keys) if isinstance(keys, list) else keys
    source = np.argsort(keys, kind="stable")
    if not np.array_equal(source, np.arange(len(keys))):
        keys = keys[source]
        flat, lengths = _gather_flat(flat, lengths, source)
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    avgdl = float(lengths.mean()) if len(lengths) else 0.0
    if flat.size == 0:
        return _Main(data=np.zeros(0, np.float32), indices=np.zeros(0, np.int32), indptr=np.zeros(1, np.int64),
                     col_of={}, idf_built=np.zeros(0), avgdl=avgdl, keys=keys, terms=flat, starts=starts), source
    # Columns: the term ids present, in id order (a bincount over the dense ids, not a sort).
    present = np.bincount(flat) > 0
    uniq = np.flatnonzero(present)
    column = np.cumsum(present) - 1
    col_of = dict(zip(uniq.tolist(), range(len(uniq)), strict=True))
    scores = _score_csc(column[flat].astype(np.int64), lengths, len(uniq), K1, B, "float32", "int32")
    indptr = np.asarray(scores["indptr"])
    df = np.diff(indptr).astype(np.float64)  # one entry per (doc, term): nnz per column == df
    n = float(len(lengths))
    idf_built = np.log1p((n - df + 0.5) / (df + 0.5))
    return _Main(data=np.asarray(scores["data"]), indices=np.asarray(scores["indices"]), indptr=indptr,
                 col_of=col_of, idf_built=idf_built, avgdl=avgdl, keys=keys, terms=flat, starts=starts), source
