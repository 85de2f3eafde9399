"""Change records: what each write scope changed, numbered in the store, for several daemons on one store.

Each daemon keeps in-memory copies of the store (the graph mirror, BM25 terms, key vectors, aliases).
One daemon per store keeps them exact from its own commits; where several daemons write one store
(``Capabilities.shared_writers``: FalkorDB, each front running its own daemon) each also has to learn
what the others wrote. So a write scope that changes something a copy holds also writes a change
record in the same scope (``Tx.before_commit``, so it commits with the write or not at all):

* ``ChangeHead.n`` is a sequence number kept in the store, raised by one by the record's statement,
  which gives the record its ``seq`` (write scopes never interleave across daemons: the writer lease
  of ``keymem/store/falkor_lock.py``, so the numbers have no gaps);
* the record names the ids whose rows changed (``memories``, ``keys``), whose link weights changed
  (``links``), whose aliases changed (``aliases``), or that everything changed (``everything``: an
  import, the console's writes), and the writing process (``writer``, random per process).

The layers above note ids through :func:`note` (the mirror, alias index and key vectors do it where
they already record a scope's touched rows); a store with one writer writes no record and the call
costs nothing. A daemon reads :meth:`ChangeFeed.head` before it answers, and the records after the
last one it applied with :meth:`ChangeFeed.since` (``keymem/memory/catchup.py`` applies them). Records
older than the newest ``KEEP`` are pruned; a daemon further behind reloads everything.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keymem.store.db import Store, Tx

KEEP = 10_000  # records kept; a daemon further behind than this reloads everything
_TX_KEY = "changes"


@dataclass
class Change:
    """One record (or the union of several): the ids a write scope changed."""

    seq: int = 0
    writer: str = ""
    memories: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)  # memories whose link weights alone changed
    keys: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)  # keys whose aliases changed
    everything: bool = False

    def update(self, other: Change) -> None:
        self.memories |= other.memories
        self.links |= other.links
        self.keys |= other.keys
        self.aliases |= other.aliases
        self.everything = self.everything or other.everything

    def __bool__(self) -> bool:
        return bool(self.everything or self.memories or self.links or self.keys or self.aliases)


class ChangeFeed:
    """The change records of one store, as this process writes and reads them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.writer = secrets.token_hex(8)  # this process's records (its own copies applied them at commit)
        self.written = 0

    # -- writing (inside a write scope) ------------------------------------------------
    def note(self, tx: Tx, *, memories: Iterable[str] = (), links: Iterable[str] = (), keys: Iterable[str] = (),
             aliases: Iterable[str] = (), everything: bool = False) -> None:
        pending: Change | None = tx.scratch.get(_TX_KEY)
        if pending is None:
            pending = tx.scratch[_TX_KEY] = Change()
            tx.before_commit(lambda t: self._append(t, pending))
        pending.memories.update(memories)
        pending.links.update(links)
        pending.keys.update(keys)
        pending.aliases.update(aliases)
        pending.everything = pending.everything or everything

    def _append(self, tx: Tx, change: Change) -> None:
        if not change:
            return
        tx.run("changes/append", writer=self.writer, at=time.time(), memories=sorted(change.memories),
               links=sorted(change.links - change.memories), keys=sorted(change.keys),
               aliases=sorted(change.aliases), everything=change.everything)
        tx.after_commit(self._count)

    def _count(self) -> None:
        self.written += 1

    # -- reading ---------------------------------------------------------------------
    def head(self) -> int:
        """The newest record's number (0 before the first)."""
        rows = self.store.query("changes/head")
        return int(rows[0]["n"]) if rows and rows[0]["n"] is not None else 0

    def since(self, after: int) -> list[Change]:
        """The records after ``after``, oldest first."""
        return [Change(seq=int(r["seq"]), writer=r["writer"] or "", memories=set(r["memories"] or ()),
                       links=set(r["links"] or ()), keys=set(r["keys"] or ()), aliases=set(r["aliases"] or ()),
                       everything=bool(r["everything"]))
                for r in self.store.query("changes/since", after=after)]

    def prune(self, head: int, keep: int = KEEP) -> int:
        """Drop the records older than the newest ``keep``; how many went."""
        if head <= keep:
            return 0
        with self.store.write() as tx:
            rows = tx.run("changes/prune", below=head - keep)
        return int(rows[0]["n"]) if rows else 0


_feeds: weakref.WeakKeyDictionary[Store, ChangeFeed] = weakref.WeakKeyDictionary()
_feeds_lock = threading.Lock()


def feed(store: Store) -> ChangeFeed | None:
    """The store's change feed where several daemons write it; None where one process owns it."""
    if not store.capabilities.shared_writers:
        return None
    with _feeds_lock:
        found = _feeds.get(store)
        if found is None:
            found = _feeds[store] = ChangeFeed(store)
        return found


def note(store: Store, tx: Tx, *, memories: Iterable[str] = (), links: Iterable[str] = (),
         keys: Iterable[str] = (), aliases: Iterable[str] = (), everything: bool = False) -> None:
    """Record, in ``tx``'s change record, ids it changed (nothing where one process writes the store)."""
    found = feed(store)
    if found is not None:
        found.note(tx, memories=memories, links=links, keys=keys, aliases=aliases, everything=everything)
