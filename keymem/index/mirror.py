"""An in-memory copy of what ranking reads: memory metadata, key identity and the graph's edges.

Recall touches hundreds of memories and keys per query; asking Kuzu for each of those sets
costs 2-20 ms a statement once the tables are large (``WHERE id IN $list`` scans), while
the same numbers held in arrays cost microseconds. The copy is kept exact: every write
transaction names the memories and keys it touched (``touch``), and after the commit those rows
are read back from the store (the source of truth) and replaced here. Link weights changed by
Hebbian updates are applied directly from the values the update statement returned. Where
several daemons write one store, the others' writes arrive through their change records
(``store/changes.py``), and ``refresh`` re-reads the ids they name (``memory/catchup.py``).

What is held (content is not: it is read from the store only for what is shown):

* memories: namespace, active, expires_at, depth, last_confirmed_at, created_at,
  decay profile, confirmation count (numpy columns by slot), and the keys each is linked to;
* keys: namespace, text, type, and the memories each is linked to;
* RELATED_TO edges, symmetric, with weights.

Layout (sized for millions of memories): links are CSR arrays both ways, with rows a write
changed in growable overlays until ``_compact`` merges them back; memory ids loaded at open are
one sorted byte array (``_Ids``). Slots of deleted memories and keys are left empty (not
reused) until the next open. Measurements: docs/design.md, "The graph mirror".
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from array import array
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.decay import DECAY_PROFILES, rank_factors
from keymem.index import sorted_ids, variants
from keymem.store import changes
from keymem.store.db import columns
from keymem.text.tokenize import normalize_text

if TYPE_CHECKING:
    from keymem.settings import Settings
    from keymem.store.db import Store, Tx

log = logging.getLogger("keymem.memory")

NO_EXPIRY = np.inf
# Refreshes of up to this many rows use one-id statements (primary-key lookups, ~0.5-3 ms per
# memory at 100k); more use one UNWIND statement, which Kuzu plans as a scan (~40 ms at 100k).
SINGLE_LOOKUPS = 8
LINK_PAGE_KEYS = 8192  # keys whose links one page of the load reads
COMPACT_MIN, COMPACT_RATIO = 50_000, 0.25  # overlay rows (floor, share of slots) that start a _compact
HIT_CACHE = 65_536  # loaded ids remembered after a binary search (see _Ids)
_TX_KEY = "mirror"


_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_D = np.zeros(0, dtype=np.float64)
Links = tuple["np.ndarray | array[int]", "np.ndarray | array[float]"]  # (slots, weights) of one row


def _as_arrays(slots: np.ndarray | array[int], weights: np.ndarray | array[float]) -> tuple[array[int], array[float]]:
    """Growable copies of one row's links (a CSR slice or an overlay)."""
    a, w = array("i"), array("d")
    a.frombytes(np.asarray(slots, dtype=np.int32).tobytes())
    w.frombytes(np.asarray(weights, dtype=np.float64).tobytes())
    return a, w


