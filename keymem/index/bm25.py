"""BM25 arithmetic and the static part of a namespace's lexical index (keymem/index/lexical.py).

* ``idf``, ``capped`` and ``relevance``: the Lucene BM25 variant's IDF, the ``content_relevance``
  an agent sees, and a collection-free score of one text;
* ``_Main``: a namespace's frozen bm25s index with its term/document tables, built from a
  snapshot of term ids by ``_build_main`` (a vectorised variant of bm25s's builder).

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
