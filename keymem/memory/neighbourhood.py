"""The bounded neighbourhood that association walks: one hop of the key-memory graph at a time.

Association (``associative.py``) spreads activation from routed keys and from the best
memories. All it asks of the graph is, for a small frontier: which walkable keys each
frontier memory has (with link weights), which visible memories each of those keys holds,
and the frontier's RELATED_TO neighbours. ``Neighbourhood`` is that question; the scoring
arithmetic stays in Python over the few hundred rows it returns.

A key is *walkable* when it holds at most ``fanout`` visible memories: a broader key (a
speaker's name, "work") would hand every one of its memories the same thin share and swamp
the walk. Visible means active (not superseded) and not expired at ``now``.

``CypherNeighbourhood`` asks Kuzu (``store/walk.py``, ``cypher/neighbourhood/``): three small
statements a hop over internal offsets. ``MirrorNeighbourhood`` reads the in-memory
``GraphMirror``. Both return the same rows for the same store
(``tests/domain/test_neighbourhood.py``); docs/design.md ("Association neighbourhood: Cypher vs
mirror") gives what each costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from keymem.store.walk import NeighbourhoodReads

if TYPE_CHECKING:
    from keymem.memory.mirror import GraphMirror
    from keymem.store.db import Store

Edge = tuple[str, float]  # (other end's id, link or edge weight)


@dataclass
class Hop:
    """One hop around a frontier of memories (lists sorted by id, so results are deterministic)."""

    keys_of: dict[str, list[Edge]] = field(default_factory=dict)  # frontier memory -> walkable keys
    members: dict[str, list[Edge]] = field(default_factory=dict)  # walkable key -> visible memories
    related: dict[str, list[Edge]] = field(default_factory=dict)  # frontier memory -> visible RELATED_TO


class Neighbourhood(Protocol):
    def key_members(self, key_ids: list[str], now: float, fanout: int) -> dict[str, list[Edge]]:
        """Visible memories of each walkable key among ``key_ids`` (broader keys are left out)."""
        ...

    def step(self, frontier: list[str], now: float, fanout: int) -> Hop:
        """The frontier memories' walkable keys, those keys' visible memories, and RELATED_TO."""
        ...


class MirrorNeighbourhood:
    """``Neighbourhood`` over the in-memory mirror of the graph."""

    def __init__(self, mirror: GraphMirror) -> None:
        self.mirror = mirror

    def key_members(self, key_ids: list[str], now: float, fanout: int) -> dict[str, list[Edge]]:
        out: dict[str, list[Edge]] = {}
        for key_id in key_ids:
            if key_id in out:
                continue
            ids, weights, _ = self.mirror.key_links(key_id, now)
            if 0 < len(ids) <= fanout:
                out[key_id] = sorted(zip(ids, weights.tolist(), strict=True))
        return out

    def step(self, frontier: list[str], now: float, fanout: int) -> Hop:
        hop = Hop()
        links = {mid: self.mirror.memory_keys(mid) for mid in dict.fromkeys(frontier)}
        wanted = list(dict.fromkeys(k for edges in links.values() for k, _ in edges))
        hop.members = self.key_members(wanted, now, fanout)
        for mid, edges in links.items():
            walkable = sorted((k, w) for k, w in edges if k in hop.members)
            if walkable:
                hop.keys_of[mid] = walkable
            rel = sorted(self.mirror.related(mid, now))
            if rel:
                hop.related[mid] = rel
        return hop


class CypherNeighbourhood:
    """``Neighbourhood`` as Cypher statements in Kuzu: per hop the frontier's links, those keys'
    visible memories (hubs skipped by their lasting-link count) and the frontier's RELATED_TO."""

    def __init__(self, store: Store) -> None:
        self.reads = NeighbourhoodReads(store)

    def key_members(self, key_ids: list[str], now: float, fanout: int) -> dict[str, list[Edge]]:
        if not key_ids:
            return {}
        found = self.reads.members(self.reads.key_offsets(key_ids), now, fanout)
        return {k: sorted(edges) for k, edges in found.items()}

    def step(self, frontier: list[str], now: float, fanout: int) -> Hop:
        hop = Hop()
        if not frontier:
            return hop
        links, offsets = self.reads.links(frontier)
        keys = {k_off: kid for edges in links.values() for kid, k_off, _ in edges}
        hop.members = {k: sorted(edges) for k, edges in self.reads.members(keys, now, fanout).items()}
        for mid in dict.fromkeys(frontier):
            walkable = sorted((kid, w) for kid, _, w in links.get(mid, ()) if kid in hop.members)
            if walkable:
                hop.keys_of[mid] = walkable
        hop.related = {mid: sorted(edges) for mid, edges in self.reads.related(offsets, now).items() if edges}
        return hop
