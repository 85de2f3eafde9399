"""Keys: types, exact names, concept merging into aliases, hubs and specificity.

``concept`` keys match by embedding similarity; ``name`` and ``proper_noun`` keys match
only exactly (after Unicode normalisation and case-folding), so "동건" never matches
"뉴턴". A new concept key close enough to an existing one (cosine >= the merge
threshold; a stricter threshold or none for short keys) becomes an alias of it, which
keeps 파이썬 and Python in one cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.memory.names import add_literal_name, literal_name_id, name_id, new_id
from keymem.memory.views import KeyView
from keymem.store.db import Tx
from keymem.text.tokenize import normalize_text

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

SHORT_KEY_CHARS = 3
NAME_SINGLES = 24  # up to this many names are looked up one primary-key statement each


def keys_by_names(graph: Parts, run: Callable[..., list[dict[str, Any]]], nids: list[str],
                  ) -> dict[str, dict[str, Any]]:
    """KeyName id -> key row (id, namespace, text, key_type) for the names that exist.

    ``run`` is ``store.query`` or ``tx.run``. A handful of names costs one primary-key lookup
    each, the key row coming from the mirror; many names, one UNWIND statement (a scan).
    """
    if len(nids) > NAME_SINGLES:
        return {r["name_id"]: r["k"] for r in run("key/by_names", ids=nids)}
    out: dict[str, dict[str, Any]] = {}
    for nid in nids:
        for r in run("key/name_lookup", id=nid):
            row = graph.mirror.key(r["key_id"])
            if row is None:  # not in the mirror (should not happen): ask the store
                found = run("key/get", id=r["key_id"])
                row = found[0]["k"] if found else None
            if row is not None:
                out[nid] = row
    return out


@dataclass
class ResolvedKey:
    key_id: str
    text: str
    key_type: str
    created: bool


class KeyResolver:
    """Turns key strings into key ids inside one write transaction.

    Keys created earlier in the same transaction (a batch) are reused; the vectors of
    concept keys are computed before the transaction starts.
    """

    def __init__(self, graph: Parts, tx: Tx, vectors: dict[str, np.ndarray], now: float) -> None:
        # Where several daemons write the store, the scope holds the writer lease from here to its
        # commit: catching up now makes the key decisions (a near spelling merged into a concept key
        # another front just made) on what the store holds, not on this daemon's last catch-up.
        if graph.catchup is not None:
            graph.catchup(reload=False)
        self.graph = graph
        self.tx = tx
        self.vectors = vectors  # normalised text -> unit vector, for concept keys not found by name
        self.now = now
        self._pending: dict[str, ResolvedKey] = {}
        self._pending_vecs: dict[str, list[tuple[str, np.ndarray]]] = {}
        self._known: dict[str, dict[str, Any] | None] = {}  # name id -> key row (None: absent), see prefetch

    def prefetch(self, keys: list[tuple[str, str]]) -> None:
        """Look up many ``(text, namespace)`` keys by name in one statement (a batch's keys)."""
        nids = list(dict.fromkeys(name_id(ns, normalize_text(text)) for text, ns in keys))
        if not nids:
            return
        for nid in nids:
            self._known.setdefault(nid, None)
        self._known.update(keys_by_names(self.graph, self.tx.run, nids))

    def resolve(self, text: str, key_type: str, namespace: str) -> ResolvedKey:
        norm = normalize_text(text)
        nid = name_id(namespace, norm)
        hit = self._pending.get(nid)
        if hit is not None:
            return hit
        if nid in self._known:
            k = self._known[nid]
            rows = [{"k": k}] if k is not None else []
        else:
            found_k = keys_by_names(self.graph, self.tx.run, [nid]).get(nid)
            rows = [{"k": found_k}] if found_k is not None else []
        if rows:
            k = rows[0]["k"]
            found = ResolvedKey(k["id"], k["text"], k["key_type"], False)
            self._pending[nid] = found
            return found
        vec: np.ndarray | None = None
        if key_type == "concept":
            vec = self.vectors.get(norm)
            if vec is None:  # embedded before the transaction unless another writer removed its key
                vec = self.graph.embed([text])[0]
            merged = self._merge_target(vec, namespace, len(norm))
            if merged is not None:
                self.tx.run("key/name_create", id=nid, key_id=merged.key_id)
                self._claim_literal(literal_name_id(namespace, text), merged)
                add_literal_name(self.tx, namespace, text, merged.key_id)
                alias_id = new_id("a")
                self.tx.run(
                    "alias/create", id=alias_id, key_id=merged.key_id, namespace=namespace, text=text,
                    norm=norm, learned=False, now=self.now,
                )
                self.tx.run("alias/link", alias_id=alias_id, key_id=merged.key_id)
                self.graph.aliases.touch(self.tx, [merged.key_id])
                self._pending[nid] = merged
                return merged
        key_id = new_id("k")
        self.tx.run(
            "key/create", id=key_id, namespace=namespace, text=text, norm=norm, key_type=key_type, now=self.now
        )
        self.tx.run("key/name_create", id=nid, key_id=key_id)
        created = ResolvedKey(key_id, text, key_type, True)
        self._pending[nid] = created
        self._claim_literal(literal_name_id(namespace, text), created)
        add_literal_name(self.tx, namespace, text, key_id)
        if vec is not None:
            self.graph.vectors.insert(self.tx, key_id, namespace, vec)
            self._pending_vecs.setdefault(namespace, []).append((key_id, vec))
        return created

    def _claim_literal(self, literal_nid: str | None, key: ResolvedKey) -> None:
        """A literal form registered in this transaction names a key for the rest of the batch.

        "team-work" registers the form "team work"; a later "team work" in the same batch must
        resolve as it would in a later call (to the form's owner), not create the name again.
        The owner is this key unless an older key already held the form, which is looked up before
        the form is written (the scope never reads back its own writes).
        """
        if literal_nid is None or literal_nid in self._pending:
            return
        if literal_nid not in self._known:
            self._known[literal_nid] = keys_by_names(self.graph, self.tx.run, [literal_nid]).get(literal_nid)
        if self._known[literal_nid] is None:
            self._pending[literal_nid] = key  # absent before: this key claimed it

    def _merge_target(self, vec: np.ndarray, namespace: str, length: int) -> ResolvedKey | None:
        th = self.graph.thresholds
        threshold = th.short_key_merge if length <= SHORT_KEY_CHARS else th.key_merge
        if threshold is None or threshold > 1.0:
            return None
        best_id, best = None, -2.0
        for key_id, score in self.graph.vectors.search(vec, namespace, 1):
            best_id, best = key_id, score
        for key_id, other in self._pending_vecs.get(namespace, []):
            score = float(other @ vec)
            if score > best:
                best_id, best = key_id, score
        if best_id is None or best < threshold:
            return None
        # a key this scope created is not read back (a FalkorDB scope's reads see the graph before it);
        # it stays "created in this scope", as when its exact name is given again
        made = next((r for r in self._pending.values() if r.key_id == best_id and r.created), None)
        if made is not None:
            return made
        rows = self.tx.run("key/get", id=best_id)
        if not rows or rows[0]["k"]["key_type"] != "concept":
            return None
        k = rows[0]["k"]
        return ResolvedKey(k["id"], k["text"], "concept", False)


def specificity(n_memories: int, df: int, key_type: str, hub: bool) -> float:
    """BM25-style IDF of a key; name/proper-noun hubs get the x0.5 penalty."""
    idf = math.log(1.0 + (n_memories - df + 0.5) / (df + 0.5))
    if hub and key_type != "concept":
        idf *= 0.5
    return round(idf, 4)


def key_views(
    graph: Parts,
    rows: list[dict[str, Any]],
    namespace: str,
    now: float,
    scores: dict[str, tuple[float, str]] | None = None,
    counts: dict[str, int] | None = None,
) -> list[KeyView]:
    """Key nodes -> the contract's key view (aliases, memory_count, is_hub, specificity)."""
    ids = [r["id"] for r in rows]
    if not ids:
        return []
    if counts is None:
        counts = {k: graph.mirror.memory_count(k, now) for k in ids}
    aliases = graph.aliases.of(ids)
    # the lexical index holds exactly the namespace's active memories (kept in step after each commit)
    total = int(graph.lexical.stats(namespace)["docs"])
    hub_min = graph.settings.key_hub_min_links
    out = []
    for r in rows:
        n = int(counts.get(r["id"], 0))
        hub = n >= hub_min
        score, kind = (scores or {}).get(r["id"], (None, None))
        out.append(
            KeyView(
                key_id=r["id"], key=r["text"], key_type=r["key_type"], aliases=aliases.get(r["id"], []),
                score=None if score is None else round(score, 4), score_kind=kind, memory_count=n,
                is_hub=hub, specificity=specificity(total, n, r["key_type"], hub),
            )
        )
    return out
