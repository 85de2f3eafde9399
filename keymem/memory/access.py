"""Coalesced access counts: ``read_memory`` without ``via_key_id`` writes nothing at once.

Each such read used to be a write transaction of its own (``access_count + 1`` and
``last_access_at``). Kuzu 0.11.3 holds every committed update in buffer-pool memory until
a checkpoint, ~32 KiB for that one-row SET, so reads filled the pool (issue 12). The
accesses are now counted here and written in one transaction (``memory/access_many``)
once ``FLUSH_READS`` reads are pending, when a read finds the oldest pending one
``FLUSH_SECONDS`` old, from the daemon's flush loop (every ``FLUSH_SECONDS``), before a
digest, export or snapshot, and on close. Views add the pending count, so the agent sees
the same ``access_count`` as before.

Crash window: a SIGKILL loses the pending accesses (at most ``FLUSH_READS`` reads or
``FLUSH_SECONDS`` of them in the daemon); a clean stop loses nothing. A read through a key
(Hebbian) is still its own transaction, and so is a failed flush's retry.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keymem.store.db import Store

log = logging.getLogger("keymem.memory")

FLUSH_READS = 256
FLUSH_SECONDS = 2.0


class AccessLog:
    """Pending ``read_memory`` accesses: memory id -> (reads, latest read time)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock = threading.RLock()  # held around "stored count + pending" so a flush cannot split it
        self._pending: dict[str, tuple[int, float]] = {}
        self._reads = 0
        self._since: float | None = None  # monotonic time of the oldest pending read
        self.flushes = 0

    def record(self, memory_id: str, now: float) -> None:
        with self.lock:
            n, _ = self._pending.get(memory_id, (0, now))
            self._pending[memory_id] = (n + 1, now)
            self._reads += 1
            if self._since is None:
                self._since = time.monotonic()
            if self.due():
                try:
                    self.flush()
                except Exception as exc:  # the read itself succeeded; the accesses stay pending
                    log.warning("writing %d pending accesses failed: %s", self._reads, exc)

    def pending(self, memory_id: str) -> int:
        with self.lock:
            return self._pending.get(memory_id, (0, 0.0))[0]

    def due(self) -> bool:
        with self.lock:
            if not self._pending:
                return False
            assert self._since is not None
            return self._reads >= FLUSH_READS or time.monotonic() - self._since >= FLUSH_SECONDS

    def flush(self) -> int:
        """Write every pending access in one transaction; returns the reads written."""
        with self.lock:
            if not self._pending or self.store.read_only:
                return 0
            rows = [{"id": mid, "n": n, "at": at} for mid, (n, at) in self._pending.items()]
            with self.store.write() as tx:
                tx.run("memory/access_many", rows=rows)
            done = self._reads
            self._pending.clear()
            self._reads, self._since = 0, None
            self.flushes += 1
            return done
