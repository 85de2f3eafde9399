"""Memory content embeddings: what the association walk and the delivery read as *meaning*.

Keys carry vectors in the store; a memory's own text did not. Ranking what a busy key reaches,
telling a decoy that shares the chain's key from the fact the question needs, and keeping the
hook quiet for a prompt that only uses a stored word in passing all need the relevance of a
memory's text to the question, not shared words. This index holds that vector per memory.

It is derived data (content + embedding model), so it lives beside the store, not in it:

* an in-memory float16 matrix (384-d MiniLM: 768 bytes a memory, 77 MB at 100k), id -> row;
* filled on write (the write path hands new memories to ``add_soon``: embedded on the embed
  pool after the commit, off the caller's latency), and lazily on read: ``relevance`` embeds the
  memories it is asked about that have no vector yet (an older store, a write still embedding),
  at most ``LAZY_MAX`` per call, the rest scoring 0 until the warm-up reaches them;
* saved to ``memory_vectors.npz`` in the data directory on close (atomic rename), tagged with the
  embedder's fingerprint; a file of another model is ignored. A crash loses only vectors, which
  the next reads and ``warm`` recompute.

Rows of memories that were forgotten stay until the next save, which keeps only the ids the
mirror still knows (``save(keep=...)``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

log = logging.getLogger("keymem.index")

FILE_NAME = "memory_vectors.npz"
LAZY_MAX = 256  # memories one call embeds at most (about 0.3 s of MiniLM on 2 cores)
WARM_BATCH = 32


class MemoryVectors:
    """Unit-length content vectors by memory id, cosine against a query vector."""

    def __init__(self, dim: int, fingerprint: str, embed: Callable[[list[str]], np.ndarray],
                 read: Callable[[list[str]], dict[str, str]], path: Path | None = None,
                 submit: Callable[[Callable[[], None]], object] | None = None) -> None:
        self.dim = dim
        self._submit = submit  # runs a job on a worker thread (the embed pool); None: inline
        self._pending: dict[str, str] = {}
        self._draining = False
        self.fingerprint = fingerprint
        self._embed = embed
        self._read = read
        self.path = path
        self._lock = threading.Lock()
        self._mat = np.zeros((1024, dim), dtype=np.float16)
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._dirty = False

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._pos

    # -- filling -----------------------------------------------------------------------
    def add(self, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            for mid, vec in vectors.items():
                row = self._pos.get(mid)
                if row is None:
                    row = len(self._ids)
                    if row == self._mat.shape[0]:
                        grown = np.zeros((row * 2, self.dim), dtype=np.float16)
                        grown[:row] = self._mat
                        self._mat = grown
                    self._ids.append(mid)
                    self._pos[mid] = row
                self._mat[row] = vec
            self._dirty = self._dirty or bool(vectors)

    def add_texts(self, texts: dict[str, str]) -> None:
        """Embed ``texts`` (memory id -> content) and add them."""
        ids = [m for m in texts if m not in self._pos]
        if ids:
            vecs = self._embed([texts[m] for m in ids])
            self.add(dict(zip(ids, vecs, strict=True)))

    def add_soon(self, memory_id: str, content: str) -> None:
        """Embed a new memory's content on a worker thread (after its write committed)."""
        with self._lock:
            self._pending[memory_id] = content
            if self._draining:
                return
            self._draining = True
        if self._submit is None:
            self._drain()
        else:
            self._submit(self._drain)

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = dict(list(self._pending.items())[:WARM_BATCH])
                for m in batch:
                    del self._pending[m]
                if not batch:
                    self._draining = False
                    return
            try:
                self.add_texts(batch)
            except Exception as exc:  # the lazy fill recomputes it on the first read
                log.warning("embedding new memories failed: %s", exc)

    def missing(self, ids: Iterable[str]) -> list[str]:
        return [m for m in ids if m not in self._pos]

    def fill(self, ids: list[str]) -> None:
        """Embed the memories of ``ids`` without a vector (read from the store)."""
        todo = self.missing(ids)
        if todo:
            self.add_texts(self._read(todo))

    def warm(self, ids: list[str], stop: threading.Event | None = None) -> int:
        """Embed every memory of ``ids`` without a vector, a batch at a time (a background start-up job)."""
        todo = self.missing(ids)
        for start in range(0, len(todo), WARM_BATCH):
            if stop is not None and stop.is_set():
                break
            self.fill(todo[start: start + WARM_BATCH])
        return len(todo)

    # -- reads -------------------------------------------------------------------------
    def relevance(self, qvec: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """Cosine of each memory's content with ``qvec``; memories beyond ``LAZY_MAX`` unembedded
        ones score 0 (the warm-up embeds them)."""
        ids = list(dict.fromkeys(ids))
        todo = self.missing(ids)
        if todo:
            try:
                self.fill(todo[:LAZY_MAX])
            except Exception as exc:  # a read that fails leaves relevance at 0, never the call
                log.warning("embedding memories for relevance failed: %s", exc)
        with self._lock:
            rows = [(m, self._pos[m]) for m in ids if m in self._pos]
            if not rows:
                return {m: 0.0 for m in ids}
            mat = self._mat[np.fromiter((r for _, r in rows), dtype=np.int64, count=len(rows))].astype(np.float32)
        # einsum, not BLAS: a memory's score does not depend on which others are asked with it
        scores = np.einsum("ij,j->i", mat, np.asarray(qvec, dtype=np.float32))
        out = {m: 0.0 for m in ids}
        out.update({m: float(s) for (m, _), s in zip(rows, scores.tolist(), strict=True)})
        return out

    # -- the file beside the store -----------------------------------------------------
    def load(self) -> int:
        """Read the saved vectors when they were made by this model; the count read."""
        if self.path is None or not self.path.is_file():
            return 0
        try:
            with np.load(self.path, allow_pickle=False) as f:
                if str(f["fingerprint"]) != self.fingerprint or f["vectors"].shape[1:] != (self.dim,):
                    log.info("memory vectors in %s are another model's; recomputing", self.path.name)
                    return 0
                ids = [str(x) for x in f["ids"]]
                mat = np.asarray(f["vectors"], dtype=np.float16)
        except Exception as exc:  # a damaged file is recomputed, never an open failure
            log.warning("ignoring unreadable %s: %s", self.path.name, exc)
            return 0
        with self._lock:
            self._mat = np.zeros((max(1024, len(ids) * 5 // 4), self.dim), dtype=np.float16)
            self._mat[: len(ids)] = mat
            self._ids = ids
            self._pos = {m: i for i, m in enumerate(ids)}
            self._dirty = False
        return len(ids)

    def save(self, keep: Callable[[str], bool] | None = None) -> None:
        """Write the vectors (of the memories ``keep`` accepts) atomically, if anything changed."""
        if self.path is None or not self._dirty:
            return
        with self._lock:
            rows = [(m, i) for m, i in self._pos.items() if keep is None or keep(m)]
            ids = np.array([m for m, _ in rows], dtype=str)
            mat = self._mat[[i for _, i in rows]] if rows else np.zeros((0, self.dim), dtype=np.float16)
            self._dirty = False
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                np.savez(f, fingerprint=np.array(self.fingerprint), ids=ids, vectors=mat)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not save %s: %s", self.path.name, exc)
            tmp.unlink(missing_ok=True)
