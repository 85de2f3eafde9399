"""A reader gate: many readers, or one thread that needs the database quiet.

Kuzu 0.11's CHECKPOINT waits for active transactions to leave but lets new read
transactions start, so a steady stream of reads (any busy daemon) starves it until it
times out. Every read and write passes the gate shared; a checkpoint (snapshot, backup)
takes it exclusively, so no new transaction starts while it waits. Shared entry is
re-entrant per thread (a write transaction may read), and a waiting exclusive holder
blocks new readers so it cannot starve. Readers that waited through an exclusive hold enter before
the next exclusive holder, so back-to-back exclusive holds (heavy reads, a paged export) cannot
starve them either.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Gate:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._owner: int | None = None
        self._depth = 0
        self._waiting = 0
        self._shared_waiting = 0  # readers waiting to enter
        self._readers_first = False  # set when an exclusive hold ends with readers waiting: they go next
        self._local = threading.local()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        held = getattr(self._local, "n", 0)
        if held or self._owner == me:  # re-entry, or the exclusive holder reading
            self._local.n = held + 1
            try:
                yield
            finally:
                self._local.n -= 1
            return
        with self._cond:
            self._shared_waiting += 1
            while self._owner is not None or (self._waiting and not self._readers_first):
                self._cond.wait()
            self._shared_waiting -= 1
            if not self._shared_waiting:
                self._readers_first = False
            self._readers += 1
        self._local.n = 1
        try:
            yield
        finally:
            self._local.n = 0
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    def held(self) -> bool:
        """This thread is inside a read, a write or the exclusive hold (it cannot wait for the gate)."""
        return bool(getattr(self._local, "n", 0)) or self._owner == threading.get_ident()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        if getattr(self._local, "n", 0):
            raise RuntimeError("a thread inside a read or write cannot take the gate exclusively")
        with self._cond:
            if self._owner == me:
                self._depth += 1
            else:
                self._waiting += 1
                while self._owner is not None or self._readers or self._readers_first:
                    self._cond.wait()
                self._waiting -= 1
                self._owner, self._depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._readers_first = self._shared_waiting > 0
                    self._cond.notify_all()
