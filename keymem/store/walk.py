"""The association walk's reads in Kuzu: one hop of the key-memory graph around a frontier.

The statements are ``cypher/neighbourhood/*.cypher``. Kuzu 0.11.3 uses its primary-key index
only for a single-value match; a set of ids (``WHERE m.id IN $ids``, an UNWIND of matches) is
planned as a scan of the id column and a join, and a two-step pattern from a frontier as hash
joins over whole tables. So the walk names nodes by their internal offset, and each statement is
a scan of a node table's internal ids, a filter on the offsets and one extend that reads only
the rel: frontier memories -> their links (:meth:`NeighbourhoodReads.links`); those keys -> their
visible memories, hubs left out by the key's count of lasting links
(:meth:`NeighbourhoodReads.members`), both filtering on the LINKS rel's copy of the memory's
active flag and expiry (schema step ``003_walk_copies``); and the frontier's RELATED_TO edges
(:meth:`NeighbourhoodReads.related`), asked for only when a frontier memory's ``has_related``
flag, read by the first statement, says one may exist (the same step).

Reading a node's id in those statements would be a join with the whole node table (+3 ms for
keys, +15 ms for a hop's memories at 100k), and copying the ids onto LINKS makes every checkpoint
rewrite the rel table's string columns (~1 s at 100k). So ids and offsets are paired in an
:class:`IdBook` per node table, loaded once and extended as the walk meets nodes written since: an
unknown id costs one primary-key lookup, unknown offsets one statement. Ids and offsets never
change, and Kuzu 0.11.3 never gives a deleted node's offset to a new node (pinned by
``tests/domain/test_neighbourhood.py``), so an entry is never wrong; one of a deleted node is
never met again.

FalkorDB hands a deleted node's internal id to the next node created, at once, so no internal id
may be kept there (``Capabilities.stable_node_ids`` False). On such an engine the statements'
overrides (``cypher/engines/falkordb/neighbourhood/``) name nodes by keymem's own ids, through the
range index on ``id``, and :class:`SameIds` stands in for the books: a node's handle is its id.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keymem.store.db import Store

BOOK_PAGE = 20_000  # (offset, id) pairs read per statement when an IdBook loads

Edge = tuple[str, float]  # (memory id, weight)
Ref = int | str  # a node as the walk's statements name it: internal offset (LadybugDB) or keymem id (FalkorDB)


class IdBook:
    """Internal offset <-> id of one node table (``memory`` or ``key``), thread-safe."""

    def __init__(self, store: Store, table: str) -> None:
        self.store = store
        self.table = table
        self._offset: dict[str, Ref] = {}
        self._id: dict[Ref, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._id)

    def _add(self, pairs: list[tuple[Ref, str]]) -> None:
        with self._lock:
            for offset, node_id in pairs:
                self._id[offset] = node_id
                self._offset[node_id] = offset

    def load(self) -> None:
        """Read every (offset, id) pair, a page of offsets at a time."""
        top = int(self.store.query(f"neighbourhood/{self.table}_offsets")[0]["n"])
        for lo in range(0, top, BOOK_PAGE):
            rows = self.store.query(f"neighbourhood/{self.table}_book", lo=lo, hi=lo + BOOK_PAGE)
            self._add([(r["offset"], r["id"]) for r in rows])

    def offsets(self, ids: list[str]) -> dict[str, Ref]:
        """Offsets of the ids that exist (unknown ones looked up by primary key)."""
        out = {}
        for node_id in dict.fromkeys(ids):
            offset = self._offset.get(node_id)
            if offset is None:
                rows = self.store.query(f"neighbourhood/{self.table}_offset", id=node_id)
                if not rows:
                    continue
                offset = rows[0]["offset"]
                self._add([(offset, node_id)])
            out[node_id] = offset
        return out

    def ids(self, offsets: list[Ref]) -> dict[Ref, str]:
        """Ids of the offsets (unknown ones read in one statement)."""
        unknown = [o for o in dict.fromkeys(offsets) if o not in self._id]
        if unknown:
            rows = self.store.query(f"neighbourhood/{self.table}_ids", offsets=unknown)
            self._add([(r["offset"], r["id"]) for r in rows])
        return {o: self._id[o] for o in offsets if o in self._id}


class SameIds(IdBook):
    """The book of an engine whose statements name nodes by keymem's ids: each handle is the id itself.

    Nothing is read or kept. An id that names no node gets no rows from the statements, as an
    unknown one does from :class:`IdBook`.
    """

    def load(self) -> None:
        """Nothing to read."""

    def offsets(self, ids: list[str]) -> dict[str, Ref]:
        return {node_id: node_id for node_id in dict.fromkeys(ids)}

    def ids(self, offsets: list[Ref]) -> dict[Ref, str]:
        return {o: str(o) for o in offsets}


class NeighbourhoodReads:
    """The statements of a hop, over internal offsets (or ids, see :class:`SameIds`), with ids from
    the two books."""

    def __init__(self, store: Store) -> None:
        self.store = store
        book = IdBook if store.capabilities.stable_node_ids else SameIds
        self.memories = book(store, "memory")
        self.keys = book(store, "key")

    def load(self) -> None:
        self.memories.load()
        self.keys.load()

    def links(self, memory_ids: list[str]) -> tuple[dict[str, list[tuple[Ref, float]]], dict[str, Ref]]:
        """Each existing memory's links (key offset, weight), and the offsets of the memories that may
        have a RELATED_TO edge (its ``has_related`` flag, or no link to read it from)."""
        offsets = self.memories.offsets(memory_ids)
        if not offsets:
            return {}, {}
        by_offset = {o: mid for mid, o in offsets.items()}
        out: dict[str, list[tuple[Ref, float]]] = defaultdict(list)
        unrelated: set[str] = set()
        for r in self.store.query("neighbourhood/links", memories=list(by_offset)):
            mid = by_offset[r["m"]]
            out[mid].append((r["k"], r["weight"]))
            if r["related"] is False:
                unrelated.add(mid)
        return out, {mid: o for mid, o in offsets.items() if mid not in unrelated}

    def members(self, key_offsets: list[Ref], now: float, fanout: int) -> dict[Ref, list[Edge]]:
        """Visible memories (id, link weight) of each key (by offset) holding 1..``fanout`` of them."""
        if not key_offsets:
            return {}
        got: dict[Ref, list[tuple[Ref, float]]] = defaultdict(list)
        for r in self.store.query("neighbourhood/members", keys=list(dict.fromkeys(key_offsets)), now=now,
                                  fanout=fanout):
            got[r["k"]].append((r["m"], r["weight"]))
        walkable = {k: edges for k, edges in got.items() if len(edges) <= fanout}
        ids = self.memories.ids([m for edges in walkable.values() for m, _ in edges])
        return {k: [(ids[m], w) for m, w in edges if m in ids] for k, edges in walkable.items()}

    def related(self, offsets: dict[str, Ref], now: float) -> dict[str, list[Edge]]:
        """Visible RELATED_TO neighbours (id, edge weight) of memories given with their offsets.

        An edge kept in both directions between the same two memories counts once, at the larger weight.
        """
        if not offsets:
            return {}
        by_offset = {o: mid for mid, o in offsets.items()}
        got: dict[str, dict[str, float]] = defaultdict(dict)
        for r in self.store.query("neighbourhood/related", memories=list(by_offset)):
            if not r["active"] or (r["expires_at"] is not None and r["expires_at"] <= now):
                continue
            seen = got[by_offset[r["m"]]]
            seen[r["memory_id"]] = max(seen.get(r["memory_id"], r["weight"]), r["weight"])
        return {mid: list(edges.items()) for mid, edges in got.items()}


PAGE_LINKS = 20_000  # links re-derived per transaction (one over 430k links does not fit a 256 MiB pool)
PAGE_KEYS = 20_000  # keys recounted per transaction
_META = "walk_copies"  # 'pending' from schema step 003 until the existing rows are filled, then 'filled'


def copies_ready(store: Store) -> bool:
    """Whether the walk's copies are complete (schema step 003 applied and its fill finished)."""
    rows = store.query("meta/get", name=_META)
    return bool(rows) and rows[0]["value"] == "filled"


