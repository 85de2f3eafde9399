"""A lease in Redis that several keymem daemons on one FalkorDB store take before they write.

FalkorDB runs each statement atomically but has no transaction spanning a write scope, and keymem
keeps keys, names and memory norms unique by reading before it writes (``KeyName``, ``MemoryNorm``).
With one daemon per store its own writer lock is enough; with several (each front runs its own
daemon) they take this lease around every write scope, so no two scopes ever interleave.

* Taken with ``SET <key> <token> NX PX <ttl>``: the token is this process's and random, so only the
  holder renews (``PEXPIRE`` if the value is still its token) or releases it (``DEL`` likewise, one
  Lua script each, so a lease that expired and was taken by another daemon is never touched).
* Renewed every third of its ttl by one thread while held: a long scope (an import) keeps it.
  A daemon killed while holding it stops renewing, so the others wait at most ``TTL_MS``.
* Re-entrant within the thread holding it (a scope opened inside another, as the store's own lock).
* A lease lost while held (the renewal found another token: this process stalled longer than the
  ttl) is logged and :attr:`RedisLease.lost` says so; the scope goes on (its statements are each
  atomic) and the next acquisition starts afresh.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

from keymem.errors import StoreError

log = logging.getLogger("keymem.store")

TTL_MS = 3000  # a dead holder blocks the other daemons at most this long
WAIT_S = 30.0  # a writer waiting longer than this for the lease gets one error line
_SLEEP_MIN_S, _SLEEP_MAX_S = 0.001, 0.02  # back-off between tries while another daemon holds it

_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class RedisLease:
    """One named lease on a Redis server (``client``: a ``redis.Redis``)."""

    def __init__(self, client: Any, key: str, *, ttl_ms: int = TTL_MS, wait_s: float = WAIT_S) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = ttl_ms
        self.wait_s = wait_s
        self.token = ""
        self.lost = False
        self.waits = 0  # acquisitions that found it held by someone else (tests, logs)
        self._owner: int | None = None  # the thread holding it
        self._depth = 0
        self._guard = threading.Lock()  # owner, depth, token
        self._free = threading.Condition(self._guard)
        self._renewer: threading.Thread | None = None
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lease for the block (waiting up to ``wait_s`` while another process holds it)."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._free:
            if self._owner == me:
                self._depth += 1
                return
            while self._owner is not None:  # another thread of this process: wait for it locally
                self._free.wait()
            self._owner, self._depth = me, 1
        try:
            self._take()
        except BaseException:
            with self._free:
                self._owner, self._depth = None, 0
                self._free.notify()
            raise

    def _take(self) -> None:
        token = secrets.token_hex(16)
        deadline = time.monotonic() + self.wait_s
        pause = _SLEEP_MIN_S
        waited = False
        while not self.client.set(self.key, token, nx=True, px=self.ttl_ms):
            if not waited:
                waited = True
                self.waits += 1
            if time.monotonic() > deadline:
                raise StoreError(f"another keymem daemon has held the store's writer lease ({self.key}) for "
                                 f"{self.wait_s:.0f} s; nothing was written, try again")
            time.sleep(pause)
            pause = min(_SLEEP_MAX_S, pause * 2)
        with self._guard:
            self.token = token
            self.lost = False
        self._start_renewer()

    def release(self) -> None:
        with self._free:
            if self._owner != threading.get_ident():
                raise RuntimeError("releasing a lease this thread does not hold")
            self._depth -= 1
            if self._depth:
                return
            token, self.token = self.token, ""
        try:
            if token and not self._release(keys=[self.key], args=[token]) and not self.lost:
                self.lost = True
                log.error("the writer lease %s had expired before its scope ended (another daemon may have "
                          "written meanwhile)", self.key)
        finally:
            with self._free:
                self._owner = None
                self._free.notify()

    def _start_renewer(self) -> None:
        if self._renewer is None or not self._renewer.is_alive():
            self._renewer = threading.Thread(target=self._renew_loop, name="keymem-lease", daemon=True)
            self._renewer.start()

    def _renew_loop(self) -> None:
        """Renew while held; end once nobody held it for a whole ttl (the next acquisition starts it again)."""
        idle_since: float | None = None
        while True:
            time.sleep(self.ttl_ms / 3000)
            with self._guard:
                token = self.token
            if not token:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > self.ttl_ms / 1000:
                    with self._guard:
                        if not self.token:
                            self._renewer = None
                            return
                continue
            idle_since = None
            try:
                ok = self._renew(keys=[self.key], args=[token, self.ttl_ms])
            except Exception as exc:  # the server is away: the scope's own statements fail and say so
                log.warning("renewing the writer lease %s failed: %s", self.key, exc)
                continue
            with self._guard:
                if not ok and self.token == token and not self.lost:
                    self.lost = True
                    log.error("the writer lease %s was lost while held (this process stalled for more than "
                              "%d ms)", self.key, self.ttl_ms)
