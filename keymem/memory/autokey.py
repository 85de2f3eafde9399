"""Autokey self-healing: learn a query as an alias of the key it keeps routing to.

``recall`` (read-only) remembers which keys a query routed to. When the agent then reads
a memory through one of those keys (``read_memory(via_key_id)``), the (key, query) pair
counts once; after ``KEYMEM_AUTOKEY_PROMOTE_N`` counts, and if the query's cosine to
the key is at least ``KEYMEM_AUTOKEY_CONFIRM_FLOOR``, the query becomes a learned alias
(at most ``KEYMEM_AUTOKEY_MAX_ALIASES`` per key). ``dismiss`` cancels pending counts;
learned aliases never hit are pruned by the sweep. This confirms routing only, never a
memory's content or freshness.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.memory.names import add_literal_name, name_id, new_id, remove_literal_name
from keymem.store.db import Tx
from keymem.text.tokenize import normalize_text

if TYPE_CHECKING:
    from keymem.index.aliases import AliasIndex
    from keymem.settings import Settings
    from keymem.store.db import Store
    from keymem.store.vectors import KeyVectors

ROUTE_TTL = 3600.0
MAX_ROUTES = 10_000
MAX_QUERY_CHARS = 80


class Autokey:
    def __init__(self, settings: Callable[[], Settings], store: Store, vectors: KeyVectors,
                 aliases: AliasIndex, clock: Callable[[], float]) -> None:
        self._settings = settings  # read at each use: the graph's settings can be replaced while open
        self.store, self.vectors, self.aliases, self.now = store, vectors, aliases, clock
        self._routes: OrderedDict[str, dict[str, tuple[str, np.ndarray, float]]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        return self._settings()

    @property
    def enabled(self) -> bool:
        return self.settings.autokey

    def note_route(self, query: str, qvec: np.ndarray, key_ids: list[str]) -> None:
        """Remember (in memory only) that ``query`` routed to these keys."""
        if not self.enabled or len(query) > MAX_QUERY_CHARS:
            return
        norm = normalize_text(query)
        now = time.monotonic()
        with self._lock:
            for kid in key_ids:
                per_key = self._routes.setdefault(kid, {})
                per_key[norm] = (query, qvec, now)
                self._routes.move_to_end(kid)
            while len(self._routes) > MAX_ROUTES:
                self._routes.popitem(last=False)

    def forget_routes(self, key_id: str) -> None:
        with self._lock:
            self._routes.pop(key_id, None)

    def on_read(self, tx: Tx, key_id: str, memory: dict[str, Any], now: float) -> None:
        """A memory was read through ``key_id``: count the recent queries that routed there."""
        if not self.enabled:
            return
        with self._lock:
            per_key = dict(self._routes.get(key_id, {}))
        fresh = {n: v for n, v in per_key.items() if time.monotonic() - v[2] <= ROUTE_TTL}
        if not fresh:
            return
        key = tx.run("key/get", id=key_id)
        if not key:
            return
        k = key[0]["k"]
        s = self.settings
        learned_here = 0  # aliases this scope learned (not in alias/learned_count: reads see no write of the scope)
        for norm, (query, qvec, _) in fresh.items():
            nid = name_id(k["namespace"], norm)
            existing = tx.run("key/name_lookup", id=nid)
            if existing:
                if existing[0]["key_id"] == key_id:
                    tx.run("alias/hit", key_id=key_id, norm=norm, now=now)
                continue
            pid = f"{key_id}\x1f{norm}"
            before = tx.run("alias/pending_get", id=pid)
            count = (int(before[0]["count"]) if before else 0) + 1  # what alias/pending_bump makes it
            tx.run("alias/pending_bump", id=pid, key_id=key_id, query=query, now=now)
            if count < s.autokey_promote_n:
                continue
            if tx.run("alias/learned_count", key_id=key_id)[0]["n"] + learned_here >= s.autokey_max_aliases:
                continue
            kvec = self.vectors.get([key_id]).get(key_id)
            cos = float(kvec @ qvec) if kvec is not None else 0.0
            if cos < s.autokey_confirm_floor:
                continue
            alias_id = new_id("a")
            tx.run("alias/create", id=alias_id, key_id=key_id, namespace=k["namespace"], text=query, norm=norm,
                   learned=True, now=now)
            tx.run("alias/link", alias_id=alias_id, key_id=key_id)
            self.aliases.touch(tx, [key_id])
            tx.run("key/name_create", id=nid, key_id=key_id)
            add_literal_name(tx, k["namespace"], query, key_id)
            tx.run("alias/pending_delete", id=pid)
            learned_here += 1

    def prune(self) -> int:
        """Delete learned aliases that never hit within KEYMEM_AUTOKEY_PRUNE_AGE."""
        before = self.now() - self.settings.autokey_prune_age
        rows = self.store.query("alias/prunable", before=before)
        if rows:
            with self.store.write() as tx:
                for r in rows:
                    tx.run("key/name_delete", id=name_id(r["namespace"], r["norm"]))
                    remove_literal_name(tx, r["namespace"], r["text"], r["key_id"])
                    tx.run("alias/delete", id=r["id"])
                self.aliases.touch(tx, [r["key_id"] for r in rows])
        return len(rows)
