"""The aliases of every key, held in memory for the key views.

Every `recall` and `read_key` lists the aliases of the keys it returns. Kuzu indexes only
primary keys, so asking the store for the aliases of a few keys is a scan of the Alias table
(3.7 ms a query at 100k memories; one ALIAS_OF extend per key costs more). The aliases are
few and short (one per merged or learned spelling), so the whole table is read at open, and a
write that adds or removes aliases of a key touches the key: its aliases are read again once
the transaction commits. A failed re-read marks the index stale and the next use reloads it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from keymem.store import changes
from keymem.store.db import Store, Tx

log = logging.getLogger(__name__)

_TX_KEY = "aliases"


class AliasIndex:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._by_key: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()  # reads and changes of one refresh at a time (see GraphMirror)
        self._stale = True  # nothing read yet

    def load(self) -> None:
        by_key: dict[str, list[str]] = {}
        for r in self.store.query("alias/all"):
            by_key.setdefault(r["key_id"], []).append(r["text"])
        with self._lock:
            self._by_key = {k: tuple(v) for k, v in by_key.items()}
            self._stale = False

    def touch(self, tx: Tx, key_ids: Iterable[str]) -> None:
        """Record keys whose aliases a write transaction changed; re-read once it commits."""
        pending: set[str] | None = tx.scratch.get(_TX_KEY)
        if pending is None:
            pending = tx.scratch[_TX_KEY] = set()
            tx.after_commit(lambda: self.refresh(pending))
        key_ids = list(key_ids)
        pending.update(key_ids)
        changes.note(self.store, tx, aliases=key_ids)  # other daemons on a shared store

    def refresh(self, key_ids: Iterable[str]) -> None:
        ids = sorted(set(key_ids))
        if not ids:
            return
        with self._refreshing:
            self._refresh(ids)

    def _refresh(self, ids: list[str]) -> None:
        try:
            rows = self.store.query("key/aliases", ids=ids)
        except Exception:
            log.exception("alias index refresh failed; reloading it on next use")
            self._stale = True
            return
        found: dict[str, list[str]] = {k: [] for k in ids}
        for r in rows:
            found[r["key_id"]].append(r["text"])
        with self._lock:
            for k, texts in found.items():
                if texts:
                    self._by_key[k] = tuple(texts)
                else:
                    self._by_key.pop(k, None)

    def _fresh(self) -> dict[str, tuple[str, ...]]:
        if self._stale:
            self.load()
        return self._by_key

    def of(self, key_ids: Iterable[str]) -> dict[str, list[str]]:
        """Key id -> its alias texts, oldest first (keys without aliases are left out)."""
        by_key = self._fresh()
        return {k: list(by_key[k]) for k in key_ids if k in by_key}

    def snapshot(self) -> dict[str, tuple[str, ...]]:
        """Key id -> alias texts, as held: for the invariant check."""
        return dict(self._fresh())
