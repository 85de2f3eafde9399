"""GraphHost: owns one MemoryGraph for a process and maps method names to it.

Used by the daemon (shared by every client) and by the stdio server when
``KEYMEM_DAEMON=off``. The graph opens on a background thread, so a process can answer
``initialize``/``ping``/``counts`` at once while models load; a call that needs the graph
waits for it. Heavy modules (kuzu, onnxruntime, the domain) are imported only on that thread.

Extensions (the CLI's console, snapshots, exports) need no registration here: a method named
``"keymem.some.module:function"`` runs ``function(graph, params)`` if the function is marked
with :func:`daemon_method` and its module lives in the ``keymem`` package.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from keymem import __version__
from keymem.errors import InvalidInput, KeymemError, PoolFull, StoreError, shown
from keymem.server.protocol import PROTOCOL_VERSION, TOOLS, WRITES, daemon_view
from keymem.settings import Settings

if TYPE_CHECKING:
    from keymem.memory.graph import MemoryGraph

log = logging.getLogger("keymem.server")

F = TypeVar("F", bound=Callable[..., Any])
WRITES_WITH_SOURCE = ("remember", "correct", "remember_batch")


def daemon_method(fn: F) -> F:
    """Mark ``fn(graph, params) -> JSON`` as callable through the daemon as ``module:function``."""
    fn.__keymem_daemon_method__ = True  # type: ignore[attr-defined]
    return fn


def _dump(value: Any) -> Any:
    return value.dump() if hasattr(value, "dump") else value


class GraphHost:
    """One process's graph: opened once (store + models), then shared by every caller."""

    def __init__(self, settings: Settings, *, opener: Callable[[Settings], MemoryGraph] | None = None) -> None:
        self.settings = settings
        self.state = "starting"  # starting -> loading -> ready | failed ; closed
        self.error: BaseException | None = None
        self.graph: MemoryGraph | None = None
        self.precounts: dict[str, int] | None = None
        self.started_at = time.time()
        self._opener = opener or _open_graph
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # -- loading -------------------------------------------------------------------
    def start(self) -> GraphHost:
        self._thread = threading.Thread(target=self._load, name="keymem-load", daemon=True)
        self._thread.start()
        return self

    def _load(self) -> None:
        try:
            self.precounts = _precount(self.settings)
            self.state = "loading"
            t0 = time.monotonic()
            self.graph = self._opener(self.settings)
            self.state = "ready"
            log.info("store and models ready in %.1f s", time.monotonic() - t0)
        except BaseException as exc:  # reported to every caller; the process decides what to do
            self.error = exc
            self.state = "failed"
            log.error("cannot open the store or load the models: %s", exc, exc_info=not isinstance(exc, KeymemError))
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> MemoryGraph:
        """The graph, waiting for it to load; raises the load error if loading failed."""
        if not self._ready.wait(timeout):
            raise StoreError("the store is still loading; try again shortly")
        if self.graph is None:
            err = self.error
            if isinstance(err, KeymemError):
                raise type(err)(str(err))
            raise StoreError(f"keymem could not start: {type(err).__name__}: {err}")
        return self.graph

    # -- calls ---------------------------------------------------------------------
    def counts(self) -> dict[str, Any]:
        """Live counts once loaded; the counts read before loading otherwise (marked)."""
        if self.graph is not None:
            return {**self.graph.counts(), "loading": False}
        pre: dict[str, Any] = dict(self.precounts) if self.precounts else {"keys": None, "memories": None, "links": None}
        return {**pre, "loading": self.state in ("starting", "loading")}

    def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None = None,
             request_id: str | None = None) -> Any:
        """Run one graph method; KeymemError messages are meant for the agent.

        A mutating tool called with ``request_id`` runs at most once per id: a repeat (the
        client's retry after losing the daemon) gets the first call's recorded result.
        """
        if not isinstance(params, dict):
            raise InvalidInput("params must be a JSON object")
        if method == "counts":
            return self.counts()
        graph = self.wait()
        graph.catch_up()  # other daemons' writes to a shared store, before the indexes are read
        commits = graph.store.thread_commits()
        try:
            return self._once(graph, method, params, source, request_id)
        except PoolFull:
            if graph.store.thread_commits() != commits or ":" in method:  # an extension (console) fails alone
                raise  # part of the call is written: the caller decides (its retry carries the request id)
            # Nothing was written and the pool was recovered (Store.recover_pool): run it once more.
            log.warning("%s found the buffer pool full; running it once more", method)
            return self._once(graph, method, params, source, request_id)

    def _once(self, graph: MemoryGraph, method: str, params: dict[str, Any], source: dict[str, Any] | None,
              request_id: str | None) -> Any:
        if request_id is not None and method in WRITES:
            return graph.requests.once(request_id, method, params, lambda: self._run(graph, method, params, source))
        return self._run(graph, method, params, source)

    def _run(self, graph: MemoryGraph, method: str, params: dict[str, Any], source: dict[str, Any] | None) -> Any:
        if method in WRITES_WITH_SOURCE:
            if method == "remember_batch":
                extra = set(params) - {"items"}
                if extra:
                    raise InvalidInput(f"remember_batch takes only items; unexpected: {', '.join(sorted(extra))}")
                return _dump(graph.remember_batch(params.get("items"), source=source))
            args = {k: v for k, v in params.items() if k != "source"}  # provenance comes from the host only
            return _dump(getattr(graph, method)(source=source, **args))
        if method in TOOLS:
            return _dump(getattr(graph, method)(**params))
        if method == "inject":
            return _dump(graph.recall_inject(**params))
        if method == "sweep":
            return graph.sweep()
        if ":" in method:
            return _extension(method)(graph, params)
        raise InvalidInput(f"unknown method {shown(method)}")

    def info(self) -> dict[str, Any]:
        """What ``ping`` reports: identity, state and the configuration that matters to clients."""
        s = self.settings
        return {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "state": self.state,
            "error": str(self.error) if self.error else None,
            "uptime_s": round(time.time() - self.started_at, 1),
            "data_dir": str(s.data_dir.absolute()),
            "embedding": f"{s.backend}:{s.local_embedding_model if s.backend == 'local' else s.openai_embedding_model}",
            "settings": daemon_view(s),  # clients compare theirs (client.setting_differences)
        }

    def close(self) -> None:
        self.state = "closed"
        if self.graph is not None:
            graph, self.graph = self.graph, None
            graph.close()


