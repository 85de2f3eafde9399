"""Where an MCP front's tool calls go: the shared daemon (default) or an in-process graph.

Blocking work runs on each backend's own pool of *daemon* threads: a call stuck waiting for the
daemon must never keep the process alive after the MCP client has closed stdin.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from keymem.server.aclient import AsyncDaemonConnections, Fallback
from keymem.server.client import START_TIMEOUT_S, DaemonClient, compatibility_warnings
from keymem.server.host import GraphHost
from keymem.server.protocol import write_request_id
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


WARM_AFTER_S = 3.0  # with the prompt hook: start the daemon once a session has stayed open this long


class Backend(Protocol):
    def start(self) -> None:
        """Start-up work that needs no store: it must not spawn the daemon nor import ladybug/onnxruntime."""

    def kick(self) -> None:
        """``initialize`` has been answered."""

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None = None) -> Any:
        """The call's result, awaited on the caller's event loop."""

    def counts(self, timeout: float) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


class DaemonBackend:
    """Bridge every call to the shared daemon, starting it on the first call that needs it (the default).

    ``initialize`` and ``tools/list`` never start it: a health check (``claude mcp list``
    connects, lists the tools and closes) must not load the embedding model. A daemon that
    already runs is reached at start-up (that loads nothing here) for the live counts in the
    instructions. With ``KEYMEM_HOOK_INSTALLED=true`` the daemon is also started once the
    session has stayed open ``WARM_AFTER_S`` after ``initialize``: the prompt hook never
    starts it, and the first prompts would otherwise get no memories until a tool call.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = DaemonClient(settings, start=True)
        self.pool = DaemonPool(16, "keymem-bridge")
        self.fast = AsyncDaemonConnections(settings)
        self._connected = threading.Event()
        self._hello_lock = threading.Lock()
        self._warm: threading.Timer | None = None

    def start(self) -> None:
        """Look for a running daemon in the background; never start one here."""
        threading.Thread(target=self._find, name="keymem-connect", daemon=True).start()

    def kick(self) -> None:
        if self.settings.hook_installed and self._warm is None:
            self._warm = threading.Timer(WARM_AFTER_S, self._warm_up)
            self._warm.name, self._warm.daemon = "keymem-warm", True
            self._warm.start()

    def _find(self) -> None:
        try:
            self._greet(self.client.call("ping", timeout=5.0, retry=False, start=False))
        except Exception as exc:
            log.info("no keymem daemon running (%s); the first tool call starts one", exc)
        finally:
            self._connected.set()

    def warm(self) -> None:
        """Start the daemon now, if none runs (a server expecting traffic: the models load before it)."""
        self._connected.wait(10.0)
        self._warm_up()

    def _warm_up(self) -> None:
        try:
            self._hello()
        except Exception as exc:
            log.warning("keymem daemon not started: %s", exc)

    def _hello(self) -> None:
        """Reach the daemon, starting it if none runs (waits for its socket, ``START_TIMEOUT_S``)."""
        with self._hello_lock:
            if self.client.info is None:
                self._greet(self.client.call("ping", timeout=START_TIMEOUT_S))

    def _greet(self, info: dict[str, Any]) -> None:
        self.client.info = info
        log.info("connected to keymem daemon %s (%s)", info.get("pid"), info.get("state"))
        for warning in compatibility_warnings(info, self.settings):
            log.warning("%s", warning)

    def session_notes(self) -> list[str]:
        """What the session's first tool result says about the daemon it reached: another keymem version,
        or settings (model, reranker, thresholds) that differ from this client's and win over them."""
        return compatibility_warnings(self.client.info, self.settings) if self.client.info is not None else []

    def _call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
              request_id: str | None) -> Any:
        if self.client.info is None:
            self._hello()
        return self.client.call(method, params, source=source, request_id=request_id)

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None = None) -> Any:
        """The call on the event loop's own connection to a daemon already greeted; else (the first
        call, a daemon lost) on a bridge thread, which starts a daemon and retries once. A mutating
        call runs at most once per ``request_id`` (the client's own, else one made here)."""
        request_id = write_request_id(method, request_id)
        if self.client.info is not None:
            try:
                return await self.fast.call(method, params, source, request_id)
            except Fallback as exc:
                log.warning("lost the keymem daemon during %s (%s); reconnecting", method, exc)
        return await asyncio.wrap_future(self.pool.submit(self._call, method, params, source, request_id))

    def counts(self, timeout: float) -> dict[str, Any] | None:
        """The running daemon's counts, or None (never starts one)."""
        deadline = time.monotonic() + timeout
        if not self._connected.wait(timeout) or self.client.info is None:
            return None
        try:
            result = self.client.call("counts", timeout=max(0.05, deadline - time.monotonic()), retry=False,
                                      start=False)
        except Exception:
            return None
        return result if isinstance(result, dict) else None

    def close(self) -> None:
        if self._warm is not None:
            self._warm.cancel()
        self.pool.close()
        self.fast.close()
        self.client.close()


class LocalBackend:
    """``KEYMEM_DAEMON=off``: this process opens the store itself (one client only).

    The store opens on the first tool call, not at start-up: a health check must neither load
    the models nor take Kuzu's write lock from the session that holds it. That first call waits
    for the models to load (as it would wait for a cold daemon).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.host = GraphHost(settings)
        self.pool = DaemonPool(4, "keymem-local")
        self._open_lock = threading.Lock()
        self._opened = False

    def start(self) -> None:
        """Nothing to do before the first call (see :meth:`open`)."""

    def kick(self) -> None:
        pass

    def open(self) -> GraphHost:
        """Start opening the store (MemoryGraph.open sweeps expired memories) once; returns the host."""
        with self._open_lock:
            if not self._opened:
                self._opened = True
                self.host.start()
        return self.host

    def _call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
              request_id: str | None) -> Any:
        return self.open().call(method, params, source, request_id)

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None = None) -> Any:
        return await asyncio.wrap_future(self.pool.submit(self._call, method, params, source, request_id))

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
