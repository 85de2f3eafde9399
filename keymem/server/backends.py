"""Where the stdio server's tool calls go: the shared daemon (default) or an in-process graph.

Both run blocking work on their own pool of *daemon* threads: a call stuck waiting for the
daemon must never keep the process alive after the MCP client has closed stdin.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from keymem.server.client import DaemonClient, compatibility_warnings
from keymem.server.host import GraphHost
from keymem.settings import Settings

log = logging.getLogger("keymem.server")


class DaemonPool:
    """A fixed pool of daemon threads (stable threads also keep one Kuzu connection each)."""

    def __init__(self, size: int, name: str) -> None:
        self._q: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(size)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        self._q.put((fut, fn, args))
        return fut

    def _work(self) -> None:
        while True:
            job = self._q.get()
            if job is None:
                return
            fut, fn, args = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:
                fut.set_exception(exc)

    def close(self) -> None:
        for _ in self._threads:
            self._q.put(None)


KICK_DELAY_S = 1.5  # start the daemon / load the store at the latest this long after start


class Backend(Protocol):
    def start(self) -> None: ...

    def kick(self) -> None:
        """``initialize`` has been answered: heavy start-up work may begin now."""

    def submit(self, method: str, params: dict[str, Any], source: dict[str, Any] | None) -> Future[Any]: ...

    def counts(self, timeout: float) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


class DaemonBackend:
    """Bridge every call to the shared daemon, starting it if needed (the default)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = DaemonClient(settings, start=True)
        self.pool = DaemonPool(16, "keymem-bridge")
        self._connected = threading.Event()
        self._absent = threading.Event()
        self._kick = threading.Event()

    def start(self) -> None:
        """Connect in the background; if no daemon runs, spawn one once ``initialize`` is answered.

        Waiting for the kick keeps the daemon's import and model-loading burst off the CPU
        while this process is still importing the SDK (the 2-second ``initialize`` budget).
        """
        threading.Thread(target=self._connect, name="keymem-connect", daemon=True).start()

    def kick(self) -> None:
        self._kick.set()

    def _connect(self) -> None:
        try:
            try:
                info = self.client.call("ping", timeout=5.0, retry=False, start=False)
            except Exception:
                self._absent.set()  # no live counts for this initialize: do not wait for them
                self._kick.wait(KICK_DELAY_S)
                info = self.client.call("ping", timeout=None)
            self.client.info = info
            log.info("connected to keymem daemon %s (%s)", info.get("pid"), info.get("state"))
            for warning in compatibility_warnings(info, self.settings):
                log.warning("%s", warning)
        except Exception as exc:
            log.warning("keymem daemon not reachable yet: %s", exc)
        finally:
            self._connected.set()

    def submit(self, method: str, params: dict[str, Any], source: dict[str, Any] | None) -> Future[Any]:
        return self.pool.submit(lambda: self.client.call(method, params, source=source))

    def counts(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        if self._absent.is_set() and not self._connected.is_set():
            return None
        if not self._connected.wait(timeout):
            return None
        try:
            result = self.client.call("counts", timeout=max(0.05, deadline - time.monotonic()), retry=False)
        except Exception:
            return None
        return result if isinstance(result, dict) else None

    def close(self) -> None:
        self.pool.close()
        self.client.close()


class LocalBackend:
    """``KEYMEM_DAEMON=off``: this process opens the store itself (one client only)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.host = GraphHost(settings)
        self.pool = DaemonPool(4, "keymem-local")
        self._kick = threading.Event()

    def start(self) -> None:
        """Open the store (MemoryGraph.open sweeps expired memories) once ``initialize`` is answered:
        importing kuzu and the models on another thread would hold the GIL the SDK import needs."""

        def later() -> None:
            self._kick.wait(KICK_DELAY_S)
            self.host.start()

        threading.Thread(target=later, name="keymem-local-start", daemon=True).start()

    def kick(self) -> None:
        self._kick.set()

    def submit(self, method: str, params: dict[str, Any], source: dict[str, Any] | None) -> Future[Any]:
        return self.pool.submit(self.host.call, method, params, source)

    def counts(self, timeout: float) -> dict[str, Any] | None:
        if self.host.graph is not None:
            try:
                result: dict[str, Any] = self.pool.submit(self.host.counts).result(timeout)
                return result
            except Exception:
                return None
        return self.host.counts() if self.host.precounts is not None else None

    def close(self) -> None:
        self.pool.close()
        try:
            self.host.close()
        except Exception:
            log.exception("closing the store failed")
