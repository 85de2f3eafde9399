"""A graph per namespace on FalkorDB (``KEYMEM_FALKORDB_GRAPHS=namespace``).

Each namespace is its own graph, ``<prefix>:<namespace>``, so a Redis Cluster (which keeps each graph
whole on one shard) spreads namespaces over its shards. Namespaces never mix in keymem: every tool call
names one, or an id that belongs to one. So each namespace is served by a :class:`MemoryGraph` of its own
(its own store, caches and catch-up), sharing the process's models, and :class:`NamespaceGraphs` routes
each call to the right one:

* a call that names a namespace (``recall``, ``remember``, ``browse_keys``, the hook, or any call with
  ``namespace``) goes to that namespace's graph, opened on first use (created on its first write);
* a call by id with no namespace (``read_memory``, ``forget``, ...) goes to the graph that holds the id:
  the graphs are asked in turn, the answer is remembered (ids never move between namespaces);
* a ``remember_batch`` writes one namespace: one atomic write is one graph;
* what is about the whole store (counts, sweep, catch-up, close) is every graph's; the request log, the
  console and the store facts are the default namespace's graph's.

Cross-namespace work above this (export of all, import, ``keymem check``, the digest) walks
:meth:`NamespaceGraphs.graphs` (keymem/cli/ops.py).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from keymem.errors import InvalidInput, StoreError
from keymem.memory import validate
from keymem.memory.graph import MemoryGraph

if TYPE_CHECKING:
    from keymem.engine_url import FalkorURL
    from keymem.models.base import EmbeddingBackend, Reranker
    from keymem.settings import Settings

log = logging.getLogger("keymem.memory")

# Methods whose request always has a namespace (its default when omitted): routed by it alone.
BY_NAMESPACE = frozenset({"recall", "browse_keys", "recall_direct", "recall_inject", "remember"})
# Methods that may be a namespace's first write, and so create its graph.
WRITES_NEW = frozenset({"remember", "remember_batch"})
_BACKUP = re.compile(r"\.bak\.\d{8}T")  # a graph's backup (FalkorStore.backup), not a namespace


def namespace_graph_names(graphs: list[str], prefix: str) -> list[str]:
    """The namespaces that have a graph among ``graphs`` (GRAPH.LIST), in name order."""
    head = f"{prefix}:"
    return sorted(g[len(head):] for g in graphs if g.startswith(head) and not _BACKUP.search(g))


class NamespaceGraphs:
    """The :class:`MemoryGraph` surface over one graph per namespace (module docstring)."""

    def __init__(self, settings: Settings, url: FalkorURL, embedder: EmbeddingBackend, reranker: Any,
                 clock: Callable[[], float] = time.time, progress: bool = False) -> None:
        self.settings = settings
        self.url = url
        self.embedder = embedder
        self._reranker = reranker
        self.now = clock
        self._progress = progress
        self._graphs: dict[str, MemoryGraph] = {}
        self._where: dict[str, str] = {}  # id -> its namespace, learnt by lookups
        self._lock = threading.RLock()

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings, *, embedder: EmbeddingBackend | None = None,
             reranker: Reranker | None | Callable[[], Reranker | None] | str = "auto",
             clock: Callable[[], float] = time.time, progress: bool = True) -> NamespaceGraphs:
        """Open the graph of every namespace the server holds (and the default namespace's)."""
        from keymem.engine_url import parse_store_url

        assert settings.store_url is not None
        if embedder is None:
            from keymem.models.factory import build_embedder

            embedder = build_embedder(settings, progress=progress)
        if reranker == "auto":
            reranker = _shared_reranker(settings, progress) if settings.rerank else None
        graphs = cls(settings, parse_store_url(settings.store_url), embedder, reranker, clock, progress)
        try:
            for namespace in {validate.DEFAULT_NAMESPACE, *graphs.server_namespaces()}:
                graphs.graph(namespace)
        except BaseException:
            graphs.close()
            raise
        return graphs

    def server_namespaces(self) -> list[str]:
        """The namespaces with a graph on the server, other daemons' new ones included."""
        home = self._graphs.get(validate.DEFAULT_NAMESPACE)
        names = home.store.graphs() if home is not None else server_graphs(self.url)  # type: ignore[attr-defined]
        return namespace_graph_names(names, self.url.prefix)

    def graph(self, namespace: str) -> MemoryGraph:
        """The graph of ``namespace``, opened on first use (its store graph is created by its first write)."""
        found = self._graphs.get(namespace)
        if found is not None:
            return found
        with self._lock:
            found = self._graphs.get(namespace)
            if found is not None:
                return found
            from keymem.store.falkor_connect import AckPolicy
            from keymem.store.falkordb import FalkorStore

            store = FalkorStore(self.url.for_namespace(namespace), ack=AckPolicy.of(self.settings))
            own = self.settings.with_overrides(data_dir=self.settings.data_dir / "namespaces" / quote(namespace, safe=""))
            opened = MemoryGraph.open(own, embedder=self.embedder, reranker=self._reranker, clock=self.now,
                                      progress=self._progress, store=store)
            self._graphs[namespace] = opened
            log.info("serving namespace %s from the graph %s", namespace, self.url.for_namespace(namespace).graph)
            return opened

    def graphs(self) -> Iterator[tuple[str, MemoryGraph]]:
        """(namespace, graph) for every namespace on the server, in name order."""
        for namespace in sorted({*self._graphs, *self.server_namespaces()}):
            yield namespace, self.graph(namespace)

    @property
    def home(self) -> MemoryGraph:
        """The default namespace's graph: the request log, the console and the store facts are its."""
        return self.graph(validate.DEFAULT_NAMESPACE)

    # -- routing ---------------------------------------------------------------------------
    def _route(self, method: str, request: Any, fields: dict[str, Any]) -> MemoryGraph:
        def field(name: str) -> Any:
            return getattr(request, name, None) if request is not None else fields.get(name)

        namespace = field("namespace")
        if method in BY_NAMESPACE or namespace is not None:
            namespace = validate.namespace(namespace)
            if method not in WRITES_NEW and namespace not in self._graphs and namespace not in self.server_namespaces():
                return self.home  # nothing stored there: answered as one graph would (a read makes no graph)
            return self.graph(namespace)
        memory_id, key_id = field("memory_id"), field("key_id")
        ident = memory_id if isinstance(memory_id, str) else key_id
        if isinstance(ident, str) and validate.looks_like_id(ident):
            return self.graph(self.locate(ident))
        return self.home  # a key's text with no namespace: the default one, as on one graph

    def locate(self, ident: str) -> str:
        """The namespace whose graph holds ``ident``; the default namespace when none does (whose graph
        then answers with the usual not-found error)."""
        known = self._where.get(ident)
        if known is not None:
            return known
        statement = "memory/get" if ident.startswith("m_") else "key/get"
        for namespace, graph in self.graphs():
            if graph.store.query(statement, id=ident):
                self._where[ident] = namespace
                return namespace
        return validate.DEFAULT_NAMESPACE

    def _call(self, method: str, request: Any, fields: dict[str, Any], **extra: Any) -> Any:
        graph = self._route(method, request, fields)
        graph.catch_up()
        args = (request,) if request is not None else ()
        return getattr(graph, method)(*args, **extra, **fields)

    # -- tools -----------------------------------------------------------------------------
    def remember(self, request: Any = None, /, source: dict[str, Any] | None = None, **fields: Any) -> Any:
        return self._call("remember", request, fields, source=source)

    def remember_batch(self, items: Any, source: dict[str, Any] | None = None) -> Any:
        """One batch is one atomic write, so it writes one namespace's graph."""
        if not isinstance(items, list) or not items:
            return self.home.remember_batch(items, source=source)  # its own error for a bad list
        named = {validate.namespace(i.get("namespace")) if isinstance(i, dict) else validate.DEFAULT_NAMESPACE
                 for i in items}
        if len(named) > 1:
            raise InvalidInput(f"remember_batch: this store keeps each namespace in its own graph, so one batch "
                               f"writes one namespace; the items name {', '.join(sorted(named))}")
        graph = self.graph(named.pop())
        graph.catch_up()
        return graph.remember_batch(items, source=source)

    def correct(self, request: Any = None, /, source: dict[str, Any] | None = None, **fields: Any) -> Any:
        return self._call("correct", request, fields, source=source)

    def forget(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("forget", request, fields)

    def dismiss(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("dismiss", request, fields)

    def confirm_memory(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("confirm_memory", request, fields)

    def read_key(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("read_key", request, fields)

    def read_memory(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("read_memory", request, fields)

    def browse_keys(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("browse_keys", request, fields)

    def recall(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("recall", request, fields)

    def recall_direct(self, request: Any = None, /, *, reinforce: bool = True, **fields: Any) -> Any:
        return self._call("recall_direct", request, fields, reinforce=reinforce)

    def recall_inject(self, request: Any = None, /, **fields: Any) -> Any:
        return self._call("recall_inject", request, fields)

    def memory_json(self, memory_id: str) -> dict[str, Any]:
        return self.graph(self.locate(memory_id)).memory_json(memory_id)

    # -- the whole store -------------------------------------------------------------------
    def catch_up(self) -> int:
        """Nothing here: each call catches its own namespace's graph up before it reads (:meth:`_call`)."""
        return 0

    def counts(self) -> dict[str, int]:
        return summed(graph.counts() for _, graph in self.graphs())

    def sweep(self) -> dict[str, int]:
        return summed(graph.sweep() for _, graph in self.graphs())

    def reload_caches(self) -> None:
        for graph in list(self._graphs.values()):
            graph.reload_caches()

    def reload_indexes(self) -> None:
        for graph in list(self._graphs.values()):
            graph.reload_indexes()

    def close(self) -> None:
        with self._lock:
            graphs, self._graphs = list(self._graphs.values()), {}
        for graph in graphs:
            try:
                graph.close()
            except Exception as exc:  # one namespace failing to close must not keep the others open
                log.warning("closing a namespace's graph failed: %s", exc)

    def __getattr__(self, name: str) -> Any:
        """Everything else (the store, the request log, the caches' facts, ``embed``) is the default
        namespace's graph's."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.home, name)


def summed(parts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Each name's total over the namespaces' figures (counts, a sweep's, an import's report); a name
    that is 0 everywhere stays, at 0."""
    total: dict[str, int] = {}
    for part in parts:
        for name, value in part.items():
            total[name] = total.get(name, 0) + value
    return total


def _shared_reranker(settings: Settings, progress: bool) -> Callable[[], Reranker | None]:
    """One cross-encoder for every namespace's graph, loaded on the first call that needs it."""
    lock = threading.Lock()
    loaded: list[Reranker | None] = []

    def load() -> Reranker | None:
        with lock:
            if not loaded:
                from keymem.models.factory import build_reranker

                loaded.append(build_reranker(settings, progress=progress))
            return loaded[0]

    return load


def check_layout(graphs: list[str], url: FalkorURL, layout: str, *, one_holds_data: bool = True) -> None:
    """Refuse to open a store whose server holds the other layout's graphs: the same data would be
    invisible under this one. One line saying how to move it. ``one_holds_data``: the graph ``prefix``
    holds keys or memories (a read of a graph that does not exist leaves an empty one behind)."""
    one = url.prefix in graphs and one_holds_data
    per_namespace = bool(namespace_graph_names(graphs, url.prefix))
    if layout == "namespace" and one:
        raise StoreError(f"the FalkorDB store {url.shown()} keeps its namespaces in one graph ({url.prefix}) but "
                         "KEYMEM_FALKORDB_GRAPHS=namespace: set it back to one, or move the store with "
                         "`keymem export` under one and `keymem import` under namespace (docs/scaling-out.md)")
    if layout == "one" and per_namespace and not one:
        raise StoreError(f"the FalkorDB store {url.shown()} keeps a graph per namespace ({url.prefix}:<namespace>) "
                         "but KEYMEM_FALKORDB_GRAPHS=one: set KEYMEM_FALKORDB_GRAPHS=namespace")


def server_graphs(url: FalkorURL) -> list[str]:
    """Every graph name on the server (a short-lived connection of its own)."""
    return server_layout(url)[0]


def server_layout(url: FalkorURL) -> tuple[list[str], bool]:
    """The server's graph names, and whether the graph ``prefix`` holds any key or memory."""
    from keymem.store.falkordb import FalkorStore

    probe = FalkorStore(url, read_only=True)
    try:
        graphs = probe.graphs()
        if url.prefix not in graphs:
            return graphs, False
        counts = probe.query("admin/counts", now=time.time())
        return graphs, bool(counts) and (int(counts[0]["keys"] or 0) + int(counts[0]["memories"] or 0)) > 0
    finally:
        probe.close()


def open_memory(settings: Settings, **kwargs: Any) -> MemoryGraph | NamespaceGraphs:
    """The graph the daemon and the CLI serve: one :class:`MemoryGraph`, or a graph per namespace on FalkorDB
    when ``KEYMEM_FALKORDB_GRAPHS=namespace`` (after checking the server holds no store of the other layout)."""
    if settings.store_url:
        from keymem.engine_url import parse_store_url

        url = parse_store_url(settings.store_url)
        graphs, one_holds_data = server_layout(url)
        check_layout(graphs, url, settings.falkordb_graphs, one_holds_data=one_holds_data)
        if settings.falkordb_graphs == "namespace":
            return NamespaceGraphs.open(settings, **kwargs)
    return MemoryGraph.open(settings, **kwargs)
