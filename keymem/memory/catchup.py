"""Catching up on other daemons' writes to a shared store, before a call reads the in-memory indexes.

Where several daemons write one store (``keymem/store/changes.py``), each write scope commits a
numbered change record naming what it changed. A daemon applies its own writes to its copies after
each commit, as with one writer; before it answers a call it reads the newest record's number (one
small query) and, if others wrote since, re-reads the ids their records name into every copy:

* the graph mirror (``GraphMirror.refresh``: memory rows, their links and weights, key rows; the key
  forms and name parts it derives follow);
* the BM25 index, from each memory's stored terms (an inactive or deleted memory leaves it);
* the key vectors (``KeyVectors.refresh``) and the aliases (``AliasIndex.refresh``);
* memory content vectors: a new memory's text is embedded on the embed pool.

A daemon further behind than the records kept, a record that says everything changed, or a store
whose sequence went backwards (another graph, a failover that lost writes) reloads every copy: the
head is read first, so whatever commits during the reload is replayed after it (a refresh can run
twice). A background thread does the same every ``POLL_S``, so a front that gets no call still
follows, and prunes the records past ``changes.KEEP`` now and then. Everything here goes through the
store's statements and the indexes' own methods: it does not know which engine runs.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from keymem.store.changes import KEEP, Change, ChangeFeed
from keymem.text.tokenize import TERMS_SEP, tokenize

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

log = logging.getLogger("keymem.memory")

POLL_S = 0.5  # a front with no calls still applies others' writes within this
PRUNE_EVERY = 500  # records between two prunes (by whichever daemon sees the head pass the mark)


class CatchUp:
    """One graph's position in its store's change records, and how it applies the ones after it."""

    def __init__(self, graph: Parts, feed: ChangeFeed) -> None:
        self.graph = graph
        self.feed = feed
        self.seen = 0  # the last record applied (or covered by a full load)
        self.applied = 0  # records applied (others' writes), for tests and logs
        self.reloads = 0  # full reloads after the first load
        self.pruned_at = 0
        self._reload_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def mark(self) -> None:
        """Before a full load: what commits from here on is applied after it."""
        self.seen = self.feed.head()

    def __call__(self, *, reload: bool = True) -> int:
        """Apply every record after ``seen``; the records applied (0 when up to date: one query).

        ``reload=False`` from a thread inside a write scope (it holds this process's writer): what the
        records name is applied, and a full reload, which reads in threads of its own that wait for the
        writer, is left to the next call."""
        if self.feed.head() == self.seen:
            return 0
        with self.graph.store.no_writes():
            n, why = self._apply()
        if why is not None and reload:
            self._reload(why)
        return n

    # Locks: applying runs under this process's writer (``Store.no_writes``), which also orders it with
    # this process's commits and their after-commit refreshes; a write scope applies holding it already.
    # A reload holds only ``_reload_lock``: its loads take the writer in threads of their own. No thread
    # waits for ``_reload_lock`` while it holds the writer, so neither waits on the other in a circle.
    def _apply(self) -> tuple[int, str | None]:
        """Apply the records after ``seen`` (under the writer): the records of other daemons applied, and
        why a full reload is needed instead, if it is."""
        start, head = self.seen, self.feed.head()
        if head == start:
            return 0, None
        records = self.feed.since(start) if head > start else []
        if head < start or not records or records[0].seq != start + 1:
            return 0, ("the store's sequence went back" if head < start else
                       f"{head - start} records behind, past the {KEEP} kept")
        changed = Change()
        for r in records:
            if r.writer != self.feed.writer:  # this process's own writes were applied at their commit
                changed.update(r)
        if changed.everything:
            return 0, "another daemon changed the whole store"
        t0 = time.perf_counter()
        if changed:
            apply(self.graph, changed)
        self.seen = records[-1].seq
        n = sum(1 for r in records if r.writer != self.feed.writer)
        self.applied += n
        if n:
            log.debug("applied %d change records of other daemons in %.1f ms", n, (time.perf_counter() - t0) * 1000)
        return n, None

    def _reload(self, why: str) -> None:
        """Re-read every index; what commits meanwhile is applied after it (the head is read first). An
        apply running at the same time refreshes the indexes being replaced, and its records, after the
        head read here, are applied again: a refresh is idempotent."""
        with self._reload_lock:
            head = self.feed.head()
            if self.seen == head:  # another caller reloaded meanwhile
                return
            log.info("reloading every in-memory index: %s", why)
            self.graph.reload_indexes()
            self.seen = head
            self.reloads += 1

    # -- the background poll ---------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._poll, name="keymem-catchup", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self()
                if self.seen - self.pruned_at >= PRUNE_EVERY:
                    self.pruned_at = self.seen
                    self.feed.prune(self.seen)
            except Exception as exc:  # the server away: the next tick (or call) tries again
                if not self._stop.is_set():
                    log.warning("catching up on other daemons' writes failed: %s", exc)


def apply(graph: Parts, changed: Change) -> None:
    """Re-read the ids of ``changed`` from the store into every in-memory index (safe to repeat)."""
    memories = sorted(changed.memories)
    graph.mirror.refresh(changed.memories | changed.links, changed.keys)
    if memories:
        rows = {r["id"]: r for r in graph.store.query("memory/terms_of", ids=memories)}
        fresh: dict[str, str] = {}
        for mid in memories:
            row = rows.get(mid)
            if row is None or not row["active"]:
                graph.lexical.remove(mid)
                continue
            graph.lexical.add(mid, "", row["namespace"], tokens=_terms(graph, mid, row))
            if mid not in graph.memvecs:
                fresh[mid] = row["content"]
        for mid, content in fresh.items():
            graph.memvecs.add_soon(mid, content)
    graph.vectors.refresh(sorted(changed.keys))
    graph.aliases.refresh(changed.aliases)


def _terms(graph: Parts, memory_id: str, row: dict[str, str]) -> list[str]:
    """The memory's stored BM25 terms; tokenised here from its keys and content if it has none stored."""
    if row["terms"] is not None:
        return row["terms"].split(TERMS_SEP) if row["terms"] else []
    keys = graph.mirror.keys(k for k, _ in graph.mirror.memory_keys(memory_id))
    return tokenize(" ".join([*(k["text"] for k in keys), row["content"]]))
