"""The store on a FalkorDB server (``KEYMEM_STORE_URL=falkordb://...``): the same surface as :class:`Store`.

FalkorDB is a Redis module speaking openCypher. What differs from LadybugDB, and where it is handled:

* Schemaless labels: there is no ``CREATE NODE TABLE``. Schema steps keep their names (the store
  records them) and hold range indexes and explicit backfills instead
  (``cypher/engines/falkordb/schema/``); a step FalkorDB does not need is a file of comments only.
* Vectors are ``vecf32(...)`` values (``cypher/engines/falkordb/vectors/insert.cypher``). Key search
  uses keymem's exact scan over its in-memory copy on this engine (``vector_index`` is False).
* Node internal ids are handed to the next node created as soon as a node is deleted, so nothing
  here keeps them between statements; whole-label reads page by id range within one load only.
* The Python client sends parameters as text in the query header (:func:`_check_text` refuses a
  NUL, which would cut the header short); doubles come back with 15 significant digits.
* No multi-statement transactions, but one ``GRAPH.QUERY`` is atomic (a query failing at run time
  is undone whole). So a write scope defers its writes (``Capabilities.deferred_writes``): a
  statement that writes is queued (its rows, a ``PendingRows``, arrive at commit), reads run at once
  against the graph as it was before the scope, and at the scope's end, after its ``before_commit``
  callables, the queue is sent as one query of ``CALL {}`` subqueries (:mod:`keymem.store.compose`).
  The scope is applied whole or not at all (``atomic_write_scope``). A query plans its matches on the
  labels and relationship types the graph holds, so they are all created once per graph first
  (:meth:`FalkorExecutor.register_names`). Index changes cannot be part of a query and run alone; a
  bulk scope (``Store.write(bulk=True)``) is sent in chunks of ``BULK_STATEMENTS``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from keymem.engine_url import FalkorURL
from keymem.errors import StoreError
from keymem.store import cypher, falkor_connect
from keymem.store.compose import (
    LABELS_QUERY,
    TYPES_QUERY,
    Queued,
    compose,
    is_schema_change,
    names_query,
    rows_at,
)
from keymem.store.db import KEEP_BACKUPS, Store, Tx, _stamp
from keymem.store.executor import Capabilities, PendingRows, Row
from keymem.store.falkor_connect import AckPolicy
from keymem.store.falkor_lock import RedisLease

log = logging.getLogger("keymem.store")

ENGINE = "falkordb"
FALKORDB = Capabilities(engine=ENGINE, atomic_write_scope=True, deferred_writes=True, vector_index=False,
                        prepared_statements=False, checkpoint=False, stable_node_ids=False, local_file=False,
                        shared_writers=True)
# A bulk scope (Store.write(bulk=True): import, re-embedding) is sent in queries of this many statements:
# planning one query grows faster than linearly with its subqueries (docs/engines.md).
BULK_STATEMENTS = 2000


_TABLE = re.compile(r"CREATE\s+(?:NODE|REL)\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*?)\)\s*$", re.S | re.I)
_KIND = re.compile(r"CREATE\s+(NODE|REL)\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I)
_ADD = re.compile(r"ALTER\s+TABLE\s+(\w+)\s+ADD\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I)
_DROP = re.compile(r"ALTER\s+TABLE\s+(\w+)\s+DROP\s+(?:IF\s+EXISTS\s+)?(\w+)", re.I)


@cache
def schema_columns() -> dict[str, tuple[str, ...]]:
    """Each label's and relationship type's properties, from the shared (LadybugDB) schema steps.

    FalkorDB stores no null property, so a node read back lacks the keys LadybugDB returns as None;
    rows are filled to the same keys from this (``_plain``).
    """
    out: dict[str, list[str]] = {}
    steps = [f"schema/{p.stem}" for p in sorted((cypher.cypher_root() / "schema").glob("[0-9][0-9][0-9]_*.cypher"))]
    for step in [*steps, "vectors/create_table"]:
        for stmt in cypher.load_script(step, dim=1):
            if m := _TABLE.match(stmt):
                cols = [c.strip().split()[0] for c in m.group(2).split(",") if c.strip()]
                out[m.group(1)] = [c for c in cols if c.upper() not in ("FROM",)]
            elif m := _ADD.match(stmt):
                out.setdefault(m.group(1), []).append(m.group(2))
            elif m := _DROP.match(stmt):
                out[m.group(1)] = [c for c in out.get(m.group(1), []) if c != m.group(2)]
    return {name: tuple(cols) for name, cols in out.items()}


@cache
def schema_names() -> tuple[list[str], list[str]]:
    """The node labels and relationship types of the shared (LadybugDB) schema steps."""
    labels: list[str] = []
    types: list[str] = []
    steps = [f"schema/{p.stem}" for p in sorted((cypher.cypher_root() / "schema").glob("[0-9][0-9][0-9]_*.cypher"))]
    for step in [*steps, "vectors/create_table"]:
        for stmt in cypher.load_script(step, dim=1):
            if m := _KIND.match(stmt):
                (labels if m.group(1).upper() == "NODE" else types).append(m.group(2))
    return sorted(set(labels)), sorted(set(types))


def _entity(labels: list[str], props: dict[str, Any]) -> dict[str, Any]:
    columns = schema_columns()
    out = {k: None for label in labels for k in columns.get(label, ())}
    out.update((k, _plain(v)) for k, v in props.items())
    return out


def _plain(value: Any) -> Any:
    """A result value as LadybugDB's rows give it: nodes and edges as property dicts (every property
    of the label, None where FalkorDB holds none), maps as dicts."""
    from falkordb import Edge, Node

    if isinstance(value, Node):
        return _entity(list(value.labels or ()), value.properties)
    if isinstance(value, Edge):
        return _entity([value.relation] if value.relation else [], value.properties)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _check_text(params: dict[str, Any]) -> None:
    """Refuse a NUL in a string parameter: the client sends parameters as text and a NUL ends it."""

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if "\x00" in value:
                raise StoreError("a text value holds a NUL character, which FalkorDB cannot take as a parameter")
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(params)


class FalkorExecutor:
    """Statements on one graph of a FalkorDB server (FalkorDB's :class:`~keymem.store.executor.Executor`).

    The client's connection pool is thread-safe, so one executor serves every thread. Between
    :meth:`begin` and :meth:`commit` (a write scope, on the thread that holds the store's writer) a
    statement that writes is queued and its rows are a :class:`PendingRows`; reads run at once, against
    the graph as it was before the scope. :meth:`commit` sends the queue as one query
    (:mod:`keymem.store.compose`), so the scope's writes are applied whole or not at all.
    """

    capabilities = FALKORDB

    def __init__(self, graph: Any, where: str) -> None:
        self.graph = graph
        self.where = where
        self._local = threading.local()
        self.names_ready = False  # every label and relationship type exists in the graph (register_names)
        self.commits = 0  # composed queries sent (scopes that wrote, and bulk scopes' chunks)

    @property
    def _queue(self) -> list[Queued] | None:
        queue: list[Queued] | None = getattr(self._local, "queue", None)
        return queue

    def _query(self, text: str, params: dict[str, Any] | None, name: str) -> list[Row]:
        import redis

        if params:
            _check_text(params)
        try:
            result = self.graph.query(text, params or None)
        except redis.exceptions.ResponseError as exc:
            raise StoreError(f"FalkorDB refused {name}: {str(exc).strip().splitlines()[0]}") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreError(f"the FalkorDB server {self.where} did not answer ({exc})") from exc
        except redis.exceptions.RedisClusterException as exc:  # no node serves the graph's slot, and the like
            raise StoreError(f"the FalkorDB cluster {self.where} could not run {name}: "
                             f"{str(exc).strip().splitlines()[0]}") from exc
        names = [column[1] for column in result.header]
        return [dict(zip(names, (_plain(v) for v in values), strict=True)) for values in result.result_set]

    def _defer(self, name: str, text: str, params: dict[str, Any]) -> list[Row]:
        queue = self._queue
        assert queue is not None
        if params:
            _check_text(params)  # refused at the statement, not at the scope's end
        rows = PendingRows(name)
        queue.append(Queued(name, text, params, rows))
        if self.bulk and len(queue) >= BULK_STATEMENTS:
            self._send()
        return rows

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        stmt = cypher.load(name, ENGINE)
        cypher.check_params(stmt, params)
        if stmt.writes and self._queue is not None:
            return self._defer(name, stmt.text, params)
        return self._query(stmt.text, params, name)

    def stream(self, name: str, params: dict[str, Any]) -> Iterator[Row]:
        """The rows of one statement (FalkorDB answers whole results: callers page large reads by id)."""
        yield from self.run(name, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        """A statement not in ``cypher/``. In a write scope a write is queued like any other, except an
        index or constraint change, which cannot be part of a query: what is queued is sent first, then it
        runs alone (schema steps, which are recorded only after they ran)."""
        if self._queue is not None and cypher.writes(text):
            if not is_schema_change(text):
                return self._defer("a statement", text, dict(params or {}))
            self._send()
        return self._query(text, params, "a statement")

    @property
    def bulk(self) -> bool:
        return bool(getattr(self._local, "bulk", False))

    def begin(self, *, bulk: bool = False) -> None:
        self._local.queue = []
        self._local.bulk = bulk

    def commit(self) -> None:
        """Send what the scope queued as one query; the scope ends either way."""
        try:
            self._send()
        finally:
            self._local.queue = None

    def rollback(self) -> None:
        """Drop what the scope queued: nothing of it reached the graph."""
        self._local.queue = None

    def _send(self) -> None:
        queue = self._queue
        if not queue:
            return
        if not self.names_ready:
            self.register_names()
        text, params, paths = compose(queue)
        names = sorted({q.name for q in queue})
        what = f"a write of {len(queue)} statement(s) ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})"
        answer = self._query(text, params, what)
        self.commits += 1
        returned = answer[0].get("rows") if answer else None
        for i, q in enumerate(queue):
            q.rows.fill(rows_at(returned, paths[i]) if i in paths else [])
        queue.clear()

    def register_names(self) -> None:
        """Create every label and relationship type keymem uses, once per graph (then delete the rows).

        A query matches only the labels and types the graph held when it was planned, so a composed
        scope that creates the first ``Key`` and then links it would otherwise find no key.
        """
        labels, types = schema_names()
        known = {r["label"] for r in self._query(LABELS_QUERY, None, "db.labels")}
        known_types = {r["t"] for r in self._query(TYPES_QUERY, None, "db.relationshipTypes")}
        if not set(labels) <= known or not set(types) <= known_types:
            self._query(names_query(labels, types), None, "the schema's names")
        self.names_ready = True


class FalkorStore(Store):
    """The store as one graph on a FalkorDB server."""

    capabilities = FALKORDB

    def __init__(self, url: FalkorURL, *, read_only: bool = False, ack: AckPolicy | None = None) -> None:  # noqa: D107
        try:
            import falkordb  # noqa: F401
        except ImportError:
            raise StoreError("KEYMEM_STORE_URL names a FalkorDB server but its client is not installed: "
                             "pip install 'keymem[falkordb]'") from None

        self.url = url
        self.ack = ack or AckPolicy()
        self.path = Path(url.shown())
        self.read_only = read_only
        self.replayed_wal = False
        self.wal_copy = None
        self.wal_tail_dropped = None
        self.pool_auto = False
        self.buffer_pool_mb = 0
        self.checkpoints = self.pool_failures = self.reopens = 0
        self._failed = None
        self._closed = False
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._extensions = []
        # The first contact has a deadline and no retry (one line within CONNECT_TIMEOUT_S); a Sentinel
        # URL gives a client that follows the primary across failovers (keymem/store/falkor_connect.py).
        self.client = falkor_connect.connect(url)
        self.executor = FalkorExecutor(self.client.select_graph(url.graph), url.shown())

    def describe(self) -> str:
        return self.url.shown()

    # -- reads -------------------------------------------------------------------------
    def _conn(self) -> FalkorExecutor:  # type: ignore[override]
        if self._closed:
            raise StoreError("the store is closed")
        return self.executor

    def connection(self) -> FalkorExecutor:  # type: ignore[override]
        return self._conn()

    def query(self, statement: str, /, **params: Any) -> list[Row]:
        self._check()
        return self._conn().run(statement, params)

    def stream(self, statement: str, /, **params: Any) -> Iterator[Row]:
        self._check()
        yield from self._conn().stream(statement, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        self._check()
        return self._conn().raw(text, params)

    def adhoc(self, fn: Any, /) -> Row:
        self._check()
        return fn(self._conn())  # type: ignore[no-any-return]

    def load_extension(self, name: str) -> None:
        raise StoreError(f"FalkorDB has no LadybugDB extension {name}")

    def pool_usage(self) -> tuple[int, int]:
        raise StoreError("FalkorDB has no buffer pool keymem sizes")

    # -- writes ------------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self, *, bulk: bool = False) -> Iterator[Tx]:
        """A write scope, applied whole or not at all: its writes are queued and sent as one query at its end
        (after the ``before_commit`` callables), reads in it see the graph as it was before it.

        ``bulk`` (import, re-embedding): sent in queries of ``BULK_STATEMENTS`` statements as it goes, so
        a failure keeps the chunks sent before it (each chunk whole).
        """
        if self.read_only:
            raise StoreError("the store is open read-only")
        self._check()
        with self._write_lock, self.writer_lease().held():  # no other daemon's scope interleaves
            executor = self._conn()
            executor.begin(bulk=bulk)
            tx = Tx(executor)
            try:
                yield tx
                tx.finish()
            except BaseException:
                executor.rollback()
                raise
            executor.commit()
            self._local.commits = self.thread_commits() + 1
        for fn in tx.callbacks:
            try:
                fn()
            except Exception:  # a mirror failing must not undo a durable write
                log.exception("after-commit update failed")
        self.acknowledge()

    def acknowledge(self) -> None:
        """Return once the committed writes are acknowledged as KEYMEM_FALKORDB_ACK_REPLICAS says (after the
        commit and the mirrors' updates, so a refusal leaves this process coherent with the engine); a
        :class:`StoreError` says what is committed where when the replicas do not confirm in time."""
        falkor_connect.acknowledge(self.client.connection, self.ack, self.url, self.url.graph)

    _writer: RedisLease | None = None  # made on the first write (writer_lease)
    _lease_lock = threading.Lock()

    def writer_lease(self) -> RedisLease:
        """The lease every daemon on this graph holds around a write scope (``keymem/store/falkor_lock.py``),
        the key ``{<graph>}:writer`` (on a cluster, in the graph's slot)."""
        with self._lease_lock:
            if self._writer is None:
                self._writer = RedisLease(self.client.connection, falkor_connect.beside(self.url.graph, "writer"))
            return self._writer

    def held(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Hold ``name`` (a request id's call) against every other daemon on this graph (``{<graph>}:<name>``)."""
        return RedisLease(self.client.connection, falkor_connect.beside(self.url.graph, name)).held()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[FalkorExecutor]:  # type: ignore[override]
        """Hold this process's writer (schema changes, maintenance)."""
        self._check()
        with self._write_lock, self.writer_lease().held():
            yield self._conn()

    # -- maintenance -------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Nothing to do: the server persists on its own (its AOF and RDB settings)."""

    def recover_pool(self, seen: int, *, reopen: bool = False) -> None:
        """No buffer pool to recover."""

    def reopen(self) -> None:
        """Nothing held in this process to reopen."""

    def copy_to(self, dest: Path) -> Path:
        raise StoreError("a store on FalkorDB is not a file to copy; use `keymem export`")

    def backup(self, reason: str) -> Path:
        """A copy of the graph beside it, ``{<graph>}.bak.<stamp>.<reason>`` (GRAPH.COPY; the hash tag puts
        both in one slot, which a cluster requires); the newest few kept, with those named
        ``<graph>.bak.<stamp>.<reason>`` by earlier releases."""
        graph = self.url.graph
        name = f"{{{graph}}}.bak.{_stamp()}.{reason}"
        try:
            self.client.connection.execute_command("GRAPH.COPY", graph, name)
        except Exception as exc:
            if "empty key" not in str(exc).lower():  # nothing written yet: nothing to keep
                raise StoreError(f"could not back up the graph {graph} ({exc})") from exc
        log.info("backed up the graph %s to %s before %s", graph, name, reason)
        heads = (f"{{{graph}}}.bak.", f"{graph}.bak.")
        backups = sorted((g for g in self.graphs() if g.startswith(heads)), key=lambda g: g.removeprefix(heads[0]).removeprefix(heads[1]))
        for old in backups[: max(0, len(backups) - KEEP_BACKUPS)]:
            with contextlib.suppress(Exception):
                self.client.select_graph(old).delete()
        return Path(name)

    def graphs(self) -> list[str]:
        """The graph names on the server, on a Redis Cluster every primary's, in name order."""
        return falkor_connect.list_graphs(self.client.connection)

    def size_bytes(self) -> int:
        """The graph's memory on the server (GRAPH.MEMORY USAGE), 0 when the server cannot say."""
        try:
            reply = self.client.connection.execute_command("GRAPH.MEMORY", "USAGE", self.url.graph)
        except Exception:
            return 0
        values = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=False))
        mb = values.get(b"total_graph_sz_mb", values.get("total_graph_sz_mb")) or 0
        return int(float(mb) * 1024 * 1024)

    def drop(self) -> None:
        """Delete the whole graph (tests, `keymem` tools that start over); its backups stay."""
        with self._write_lock, contextlib.suppress(Exception):
            self.executor.names_ready = False
            self.executor.graph.delete()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.client.close()


