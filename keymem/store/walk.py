"""The association walk's reads in Kuzu: one hop of the key-memory graph around a frontier.

The statements are ``cypher/neighbourhood/*.cypher``. Kuzu 0.11.3 uses its primary-key index
only for a single-value match; a set of ids (``WHERE m.id IN $ids``, an UNWIND of matches) is
planned as a scan of the id column and a join, and a two-step pattern from a frontier as hash
joins over whole tables. So the walk names nodes by their internal offset, and each statement is
a scan of a node table's internal ids, a filter on the offsets and one extend that reads only
the LINKS rel, which carries copies of what the walk needs of its ends (schema step
``003_link_copies``): frontier memories -> their links (:meth:`links`); those keys -> their
visible memories, hubs left out by the key's count of lasting links (:meth:`members`); and the
frontier's RELATED_TO edges (:meth:`related`).

Offsets come from the statements' own results (the memories one hop reaches are the next hop's
frontier) and, for an id not seen yet, from one primary-key lookup; they are cached. A cached
offset is checked before it is trusted: the links of a frontier memory name their memory, so an
offset that no longer holds the id it was cached for (a deleted memory) is looked up again.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keymem.store.db import Store

CACHE_MAX = 1 << 18  # cached memory offsets; the cache starts over beyond this (~20 MB)

Link = tuple[str, int, float]  # (key id, key offset, link weight)
Edge = tuple[str, float]  # (memory id, weight)


class NeighbourhoodReads:
    """The three statements of a hop, over offsets kept per memory id (thread-safe)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._offset: dict[str, int] = {}  # memory id -> internal offset

    def _remember(self, memory_id: str, offset: int) -> None:
        if len(self._offset) >= CACHE_MAX:
            self._offset.clear()
        self._offset[memory_id] = offset

    def _lookup(self, ids: list[str]) -> dict[str, int]:
        found = {}
        for mid in ids:
            rows = self.store.query("neighbourhood/memory_offset", id=mid)
            if rows:
                found[mid] = rows[0]["offset"]
                self._remember(mid, rows[0]["offset"])
            else:
                self._offset.pop(mid, None)
        return found

    def key_offsets(self, key_ids: list[str]) -> dict[int, str]:
        """Offset -> id of the keys that exist among ``key_ids`` (one primary-key lookup each)."""
        out = {}
        for kid in dict.fromkeys(key_ids):
            rows = self.store.query("neighbourhood/key_offset", id=kid)
            if rows:
                out[rows[0]["offset"]] = kid
        return out

    def links(self, memory_ids: list[str]) -> tuple[dict[str, list[Link]], dict[str, int]]:
        """Each existing memory's links, and the checked offsets of the memories that exist."""
        ids = list(dict.fromkeys(memory_ids))
        offsets = {mid: self._offset[mid] for mid in ids if mid in self._offset}
        offsets.update(self._lookup([mid for mid in ids if mid not in offsets]))
        out: dict[str, list[Link]] = {}
        checked: dict[str, int] = {}
        for _ in range(2):  # a second round only for stale cached offsets, looked up again
            if not offsets:
                break
            by_offset = {o: mid for mid, o in offsets.items()}
            got: dict[str, list[Link]] = defaultdict(list)
            for r in self.store.query("neighbourhood/links", memories=list(by_offset)):
                mid = by_offset.get(r["m"])
                if mid is not None and r["memory_id"] == mid:
                    got[mid].append((r["key_id"], r["k"], r["weight"]))
            out.update(got)
            checked.update({mid: o for mid, o in offsets.items() if mid in got})
            # No link under the cached offset: the memory is gone, or the offset is not its own.
            missing = [mid for mid in offsets if mid not in got]
            fresh = self._lookup(missing)
            checked.update({mid: o for mid, o in fresh.items() if o == offsets[mid]})  # exists, has no links
            offsets = {mid: o for mid, o in fresh.items() if o != offsets[mid]}
        return out, checked

    def members(self, keys: dict[int, str], now: float, fanout: int) -> dict[str, list[Edge]]:
        """Visible memories (id, link weight) of each key holding 1..``fanout`` of them."""
        if not keys:
            return {}
        got: dict[int, list[Edge]] = defaultdict(list)
        for r in self.store.query("neighbourhood/members", keys=list(keys), now=now, fanout=fanout):
            got[r["k"]].append((r["memory_id"], r["weight"]))
            self._remember(r["memory_id"], r["m"])
        return {keys[k]: edges for k, edges in got.items() if len(edges) <= fanout}

    def related(self, offsets: dict[str, int], now: float) -> dict[str, list[Edge]]:
        """Visible RELATED_TO neighbours (id, edge weight) of memories given with their checked offsets.

        An edge kept in both directions between the same two memories counts once, at the larger weight.
        """
        if not offsets:
            return {}
        by_offset = {o: mid for mid, o in offsets.items()}
        got: dict[str, dict[str, float]] = defaultdict(dict)
        for r in self.store.query("neighbourhood/related", memories=list(by_offset)):
            mid = by_offset.get(r["m"])
            if mid is None or not r["active"] or (r["expires_at"] is not None and r["expires_at"] <= now):
                continue
            self._remember(r["memory_id"], r["o"])
            seen = got[mid]
            seen[r["memory_id"]] = max(seen.get(r["memory_id"], r["weight"]), r["weight"])
        return {mid: list(edges.items()) for mid, edges in got.items()}


def resync_link_copies(store: Store) -> int:
    """Re-derive the LINKS copies and the keys' lasting-link counts (after writes that bypassed keymem).

    Returns how many links and keys were corrected.
    """
    with store.write() as tx:
        links = int(tx.run("link/recopy")[0]["n"])
        keys = int(tx.run("link/recount")[0]["n"])
    return links + keys