def _csr(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, cols, weights)`` grouping edges by ``rows`` (0..n-1), stable within a row."""
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.int32), weights[order].astype(np.float64)


class _Ids:
    """Memory id <-> slot.

    The ids loaded at open are one sorted array of UTF-8 bytes, slot = position, found by binary
    search: ~22 bytes an id, where a ``str`` in a dict and a list cost ~150 (1M memories: ~20 MB
    against ~150 MB). Ids added after the load get the next slots through a dict; a removed slot
    is marked gone and never reused.
    """

    def __init__(self, base: np.ndarray | None = None) -> None:
        self.base = base if base is not None else np.zeros(0, dtype="S1")
        self.gone = np.zeros(len(self.base), dtype=bool)
        self.n_gone = 0
        self.new: dict[str, int] = {}
        self.new_ids: list[str | None] = []
        # Loaded ids found lately: a binary search costs ~2 us, and one recall asks for the same
        # few hundred memories several times (ranking, keys, paths). Bounded: cleared when full.
        self._hits: dict[str, int] = {}

    def _base_slot(self, mid: str) -> int:
        i = sorted_ids.find(self.base, mid)
        return i if i >= 0 and not self.gone[i] else -1

    def get(self, mid: str) -> int | None:
        m = self.new.get(mid)
        if m is not None:
            return m
        m = self._hits.get(mid)
        if m is not None:
            return m
        i = self._base_slot(mid)
        if i < 0:
            return None
        if len(self._hits) >= HIT_CACHE:
            self._hits.clear()
        self._hits[mid] = i
        return i

    def get_many(self, mids: list[str]) -> list[int | None]:
        """``get`` of many ids, the loaded ones found in one vectorised search."""
        out: list[int | None] = [self.new.get(m) for m in mids]
        todo = [i for i, m in enumerate(out) if m is None]
        if not todo:
            return out
        pos = sorted_ids.find_many(self.base, [mids[i] for i in todo])
        for i, p in zip(todo, pos.tolist(), strict=True):
            if p >= 0 and not self.gone[p]:
                out[i] = p
        return out

    def __contains__(self, mid: str) -> bool:
        return self.get(mid) is not None

    def id(self, m: int) -> str | None:
        n = len(self.base)
        if m < n:
            return None if self.gone[m] else self.base[m].decode()
        return self.new_ids[m - n]

    def ids(self, slots: np.ndarray) -> list[str | None]:
        """``id`` of many slots; loaded ones are read from the array in one step."""
        n = len(self.base)
        if slots.size and int(slots.max()) < n and not self.gone[slots].any():
            return sorted_ids.decode(self.base, slots)  # type: ignore[return-value]
        return [self.id(m) for m in slots.tolist()]

    def add(self, mid: str) -> int:
        m = self.new[mid] = len(self.base) + len(self.new_ids)
        self.new_ids.append(mid)
        return m

    def remove(self, mid: str) -> int | None:
        m = self.new.pop(mid, None)
        if m is not None:
            self.new_ids[m - len(self.base)] = None
            return m
        i = self._base_slot(mid)
        if i < 0:
            return None
        self._hits.pop(mid, None)
        self.gone[i] = True
        self.n_gone += 1
        return i

    def __len__(self) -> int:
        return len(self.base) - self.n_gone + len(self.new)

    def slots(self) -> int:
        return len(self.base) + len(self.new_ids)

    def items(self) -> list[tuple[str, int]]:
        out = [(k.decode(), i) for i, k in enumerate(self.base.tolist()) if not self.gone[i]]
        out.extend(self.new.items())
        return out


NAME_WORD = re.compile(r"[^\W\d_][\w'’.-]*")


class GraphMirror:
    """Exact, thread-safe copy of the ranking-relevant part of the graph (see module docstring)."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self._half_lives = np.array(
            [settings.half_life_days(p) or np.inf for p in DECAY_PROFILES], dtype=np.float64)
        self._profile_code = {p: i for i, p in enumerate(DECAY_PROFILES)}
        self._lock = threading.RLock()
        # One refresh at a time, from its reads to its last change: two refreshes of one row (a commit's,
        # and a catch-up on another daemon's write) apply in the order they read, so the newer read wins.
        self._refreshing = threading.Lock()
        self._stale = False
        self.failures = 0  # refreshes that failed and forced a full reload (should stay 0)
        self.compactions = 0  # overlay merges since the open (see _compact)
        self._reset()

    # -- layout ------------------------------------------------------------------------
    def _reset(self, capacity: int = 1024) -> None:
        self._ns: dict[str, int] = {}
        self._ns_names: list[str] = []
        # memories
        self._ids = _Ids()
        self._m_ns = np.full(capacity, -1, dtype=np.int32)
        self._m_active = np.zeros(capacity, dtype=bool)
        self._m_expires = np.full(capacity, NO_EXPIRY)
        self._m_depth = np.zeros(capacity)
        self._m_confirmed = np.zeros(capacity)
        self._m_created = np.zeros(capacity)
        self._m_profile = np.zeros(capacity, dtype=np.int8)
        self._m_confirmations = np.zeros(capacity, dtype=np.int64)
        self._related: dict[int, dict[int, float]] = {}
        # keys
        self._kid: dict[str, int] = {}
        self._kids: list[str | None] = []
        self._k_ns: list[int] = []
        self._k_text: list[str] = []
        self._k_type: list[str] = []
        self._parts: dict[tuple[int, str], set[int]] | None = None  # see name_part_keys (built on first use)
        self._forms: dict[tuple[int, str], set[int]] | None = None  # see variant_keys (built on first use)
        self._k_norms: dict[int, tuple[str, str]] = {}  # key slot -> (text, normalised text), see _norm
        # Links, both ways. As loaded: two CSR layouts (by key: memory slots + weights; by memory:
        # key slots + weights), three flat arrays each instead of two small arrays per row (at 1M
        # memories the per-row arrays alone were ~300 MB). A row a write changes moves to a growable
        # overlay and is read from there; link weights are updated in place wherever the row lives.
        self._kb: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(1, np.int64), _EMPTY_I, _EMPTY_D)
        self._mb: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(1, np.int64), _EMPTY_I, _EMPTY_D)
        self._k_over: dict[int, tuple[array[int], array[float]]] = {}
        self._m_over: dict[int, tuple[array[int], array[float]]] = {}

    def _ns_code(self, namespace: str) -> int:
        code = self._ns.get(namespace)
        if code is None:
            code = self._ns[namespace] = len(self._ns_names)
            self._ns_names.append(namespace)
        return code

    def _grow(self, need: int) -> None:
        cap = len(self._m_ns)
        if need <= cap:
            return
        new = max(need, cap * 2)

        def ext(a: np.ndarray, fill: Any) -> np.ndarray:
            out = np.full(new, fill, dtype=a.dtype)
            out[:cap] = a
            return out

        self._m_ns = ext(self._m_ns, -1)
        self._m_active = ext(self._m_active, False)
        self._m_expires = ext(self._m_expires, NO_EXPIRY)
        self._m_depth = ext(self._m_depth, 0.0)
        self._m_confirmed = ext(self._m_confirmed, 0.0)
        self._m_created = ext(self._m_created, 0.0)
        self._m_profile = ext(self._m_profile, 0)
        self._m_confirmations = ext(self._m_confirmations, 0)

    # -- links --------------------------------------------------------------------------
    @staticmethod
    def _row(base: tuple[np.ndarray, np.ndarray, np.ndarray], over: dict[int, tuple[array[int], array[float]]],
             i: int) -> Links:
        got = over.get(i)
        if got is not None:
            return got
        ptr, cols, w = base
        if i + 1 >= len(ptr):
            return _EMPTY_I, _EMPTY_D
        s, e = int(ptr[i]), int(ptr[i + 1])
        return cols[s:e], w[s:e]

    def _k_links(self, k: int) -> Links:
        """(memory slots, weights) of key ``k``."""
        return self._row(self._kb, self._k_over, k)

    def _m_links(self, m: int) -> Links:
        """(key slots, weights) of memory ``m``."""
        return self._row(self._mb, self._m_over, m)

    def _k_mut(self, k: int) -> tuple[array[int], array[float]]:
        got = self._k_over.get(k)
        if got is None:
            got = self._k_over[k] = _as_arrays(*self._k_links(k))
        return got

    def _m_mut(self, m: int) -> tuple[array[int], array[float]]:
        got = self._m_over.get(m)
        if got is None:
            got = self._m_over[m] = _as_arrays(*self._m_links(m))
        return got

    @staticmethod
    def _set_weight(row: Links, col: int, weight: float) -> bool:
        slots, weights = row
        if isinstance(slots, array):
            try:
                weights[slots.index(col)] = weight
            except ValueError:
                return False
            return True
        found = np.flatnonzero(slots == col)
        if not found.size:
            return False
        weights[int(found[0])] = weight  # a view into the CSR weights: updated in place
        return True

    # -- loading ---------------------------------------------------------------------------
    def load(self) -> None:
        """Read everything from the store (on open, after an import, or after a failed refresh).

        Read in node-offset pages (``Store.offset_ranges``): one collect over a large store does
        not fit Kuzu's buffer pool. Links are read grouped by key, as memory node offsets, and
        turned into the two CSR layouts with numpy (1M memories, 4.3M links: ~2 s).
        """
        with self.store.no_writes():  # one consistent picture: no commit (or its refresh) in between
            mem, ns_code = self._read_memory_columns()
            offsets = mem.get("offsets", np.zeros(0, dtype=np.int64))
            keys: dict[str, list[Any]] = {}
            for lo, hi in self.store.offset_ranges("key/offset_end"):
                for name, values in columns(self.store.query("mirror/keys_range", lo=lo, hi=hi)).items():
                    keys.setdefault(name, []).extend(values)
            kid_of = {k: i for i, k in enumerate(keys.get("ids", ()))}
            # Slots in id order (see _Ids): the page columns are permuted, offsets mapped to slots.
            ids = mem.get("ids", np.zeros(0, dtype="S1"))
            order = np.argsort(ids, kind="stable") if len(ids) else np.zeros(0, dtype=np.int64)
            slot_of = np.full(int(offsets.max()) + 1 if len(offsets) else 0, -1, dtype=np.int64)
            slot_of[offsets[order]] = np.arange(len(order))
            link_keys, link_mems, link_w = array("i"), array("q"), array("d")
            # Fewer keys a page than elsewhere: a page's links arrive as Python numbers (~0.5M a page at 1M)
            for lo, hi in self.store.offset_ranges("key/offset_end", page=LINK_PAGE_KEYS):
                for row in self.store.query("mirror/key_links_range", lo=lo, hi=hi):
                    link_keys.extend([kid_of[row["key"]]] * len(row["memories"]))
                    link_mems.extend(row["memories"])
                    link_w.extend(row["weights"])
            rel = columns(self.store.query("mirror/related_all"))
            k_of = np.frombuffer(link_keys, dtype=np.int32)
            link_offsets = np.frombuffer(link_mems, dtype=np.int64)
            m_of = np.full(len(link_offsets), -1, dtype=np.int64)
            known = link_offsets < len(slot_of)  # past the last memory read: a dangling link (below)
            m_of[known] = slot_of[link_offsets[known]]
            w = np.frombuffer(link_w, dtype=np.float64)
            dangling = m_of < 0
            if dangling.any():
                # After a crash, Kuzu 0.11.3's log replay can leave LINKS edges whose target memory
                # does not exist (its offset can lie past every memory the scan returned); only a
                # statement that reads no property of the memory returns them (every other read
                # skips them), and deleted offsets are not reused. Skipped
                # here, so the mirror holds what every other read of the store sees.
                log.warning("mirror: %d links to memories that no longer exist are ignored", int(dangling.sum()))
                k_of, m_of, w = k_of[~dangling], m_of[~dangling], w[~dangling]
            self._install(order, mem, ns_code, keys, kid_of, (k_of, m_of, w), rel)

    def _read_memory_columns(self) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """Every memory's columns as numpy arrays, in page order, and the namespace codes used.

        Each page becomes arrays before the next is read: a whole table of Python floats and
        strings (10M objects at 1M memories) would stay in the allocator after the load.
        """
        ns_code: dict[str, int] = {}
        parts: dict[str, list[np.ndarray]] = {}
        profile = self._profile_code
        for lo, hi in self.store.offset_ranges("memory/offset_end"):
            page = columns(self.store.query("mirror/memories_range", lo=lo, hi=hi))
            n = len(page["ids"])
            if not n:
                continue
            for name, arr in (
                ("offsets", np.asarray(page["offsets"], dtype=np.int64)),
                ("ids", sorted_ids.encode(page["ids"])),
                ("ns", np.fromiter((ns_code.setdefault(x, len(ns_code)) for x in page["namespaces"]),
                                   dtype=np.int32, count=n)),
                ("active", np.asarray(page["active"], dtype=bool)),
                ("expires", np.asarray(page["expires"], dtype=np.float64)),
                ("depths", np.asarray(page["depths"], dtype=np.float64)),
                ("confirmed", np.asarray(page["confirmed"], dtype=np.float64)),
                ("created", np.asarray(page["created"], dtype=np.float64)),
                ("profiles", np.fromiter((profile.get(p, 1) for p in page["profiles"]), dtype=np.int8, count=n)),
                ("confirmations", np.asarray(page["confirmations"], dtype=np.int64)),
            ):
                parts.setdefault(name, []).append(arr)
            del page
        return {name: np.concatenate(arrs) for name, arrs in parts.items()}, ns_code

    def _install(self, order: np.ndarray, mem: dict[str, np.ndarray], ns_code: dict[str, int],
                 keys: dict[str, list[Any]], kid_of: dict[str, int],
                 links: tuple[np.ndarray, np.ndarray, np.ndarray], rel: dict[str, list[Any]]) -> None:
        """Install what ``load`` read; memory columns are in page order, ``order`` sorts them by id."""
        k_of, m_of, w = links
        with self._lock:
            n = len(order)
            self._reset(max(1024, int(n * 1.25)))
            self._ns, self._ns_names = dict(ns_code), list(ns_code)  # codes in order of first sight
            if n:
                self._ids = _Ids(mem["ids"][order])
                self._m_ns[:n] = mem["ns"][order]
                self._m_active[:n] = mem["active"][order]
                exp = mem["expires"][order]
                self._m_expires[:n] = np.where(exp < 0, NO_EXPIRY, exp)
                self._m_depth[:n] = mem["depths"][order]
                self._m_confirmed[:n] = mem["confirmed"][order]
                self._m_created[:n] = mem["created"][order]
                self._m_profile[:n] = mem["profiles"][order]
                self._m_confirmations[:n] = mem["confirmations"][order]
            self._kids = list(keys.get("ids", ()))
            self._kid = kid_of
            self._k_ns = [self._ns_code(s) for s in keys.get("namespaces", ())]
            self._k_text = list(keys.get("texts", ()))
            self._k_type = [sys.intern(t) for t in keys.get("types", ())]  # a few distinct values
            self._kb = _csr(k_of, m_of, w, len(self._kids))
            self._mb = _csr(m_of, k_of, w, n)
            for a, b, rw in zip(rel.get("src", ()), rel.get("dst", ()), rel.get("weights", ()), strict=True):
                ma, mb = self._ids.get(a), self._ids.get(b)
                if ma is not None and mb is not None:
                    self._set_related(ma, mb, rw)
            self._stale = False

    def _set_related(self, a: int, b: int, w: float) -> None:
        self._related.setdefault(a, {})[b] = w
        self._related.setdefault(b, {})[a] = w

    # -- keeping in step with writes ----------------------------------------------------------
    def touch(self, tx: Tx, *, memories: Iterable[str] = (), keys: Iterable[str] = ()) -> None:
        """Record rows a write transaction changed; they are re-read once it commits."""
        memories, keys = list(memories), list(keys)
        pending: tuple[set[str], set[str]] | None = tx.scratch.get(_TX_KEY)
        if pending is None:
            pending = tx.scratch[_TX_KEY] = (set(), set())
            tx.after_commit(lambda: self.refresh(pending[0], pending[1]))
        pending[0].update(memories)
        pending[1].update(keys)
        changes.note(self.store, tx, memories=memories, keys=keys)  # other daemons on a shared store

    def set_weights(self, tx: Tx, rows: Iterable[dict[str, Any]]) -> None:
        """Apply link weights a committed statement returned (``key_id``, ``memory_id``, ``weight``; read
        once the scope committed)."""
        def apply() -> None:
            with self._lock:
                for r in rows:
                    k, m = self._kid.get(r["key_id"]), self._ids.get(r["memory_id"])
                    if k is None or m is None:
                        continue
                    if not (self._set_weight(self._k_links(k), m, r["weight"])
                            and self._set_weight(self._m_links(m), k, r["weight"])):
                        log.error("mirror: link %s -> %s missing; reloading on next use", r["key_id"], r["memory_id"])
                        self.failures += 1
                        self._stale = True
        tx.after_commit(apply)

    def refresh(self, memory_ids: Iterable[str], key_ids: Iterable[str]) -> None:
        """Re-read the given rows from the store; rows gone from it are removed here."""
        try:
            with self._refreshing:
                self._refresh(sorted(set(memory_ids)), sorted(set(key_ids)))
        except Exception:
            log.exception("mirror refresh failed; reloading it on next use")
            self.failures += 1
            self._stale = True

    def _refresh(self, memory_ids: list[str], key_ids: list[str]) -> None:
        mem_rows, rel_rows = self._read_memories(memory_ids)
        linked = {k for r in mem_rows for k in r["keys"] if k is not None}
        with self._lock:
            wanted = set(key_ids) | {k for k in linked if k not in self._kid}
        key_rows = self._read_keys(sorted(wanted))
        with self._lock:
            found_keys = set()
            for r in key_rows:
                found_keys.add(r["id"])
                self._upsert_key(r)
            found_mems = set()
            for r in mem_rows:
                found_mems.add(r["id"])
                self._upsert_memory(r)
            for mid in memory_ids:
                if mid not in found_mems:
                    self._remove_memory(mid)
            for kid in key_ids:
                if kid not in found_keys:
                    self._remove_key(kid)
            for mid in found_mems:
                m = self._ids.get(mid)
                if m is None:
                    continue
                for other in list(self._related.get(m, ())):
                    self._related.get(other, {}).pop(m, None)
                self._related.pop(m, None)
            for r in rel_rows:
                a, b = self._ids.get(r["src"]), self._ids.get(r["dst"])
                if a is not None and b is not None:
                    self._set_related(a, b, r["weight"])
            if len(self._m_over) + len(self._k_over) > max(COMPACT_MIN, COMPACT_RATIO * self._ids.slots()):
                self._compact()

    def _compact(self) -> None:
        """Merge the overlay rows back into the CSR arrays (lock held).

        Rows written since the open live in overlays of two small arrays each (~250 bytes a
        memory); a daemon that writes all day would hold them until its next open. The key side
        is rebuilt row by row (tens of thousands of keys), the memory side is its transpose, laid
        out as a fresh load lays it (a memory's keys in key-slot order). 1M memories: ~1 s.
        """
        n_keys = len(self._kids)
        slots: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        lengths = np.zeros(n_keys, dtype=np.int64)
        for k in range(n_keys):
            ks, kw = self._k_links(k)
            slots.append(np.asarray(ks, dtype=np.int32))
            weights.append(np.asarray(kw, dtype=np.float64))
            lengths[k] = len(ks)
        mem = np.concatenate(slots) if slots else _EMPTY_I
        w = np.concatenate(weights) if weights else _EMPTY_D
        key_of = np.repeat(np.arange(n_keys, dtype=np.int32), lengths)
        ptr = np.zeros(n_keys + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        self._kb = (ptr, mem, w)
        self._mb = _csr(mem, key_of, w, self._ids.slots())
        self._k_over.clear()
        self._m_over.clear()
        self.compactions += 1

    def _read_memories(self, ids: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Rows (with ``keys``/``weights`` lists) and RELATED_TO edges of some memories."""
        if not ids:
            return [], []
        if len(ids) > SINGLE_LOOKUPS:
            return self.store.query("mirror/memories", ids=ids), self.store.query("mirror/related", ids=ids)
        rows, rel = [], []
        for mid in ids:
            found = self.store.query("mirror/memory", id=mid)
            if not found:
                continue
            row = dict(found[0])
            links = self.store.query("mirror/memory_links", id=mid)
            row["keys"] = [r["key_id"] for r in links]
            row["weights"] = [r["weight"] for r in links]
            rows.append(row)
            rel.extend(self.store.query("mirror/memory_related", id=mid))
        return rows, rel

    def _read_keys(self, ids: list[str]) -> list[dict[str, Any]]:
        if len(ids) > SINGLE_LOOKUPS:
            return self.store.query("mirror/keys", ids=ids)
        return [r for kid in ids for r in self.store.query("mirror/key", id=kid)]

    def _upsert_key(self, r: dict[str, Any]) -> None:
        k = self._kid.get(r["id"])
        if k is None:
            k = self._kid[r["id"]] = len(self._kids)
            self._kids.append(r["id"])
            self._k_ns.append(self._ns_code(r["namespace"]))
            self._k_text.append(r["text"])
            self._k_type.append(sys.intern(r["key_type"]))
            if self._parts is not None:
                self._add_parts(k)
            if self._forms is not None:
                self._add_forms(k)
        else:
            self._k_ns[k] = self._ns_code(r["namespace"])
            self._k_text[k] = r["text"]
            self._k_type[k] = sys.intern(r["key_type"])
            self._parts = None  # rebuilt on next use (a key's text rarely changes)
            self._forms = None

    def _remove_key(self, kid: str) -> None:
        k = self._kid.pop(kid, None)
        if k is None:
            return
        for m in self._k_links(k)[0].tolist():
            keys, weights = self._m_mut(m)
            if k in keys:
                pos = keys.index(k)
                del keys[pos]
                del weights[pos]
        self._kids[k] = None
        self._k_over[k] = (array("i"), array("d"))
        self._parts = None
        self._forms = None

    def _unlink(self, m: int) -> None:
        for k in self._m_links(m)[0].tolist():
            mems, weights = self._k_mut(k)
            try:
                pos = mems.index(m)
            except ValueError:
                continue
            del mems[pos]
            del weights[pos]
        self._m_over[m] = (array("i"), array("d"))

    def _upsert_memory(self, r: dict[str, Any]) -> None:
        m = self._ids.get(r["id"])
        if m is None:
            m = self._ids.add(r["id"])
            self._grow(self._ids.slots())
        else:
            self._unlink(m)
        self._m_ns[m] = self._ns_code(r["namespace"])
        self._m_active[m] = bool(r["active"])
        self._m_expires[m] = NO_EXPIRY if r["expires"] < 0 else r["expires"]
        self._m_depth[m] = r["depth"]
        self._m_confirmed[m] = r["confirmed"]
        self._m_created[m] = r["created"]
        self._m_profile[m] = self._profile_code.get(r["decay_profile"], 1)
        self._m_confirmations[m] = r["confirmations"]
        keys, weights = array("i"), array("d")
        for kid, w in zip(r["keys"], r["weights"], strict=True):
            k = self._kid.get(kid) if kid is not None else None
            if k is None:
                continue
            mems, kw = self._k_mut(k)
            mems.append(m)
            kw.append(w)
            keys.append(k)
            weights.append(w)
        self._m_over[m] = (keys, weights)

    def _remove_memory(self, mid: str) -> None:
        m = self._ids.remove(mid)
        if m is None:
            return
        self._unlink(m)
        for other in self._related.pop(m, {}):
            self._related.get(other, {}).pop(m, None)
        self._m_ns[m] = -1
        self._m_active[m] = False

    def _fresh(self) -> None:
        if self._stale:
            self.load()

    # -- reads -----------------------------------------------------------------------------
    def _visible(self, idx: np.ndarray, now: float) -> np.ndarray:
        return self._m_active[idx] & (self._m_expires[idx] > now)

    def key_count(self) -> int:
        return len(self._kid)

    def memory_ids(self) -> list[str]:
        """Every memory held, old versions included (in no particular order)."""
        self._fresh()
        with self._lock:
            return [mid for mid, _ in self._ids.items()]

    def memory_total(self) -> int:
        """Memories in the store, old versions included."""
        return len(self._ids)

    def key(self, key_id: str) -> dict[str, Any] | None:
        """The key's identity row (id, namespace, text, key_type), or None."""
        self._fresh()
        with self._lock:
            k = self._kid.get(key_id)
            if k is None:
                return None
            return {"id": key_id, "namespace": self._ns_names[self._k_ns[k]], "text": self._k_text[k],
                    "key_type": self._k_type[k]}

    def keys(self, key_ids: Iterable[str]) -> list[dict[str, Any]]:
        return [row for row in (self.key(k) for k in key_ids) if row is not None]

    def name_part_keys(self, namespace: str, words: Iterable[str]) -> list[str]:
        """Name and proper-noun keys of several words of which one of ``words`` is a capitalised word.

        An agent stores "Dorian Achebe"; the user asks about "Dorian". Only capitalised words of
        the key count ("Sable team" is found by "Sable", not by "team"), matched case-folded.
        """
        self._fresh()
        with self._lock:
            if self._parts is None:
                self._parts = {}
                for k in range(len(self._kids)):
                    if self._kids[k] is not None:
                        self._add_parts(k)
            code = self._ns.get(namespace)
            if code is None:
                return []
            found: set[int] = set()
            for w in words:
                found |= self._parts.get((code, w.casefold()), set())
            return sorted(kid for k in found if (kid := self._kids[k]) is not None)

    def _add_parts(self, k: int) -> None:
        assert self._parts is not None
        if self._k_type[k] == "concept":
            return
        words = NAME_WORD.findall(self._k_text[k])
        if len(words) < 2:
            return
        for w in words:
            if w[:1].isupper():
                self._parts.setdefault((self._k_ns[k], w.casefold()), set()).add(k)

    def variant_keys(self, key_id: str) -> list[str]:
        """Other keys of the key's namespace that are forms of it ("Terraform" / "Terraform Cloud",
        "k8s" / "Kubernetes"; ``index/variants.py``): the walk passes through them as through the key."""
        self._fresh()
        with self._lock:
            k = self._kid.get(key_id)
            if k is None:
                return []
            return self._variants(self._k_ns[k], self._k_text[k], self._k_type[k], exclude=k)

    def form_keys(self, namespace: str, text: str, key_type: str = "proper_noun") -> list[str]:
        """Keys of ``namespace`` that ``text`` (a query word: "QBR", "k8s") is a form of."""
        self._fresh()
        with self._lock:
            code = self._ns.get(namespace)
            return [] if code is None else self._variants(code, text, key_type, exclude=-1)

    def _variants(self, code: int, text: str, key_type: str, exclude: int) -> list[str]:
        if self._forms is None:
            self._forms = {}
            for k in range(len(self._kids)):
                if self._kids[k] is not None:
                    self._add_forms(k)
        found: set[int] = set()
        for sig in variants.lookups(text, key_type):
            found |= self._forms.get((code, sig), set())
        found.discard(exclude)
        return sorted(kid for k in found if (kid := self._kids[k]) is not None
                      and variants.is_form_of(text, key_type, self._k_text[k], self._k_type[k]))

    def _add_forms(self, k: int) -> None:
        assert self._forms is not None
        for sig in variants.forms(self._k_text[k], self._k_type[k]):
            self._forms.setdefault((self._k_ns[k], sig), set()).add(k)

    def degree(self, key_id: str) -> int:
        """Links of a key, superseded and expired memories included (hub detection, IDF)."""
        self._fresh()
        with self._lock:
            k = self._kid.get(key_id)
            return 0 if k is None else len(self._k_links(k)[0])

    def memory_count(self, key_id: str, now: float) -> int:
        """Visible (active, unexpired) memories of a key."""
        self._fresh()
        with self._lock:
            k = self._kid.get(key_id)
            if k is None or not len(self._k_links(k)[0]):
                return 0
            idx = np.asarray(self._k_links(k)[0], dtype=np.int64)
            return int(np.count_nonzero(self._visible(idx, now)))

    def hubs_first(self, namespace: str, now: float, min_count: int, offset: int, limit: int,
                   ) -> tuple[list[tuple[dict[str, Any], int]], int]:
        """A page of a namespace's keys with at least ``min_count`` visible memories, most first
        (ties by normalised text), and how many keys qualify: ``browse_keys``.

        Counted over the link arrays at once (430k links: ~3 ms), so the call needs no engine
        memory: the same aggregate in Cypher sorted every LINKS edge of the namespace in the
        buffer pool on every call, and a few at once exhausted it at 100k memories.
        """
        self._fresh()
        with self._lock:
            code = self._ns.get(namespace)
            if code is None or not self._kids:
                return [], 0
            counts = self._visible_counts(now)
            mask = (np.asarray(self._k_ns, dtype=np.int32) == code) & (counts >= max(1, min_count))
            qualified = np.flatnonzero(mask)
            total = len(qualified)
            want = offset + limit
            if not total or offset >= total:
                return [], total
            if want < total:  # only keys at or above the page's lowest count can be on the page
                floor = np.partition(counts[qualified], total - want)[total - want]
                qualified = qualified[counts[qualified] >= floor]
            ranked = sorted(qualified.tolist(), key=lambda k: (-int(counts[k]), self._norm(k)))
            page = []
            for k in ranked[offset:want]:
                kid = self._kids[k]
                assert kid is not None  # a removed key has no links, so no count
                page.append(({"id": kid, "namespace": namespace, "text": self._k_text[k],
                              "key_type": self._k_type[k]}, int(counts[k])))
            return page, total

    def counts(self, now: float) -> dict[str, int]:
        """Keys, visible memories and links (superseded memories' included) of the whole store,
        what ``admin/counts`` answers from the engine, without reading it."""
        self._fresh()
        with self._lock:
            n = self._ids.slots()
            memories = int(np.count_nonzero((self._m_ns[:n] >= 0) & self._visible(np.arange(n), now)))
            return {"keys": len(self._kid), "memories": memories, "links": self._link_total()}

    def _link_total(self) -> int:
        """Every link held: the loaded layout's, corrected by the rows a write moved to an overlay."""
        ptr = self._kb[0]
        links = int(ptr[-1])
        for k, (slots, _w) in self._k_over.items():
            links += len(slots) - (int(ptr[k + 1] - ptr[k]) if k + 1 < len(ptr) else 0)
        return links

    def _visible_counts(self, now: float) -> np.ndarray:
        """Visible memories per key slot (caller holds the lock)."""
        vis = self._visible(np.arange(len(self._m_ns)), now)
        counts = np.zeros(len(self._kids), dtype=np.int64)
        ptr, cols, _ = self._kb
        if len(cols):
            running = np.zeros(len(cols) + 1, dtype=np.int64)
            np.cumsum(vis[cols], out=running[1:])
            counts[: len(ptr) - 1] = running[ptr[1:]] - running[ptr[:-1]]
        for k, (slots, _w) in self._k_over.items():
            counts[k] = int(np.count_nonzero(vis[np.asarray(slots, dtype=np.int64)])) if len(slots) else 0
        return counts

    def _norm(self, k: int) -> str:
        """A key's normalised text (``Key.norm``), computed once per key text."""
        got = self._k_norms.get(k)
        if got is None or got[0] != self._k_text[k]:
            got = self._k_norms[k] = (self._k_text[k], normalize_text(self._k_text[k]))
        return got[1]

    def key_links(self, key_id: str, now: float, most: int | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
        """A key's visible memories: ids, link weights and mirror slots (for ``slot_factors``); none
        when it has more than ``most`` (a hub the walk skips: its ids are not even decoded)."""
        self._fresh()
        with self._lock:
            k = self._kid.get(key_id)
            if k is None or not len(self._k_links(k)[0]):
                return [], np.zeros(0), np.zeros(0, dtype=np.int64)
            slots, weights = self._k_links(k)
            idx = np.asarray(slots, dtype=np.int64)
            keep = self._visible(idx, now)
            if most is not None and np.count_nonzero(keep) > most:
                return [], np.zeros(0), np.zeros(0, dtype=np.int64)
            w = np.array(weights, dtype=np.float64)
            idx, w = idx[keep], w[keep]
            ids = self._ids.ids(idx)
        return ids, w, idx  # type: ignore[return-value]

    def _factors(self, slots: np.ndarray, now: float) -> np.ndarray:
        return rank_factors(self._m_depth[slots], self._m_confirmed[slots],
                            self._half_lives[self._m_profile[slots]], now)

    def slot_factors(self, slots: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Depth x freshness factors and creation times of memory slots (from ``key_links``)."""
        with self._lock:
            return self._factors(slots, now), self._m_created[slots].copy()

    def memory(self, memory_id: str, now: float | None = None) -> dict[str, Any] | None:
        """Ranking and validity fields of one memory (visible only when ``now`` is given), or None."""
        self._fresh()
        with self._lock:
            m = self._ids.get(memory_id)
            if m is None:
                return None
            if now is not None and not (self._m_active[m] and self._m_expires[m] > now):
                return None
            exp = float(self._m_expires[m])
            return {
                "id": memory_id, "namespace": self._ns_names[self._m_ns[m]], "active": bool(self._m_active[m]),
                "expires_at": None if exp == NO_EXPIRY else exp, "depth": float(self._m_depth[m]),
                "last_confirmed_at": float(self._m_confirmed[m]), "created_at": float(self._m_created[m]),
                "decay_profile": DECAY_PROFILES[int(self._m_profile[m])],
                "confirmation_count": int(self._m_confirmations[m]),
            }

    def rank_factors(self, memory_ids: Iterable[str], now: float) -> dict[str, float]:
        """Depth and freshness factor (``keymem.decay.rank_factors``) of the visible ones among some memories."""
        self._fresh()
        with self._lock:
            asked = list(memory_ids)
            found = list(zip(asked, self._ids.get_many(asked), strict=True))
            ids = [mid for mid, m in found if m is not None]
            if not ids:
                return {}
            idx = np.fromiter((m for _, m in found if m is not None), dtype=np.int64, count=len(ids))
            keep = self._visible(idx, now)
            factor = self._factors(idx, now)
        return {mid: f for mid, f, ok in zip(ids, factor.tolist(), keep.tolist(), strict=True) if ok}

    def visible(self, memory_ids: Iterable[str], now: float) -> dict[str, dict[str, Any]]:
        out = {}
        for mid in memory_ids:
            row = self.memory(mid, now)
            if row is not None:
                out[mid] = row
        return out

    def memory_keys(self, memory_id: str) -> list[tuple[str, float]]:
        """(key id, link weight) of one memory's links."""
        self._fresh()
        with self._lock:
            m = self._ids.get(memory_id)
            if m is None:
                return []
            keys, weights = self._m_links(m)
            return [(self._kids[k], w) for k, w in zip(keys.tolist(), weights.tolist(), strict=True)]  # type: ignore[misc]

    def related(self, memory_id: str, now: float) -> list[tuple[str, float]]:
        """Visible RELATED_TO neighbours of one memory with the edge weight."""
        self._fresh()
        with self._lock:
            m = self._ids.get(memory_id)
            if m is None:
                return []
            return [(self._ids.id(o), w) for o, w in self._related.get(m, {}).items()  # type: ignore[misc]
                    if self._m_active[o] and self._m_expires[o] > now]

    def related_ids(self, memory_id: str) -> list[str]:
        """Every RELATED_TO neighbour of one memory (old versions included), sorted."""
        self._fresh()
        with self._lock:
            m = self._ids.get(memory_id)
            if m is None:
                return []
            return sorted(self._ids.id(o) for o in self._related.get(m, {}))  # type: ignore[misc]

    # -- checks ----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything held, keyed by ids (for comparing with a fresh load in tests and checks)."""
        self._fresh()
        with self._lock:
            mems = {}
            for mid, m in self._ids.items():
                row = self.memory(mid)
                assert row is not None
                row["keys"] = sorted((k, round(w, 9)) for k, w in self.memory_keys(mid))
                row["related"] = sorted((self._ids.id(o), round(w, 9)) for o, w in self._related.get(m, {}).items())  # type: ignore[misc]
                mems[mid] = row
            keys = {kid: self.key(kid) for kid in self._kid}
            return {"memories": mems, "keys": keys}

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"memories": len(self._ids), "keys": len(self._kid), "links": self._link_total(),
                    "slots": self._ids.slots()}
