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
* No multi-statement transactions. One ``GRAPH.QUERY`` is atomic (a statement failing at run time
  is undone by the engine), and :meth:`FalkorStore.write` serialises this process's writes behind
  its lock, so a write scope is isolated from this process's other writes and each statement in it
  is all-or-nothing, but a body that fails after a statement wrote leaves that statement's effect
  (``Capabilities.atomic_write_scope`` is False; logged as an error). Redis has no rollback: MULTI/EXEC
  would isolate the statements from other clients but cannot undo the ones before a failure, and
  it answers a statement only at EXEC, while keymem's write bodies read their own writes
  (``memory/link_keys``' count, ``alias/pending_bump``'s count, keys created earlier in the body).
  Deferred writes with those values computed in Python are the way to atomic scopes on this engine.
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
from keymem.store.db import KEEP_BACKUPS, Store, Tx, _stamp
from keymem.store.executor import Capabilities, Row
from keymem.store.falkor_connect import AckPolicy

log = logging.getLogger("keymem.store")

ENGINE = "falkordb"
FALKORDB = Capabilities(engine=ENGINE, atomic_write_scope=False, vector_index=False, prepared_statements=False,
                        checkpoint=False, stable_node_ids=False, local_file=False)


_CHANGES = ("nodes_created", "nodes_deleted", "properties_set", "properties_removed", "relationships_created",
            "relationships_deleted", "labels_added", "labels_removed", "indices_created", "indices_deleted")


_TABLE = re.compile(r"CREATE\s+(?:NODE|REL)\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*?)\)\s*$", re.S | re.I)
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

    The client's connection pool is thread-safe, so one executor serves every thread.
    """

    capabilities = FALKORDB

    def __init__(self, graph: Any, where: str) -> None:
        self.graph = graph
        self.where = where
        self._local = threading.local()

    @property
    def wrote(self) -> int:
        """Statements that changed the graph on this thread since :meth:`begin`."""
        return int(getattr(self._local, "wrote", 0))

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
        if any(getattr(result, stat) for stat in _CHANGES):
            self._local.wrote = self.wrote + 1
        names = [column[1] for column in result.header]
        return [dict(zip(names, (_plain(v) for v in values), strict=True)) for values in result.result_set]

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        stmt = cypher.load(name, ENGINE)
        cypher.check_params(stmt, params)
        return self._query(stmt.text, params, name)

    def stream(self, name: str, params: dict[str, Any]) -> Iterator[Row]:
        """The rows of one statement (FalkorDB answers whole results: callers page large reads by id)."""
        yield from self.run(name, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        return self._query(text, params, "a statement")

    def begin(self) -> None:
        self._local.wrote = 0

    def commit(self) -> None:
        """Nothing to do: each statement was committed when it ran."""

    def rollback(self) -> None:
        """Nothing can be undone (see the module's docstring); the store logs what stays."""


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
    def write(self) -> Iterator[Tx]:
        """A write scope: isolated from this process's other writes, each statement atomic alone."""
        if self.read_only:
            raise StoreError("the store is open read-only")
        self._check()
        with self._write_lock:
            executor = self._conn()
            executor.begin()
            tx = Tx(executor)
            try:
                yield tx
                tx.finish()
            except BaseException:
                if executor.wrote:
                    log.error("a write on FalkorDB failed after %d statement(s) had changed the graph; FalkorDB "
                              "has no multi-statement transactions, so those changes stay", executor.wrote)
                raise
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
        falkor_connect.acknowledge(self.client.connection, self.ack, self.url)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[FalkorExecutor]:  # type: ignore[override]
        """Hold this process's writer (schema changes, maintenance)."""
        self._check()
        with self._write_lock:
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
        """A copy of the graph beside it, ``<graph>.bak.<stamp>.<reason>`` (GRAPH.COPY); the newest few kept."""
        name = f"{self.url.graph}.bak.{_stamp()}.{reason}"
        try:
            self.client.connection.execute_command("GRAPH.COPY", self.url.graph, name)
        except Exception as exc:
            if "empty key" not in str(exc).lower():  # nothing written yet: nothing to keep
                raise StoreError(f"could not back up the graph {self.url.graph} ({exc})") from exc
        log.info("backed up the graph %s to %s before %s", self.url.graph, name, reason)
        backups = sorted(g for g in self.graphs() if g.startswith(f"{self.url.graph}.bak."))
        for old in backups[: max(0, len(backups) - KEEP_BACKUPS)]:
            with contextlib.suppress(Exception):
                self.client.select_graph(old).delete()
        return Path(name)

    def graphs(self) -> list[str]:
        """The graph names on the server."""
        return [g.decode() if isinstance(g, bytes) else str(g) for g in self.client.connection.execute_command(
            "GRAPH.LIST")]

    def size_bytes(self) -> int:
        """The graph's memory on the server (GRAPH.MEMORY USAGE), 0 when the server cannot say."""
        try:
            reply = self.client.connection.execute_command("GRAPH.MEMORY", "USAGE", self.url.graph)
        except Exception:
            return 0
        values = dict(zip(reply[::2], reply[1::2], strict=False))
        mb = values.get(b"total_graph_sz_mb", values.get("total_graph_sz_mb")) or 0
        return int(float(mb) * 1024 * 1024)

    def drop(self) -> None:
        """Delete the whole graph (tests, `keymem` tools that start over); its backups stay."""
        with self._write_lock, contextlib.suppress(Exception):
            self.executor.graph.delete()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.client.close()