def _open_graph(settings: Settings) -> MemoryGraph:
    from keymem.memory.namespace_graphs import open_memory

    return open_memory(settings, progress=False)  # type: ignore[return-value]  # the same surface


def _precount(settings: Settings) -> dict[str, int] | None:
    """Counts straight from the store before the models load (for the server instructions)."""
    if not settings.store_url and not settings.db_path.exists():
        return {"keys": 0, "memories": 0, "links": 0}
    if settings.store_url and settings.falkordb_graphs == "namespace":
        return None  # no one graph to count (and a read would leave an empty graph "prefix" behind)
    try:
        from keymem.store.factory import open_store

        store = open_store(settings.with_overrides(buffer_pool_mb=64), read_only=True)
        try:
            r = store.query("admin/counts", now=time.time())[0]
            return {"keys": int(r["keys"]), "memories": int(r["memories"]), "links": int(r["links"])}
        finally:
            store.close()
    except Exception as exc:  # an old schema, a WAL to replay: the real open will say more
        log.debug("no early counts: %s", exc)
        return None


def _extension(method: str) -> Callable[[MemoryGraph, dict[str, Any]], Any]:
    module_name, _, attr = method.partition(":")
    if not module_name.startswith("keymem.") or not attr.isidentifier():
        raise InvalidInput(f"unknown method {shown(method)}")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        raise InvalidInput(f"unknown method {shown(method)}") from None
    if not getattr(fn, "__keymem_daemon_method__", False):
        raise InvalidInput(f"{shown(method)} is not a daemon method")
    return fn  # type: ignore[no-any-return]
