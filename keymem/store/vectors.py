"""Key vectors: stored in the database (``KeyVec``), searched exactly or through its HNSW index.

Which path runs when (measured on 2 cores, see docs/BENCHMARKS.md): an exact numpy scan
over a per-namespace cached matrix costs ~0.2 ms at 10k keys and ~8 ms at 100k, while the
engine's HNSW top-10 costs ~6 ms / ~25 ms with recall ~0.5 at default settings, and building
the index costs minutes at 100k. So the exact scan serves every store below
``KEYMEM_VECTOR_INDEX_MIN_KEYS`` keys (default 200k); at or above it the HNSW index is
built once and searched with namespace filtering and oversampling, and the cache is
dropped to save memory.

The HNSW index lives in LadybugDB's VECTOR extension, which is not bundled with the
engine: it is downloaded once (``keymem extensions download``) into the user's extension
directory. Without it the exact scan serves every size (:func:`vector_extension` says which
path runs; ``keymem doctor`` shows it), so keymem never needs the network.

Engine quirks handled here: an indexed vector cannot be ``SET`` (vectors are only
inserted and deleted), CREATE_VECTOR_INDEX runs only outside explicit transactions, and an
indexed table must never become empty (a sentinel row stays in the table).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from keymem.store import changes
from keymem.store.db import Store, Tx

log = logging.getLogger("keymem.store")

SENTINEL = "__sentinel__"
INDEX_NAME = "keyvec_hnsw"


GROWTH = 1.25  # a block's matrix grows by a quarter (doubling left up to half of it unused)
HEADROOM = 1 / 16  # spare rows a block keeps after a load, for the writes that follow
LOAD_PAGE_KEYS = 8192  # vectors per page of the cache load


@dataclass
class _Block:
    """The vectors of one namespace, grown by a quarter when full; deletes swap with the last row."""

    dim: int
    ids: list[str] = field(default_factory=list)
    mat: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    pos: dict[str, int] = field(default_factory=dict)
    growth: float = GROWTH  # 2 while a load streams the rows in (then trimmed)

    def __post_init__(self) -> None:
        self.mat = np.zeros((16, self.dim), dtype=np.float32)

    def add(self, key_id: str, vec: np.ndarray) -> None:
        if key_id in self.pos:
            self.mat[self.pos[key_id]] = vec
            return
        n = len(self.ids)
        if n == self.mat.shape[0]:
            self._resize(max(16, int(n * self.growth)))
        self.mat[n] = vec
        self.ids.append(key_id)
        self.pos[key_id] = n

    def _resize(self, rows: int) -> None:
        n = len(self.ids)
        resized = np.zeros((max(rows, n), self.dim), dtype=np.float32)
        resized[:n] = self.mat[:n]
        self.mat = resized

    def trim(self) -> None:
        """Drop the spare rows growth left, keeping ``HEADROOM`` (after a load)."""
        n = len(self.ids)
        self._resize(max(16, n + int(n * HEADROOM)))
        self.growth = GROWTH

    def remove(self, key_id: str) -> None:
        i = self.pos.pop(key_id, None)
        if i is None:
            return
        last = len(self.ids) - 1
        if i != last:
            moved = self.ids[last]
            self.ids[i] = moved
            self.mat[i] = self.mat[last]
            self.pos[moved] = i
        self.ids.pop()

    def search(self, vec: np.ndarray, k: int, min_score: float) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0:
            return []
        scores = self.mat[:n] @ vec
        top = np.argpartition(-scores, k)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in top if scores[i] >= min_score]


def load_vector(execute: Callable[[str], object]) -> str | None:
    """Load LadybugDB's VECTOR extension through ``execute`` (a store's ``raw``, a connection's
    ``execute``) if it is installed; None if it loads, else why not (one line)."""
    try:
        execute("LOAD EXTENSION VECTOR")
        return None
    except Exception as exc:  # not installed (offline), or built for another engine version
        from keymem.store.engine import engine_message

        return engine_message(exc)


def vector_extension(store: Store) -> str | None:
    """:func:`load_vector` on the store (kept loaded if the store is opened again in process)."""
    return load_vector(lambda _statement: store.load_extension("VECTOR"))


class KeyVectors:
    """The key-vector space of one store."""

    def __init__(self, store: Store, dim: int, *, index_min_keys: int = 200_000) -> None:
        self.store = store
        self.dim = dim
        self.index_min_keys = index_min_keys
        self._lock = threading.RLock()
        self._blocks: dict[str, _Block] = {}
        self._count = 0
        self.indexed = False
        self.extension_missing: str | None = None  # why the HNSW path is unavailable, once it was wanted

    @property
    def path(self) -> str:
        """Which search path serves, in words (``keymem doctor``)."""
        if self.indexed:
            return "HNSW index (VECTOR extension)"
        if not self.store.capabilities.vector_index:
            return f"exact scan ({self._count} keys; keymem builds no vector index on {self.store.capabilities.engine})"
        if self.extension_missing:
            return (f"exact scan at {self._count} keys; the HNSW index is used from {self.index_min_keys} keys "
                    f"but the VECTOR extension is not available ({self.extension_missing}); "
                    "`keymem extensions download` installs it")
        return f"exact scan ({self._count} keys; the HNSW index is used from {self.index_min_keys})"

    # -- lifecycle -----------------------------------------------------------------
    def create_table(self) -> None:
        with self.store.write() as tx:
            for stmt in self.store.script("vectors/create_table", dim=self.dim):
                tx.raw(stmt)
            if not tx.raw("MATCH (v:KeyVec) WHERE v.id = $id RETURN v.id AS id", {"id": SENTINEL}):
                unit = [1.0] + [0.0] * (self.dim - 1)
                tx.run("vectors/insert", id=SENTINEL, namespace="", vec=unit)

    def drop_table(self) -> None:
        with self.store.exclusive() as conn:
            if self._has_index(conn) and vector_extension(self.store) is None:
                conn.run("vectors/drop_index", {})
            for stmt in self.store.script("vectors/drop_table"):
                conn.raw(stmt)
        with self._lock:
            self._blocks.clear()
            self._count = 0
            self.indexed = False

    def _has_index(self, conn: object | None = None) -> bool:
        rows = self.store.query("vectors/indexes")
        return any(r["table_name"] == "KeyVec" and r["index_name"] == INDEX_NAME for r in rows)

    def _index_usable(self) -> bool:
        """Whether the HNSW path can serve: the VECTOR extension loads (else the exact scan serves)."""
        if not self.store.capabilities.vector_index:
            return False
        self.extension_missing = vector_extension(self.store)
        if self.extension_missing:
            log.warning("the key vectors are searched by an exact scan: the VECTOR extension is not available "
                        "(%s); `keymem extensions download` installs it", self.extension_missing)
        return self.extension_missing is None

    def load(self) -> None:
        """Count the stored vectors and choose the search path; fill the cache for the exact path."""
        n = self.store.query("vectors/count")[0]["n"]
        with self._lock:
            self._count = n
            self.indexed = self._has_index()
            usable = (n >= self.index_min_keys or self.indexed) and self._index_usable()
            if n >= self.index_min_keys and usable:
                self.ensure_index()
                return
            self.indexed = self.indexed and usable  # an index the engine cannot load is not searched
            if self.indexed:  # the store shrank below the crossover: the exact scan is faster again
                with self.store.exclusive() as conn:
                    conn.run("vectors/drop_index", {})
                self.indexed = False
            self._blocks.clear()
            # Streamed (50k keys x 384 floats as Python lists would hold ~500 MB at once) in pages
            # (the result of one statement over every vector sits in the buffer pool).
            for lo, hi in self.store.offset_ranges("vectors/offset_end", page=LOAD_PAGE_KEYS):
                for row in self.store.stream("vectors/range", lo=lo, hi=hi):
                    self._block(row["namespace"], growth=2.0).add(row["id"], np.asarray(row["vec"], dtype=np.float32))
            for block in self._blocks.values():
                block.trim()

    def ensure_index(self) -> None:
        with self._lock:
            if not self.indexed:
                log.info("building the HNSW key index over %d keys (once)", self._count)
                with self.store.exclusive() as conn:
                    if not self._has_index():
                        conn.run("vectors/create_index", {})
                self.indexed = True
            self._blocks.clear()

    def _block(self, namespace: str, growth: float = GROWTH) -> _Block:
        block = self._blocks.get(namespace)
        if block is None:
            block = self._blocks[namespace] = _Block(self.dim, growth=growth)
        return block

    # -- writes (inside the caller's transaction) -------------------------------------
    def insert(self, tx: Tx, key_id: str, namespace: str, vec: np.ndarray) -> None:
        vec = np.asarray(vec, dtype=np.float32)
        if vec.shape != (self.dim,):
            raise ValueError(f"key vector has shape {vec.shape}, expected ({self.dim},)")
        tx.run("vectors/insert", id=key_id, namespace=namespace, vec=vec.tolist())
        tx.after_commit(lambda: self._cached_add(key_id, namespace, vec))
        changes.note(self.store, tx, keys=[key_id])

    def delete(self, tx: Tx, key_id: str, namespace: str) -> None:
        tx.run("vectors/delete", id=key_id)
        tx.after_commit(lambda: self._cached_remove(key_id, namespace))
        changes.note(self.store, tx, keys=[key_id])

    def refresh(self, key_ids: list[str]) -> None:
        """Re-read some keys' vectors from the store (another daemon's writes): each one found is held,
        each one gone is dropped. Safe to repeat."""
        if not key_ids or self.indexed:  # the engine's index serves: nothing held here
            return
        found = {r["id"]: r for r in self.store.query("vectors/of_keys", ids=sorted(set(key_ids)))}
        with self._lock:
            for key_id in key_ids:
                row = found.get(key_id)
                known = next((ns for ns, block in self._blocks.items() if key_id in block.pos), None)
                if row is None:
                    if known is not None:
                        self._cached_remove(key_id, known)
                    continue
                if known is not None and known != row["namespace"]:
                    self._cached_remove(key_id, known)
                    known = None
                if known is None:
                    self._cached_add(key_id, row["namespace"], np.asarray(row["vec"], dtype=np.float32))

    def _cached_add(self, key_id: str, namespace: str, vec: np.ndarray) -> None:
        with self._lock:
            self._count += 1
            if not self.indexed:
                self._block(namespace).add(key_id, vec)

    def _cached_remove(self, key_id: str, namespace: str) -> None:
        with self._lock:
            self._count = max(0, self._count - 1)
            block = self._blocks.get(namespace)
            if block is not None:
                block.remove(key_id)

    def maybe_switch(self) -> None:
        """Move to the HNSW path once the store crosses the threshold (outside any transaction)."""
        if (not self.indexed and self._count >= self.index_min_keys and self.extension_missing is None
                and self._index_usable()):
            self.ensure_index()

    # -- reads -----------------------------------------------------------------------
    def search(self, vec: np.ndarray, namespace: str, k: int, min_score: float = -1.0) -> list[tuple[str, float]]:
        """Top-k keys of a namespace by cosine (vectors are unit length), best first."""
        vec = np.asarray(vec, dtype=np.float32)
        with self._lock:
            if not self.indexed:
                block = self._blocks.get(namespace)
                return block.search(vec, k, min_score) if block else []
        oversample = min(max(k * 8, 64), max(self._count, 1))
        rows = self.store.query("vectors/query_index", vec=vec.tolist(), k=oversample, namespace=namespace)
        return [(r["id"], float(r["score"])) for r in rows[:k] if r["score"] >= min_score]

    def get(self, ids: list[str]) -> dict[str, np.ndarray]:
        rows = self.store.query("vectors/get", ids=ids)
        return {r["id"]: np.asarray(r["vec"], dtype=np.float32) for r in rows}

    def __len__(self) -> int:
        return self._count
