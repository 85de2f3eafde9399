"""The bounded neighbourhood that association walks: one hop of the key-memory graph at a time.

Association (``memory/associative.py``) spreads activation from routed keys and from the best
memories. All it asks of the graph is, for a small frontier: which walkable keys each
frontier memory has (with link weights), which visible memories each of those keys holds,
and the frontier's RELATED_TO neighbours. ``Neighbourhood`` is that question; the scoring
arithmetic stays in Python over the few hundred rows it returns.

A key is *walkable* when it holds at most ``fanout`` visible memories: a broader key (a
speaker's name, "work") would hand every one of its memories the same thin share and swamp
the walk. Visible means active (not superseded) and not expired at ``now``.

``CypherNeighbourhood`` asks the store's engine (``store/walk.py``, ``cypher/neighbourhood/``): two
small statements a hop over internal offsets (LadybugDB) or keymem ids (FalkorDB), a third when a
frontier memory has RELATED_TO edges.
``MirrorNeighbourhood`` reads the in-memory ``GraphMirror``; ``MemoryGraph`` walks it, being the
faster of the two (docs/design.md, "Association neighbourhood: Cypher vs mirror"), and the
console's ``:expand`` walks Cypher. Both return the same rows for the same store
(``tests/domain/test_neighbourhood.py``; on FalkorDB ``test_neighbourhood_engines.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from keymem.store.walk import NeighbourhoodReads

if TYPE_CHECKING:
    from keymem.index.mirror import GraphMirror
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
            ids, weights, _ = self.mirror.key_links(key_id, now, most=fanout)  # a hub's ids are not decoded
            if ids:
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
    """``Neighbourhood`` as Cypher statements in the store's engine: per hop the frontier's links, those keys'
    visible memories (hubs skipped by their lasting-link count) and, for the frontier memories
    that ever had one, their RELATED_TO edges.

    On LadybugDB ids are paired with internal offsets by ``store.walk.IdBook``: ``load()`` reads every
    pair at once (what a long-lived graph does); without it, pairs are learned as they are met. On
    FalkorDB, which reuses internal ids, the statements take keymem ids (``store.walk.SameIds``).
    """

    def __init__(self, store: Store) -> None:
        self.reads = NeighbourhoodReads(store)

    def load(self) -> None:
        self.reads.load()

    def key_members(self, key_ids: list[str], now: float, fanout: int) -> dict[str, list[Edge]]:
        if not key_ids:
            return {}
        offsets = self.reads.keys.offsets(key_ids)
        by_offset = {o: kid for kid, o in offsets.items()}
        found = self.reads.members(list(by_offset), now, fanout)
        return {by_offset[k]: sorted(edges) for k, edges in found.items() if edges}

    def step(self, frontier: list[str], now: float, fanout: int) -> Hop:
        hop = Hop()
        if not frontier:
            return hop
        links, maybe_related = self.reads.links(frontier)
        found = self.reads.members([k for edges in links.values() for k, _ in edges], now, fanout)
        ids = self.reads.keys.ids(list(found))
        key_id = {k: ids[k] for k, edges in found.items() if edges and k in ids}  # the walkable keys
        hop.members = {key_id[k]: sorted(found[k]) for k in key_id}
        for mid in dict.fromkeys(frontier):
            walkable = sorted((key_id[k], w) for k, w in links.get(mid, ()) if k in key_id)
            if walkable:
                hop.keys_of[mid] = walkable
        hop.related = {mid: sorted(edges) for mid, edges in self.reads.related(maybe_related, now).items() if edges}
        return hop