def fill_walk_copies(store: Store, *, force: bool = False) -> int:
    """Derive the walk's copies (schema step 003) where missing or wrong, in pages.

    The LINKS copies of their memory's active flag and expiry, the Memory ``has_related`` flags and
    the keys' lasting-link counts. Runs after schema step 003 (which leaves the existing rows
    unfilled, marked 'pending'; an interrupted fill resumes at the next open) and, with ``force``,
    after writes that bypassed keymem (the console's write mode). Each page is one transaction
    followed by a checkpoint: Kuzu 0.11.3 holds committed updates in the buffer pool until then.
    Returns how many links, memories and keys were corrected.
    """
    if store.read_only:
        return 0
    if not force:
        rows = store.query("meta/get", name=_META)
        if not rows or rows[0]["value"] != "pending":
            return 0
    fixed = 0
    for statement in ("link/recopy", "link/reflag_related"):
        while True:
            with store.write() as tx:
                done = tx.run(statement, limit=PAGE_LINKS)
            n = int(done[0]["n"])  # a write's rows are read once its scope committed (deferred writes)
            fixed += n
            if n:
                store.checkpoint()
            if n < PAGE_LINKS:
                break
    for lo, hi in store.offset_ranges("key/offset_end", page=PAGE_KEYS):
        with store.write() as tx:
            done = tx.run("link/recount", lo=lo, hi=hi)
        n = int(done[0]["n"])
        fixed += n
        if n:
            store.checkpoint()
    if not copies_ready(store):
        with store.write() as tx:
            tx.run("meta/set", name=_META, value="filled")
    return fixed
