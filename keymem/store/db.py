"""One Kuzu database per process, one writer at a time, prepared statements reused.

Kuzu admits a single write transaction at a time (a second writer fails at once rather
than waiting) and a single read-write process per file. :class:`Store` therefore owns
the only ``kuzu.Database`` of the process, serialises writes behind a lock, and gives
each thread its own connection with a cache of prepared statements.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from keymem.errors import StoreError
from keymem.store import cypher

log = logging.getLogger("keymem.store")

Row = dict[str, Any]


def _rows(result: Any) -> list[Row]:
    names = result.get_column_names()
    out = [dict(zip(names, values, strict=True)) for values in result.get_all()]
    result.close()
    return out


def explain_open_error(path: Path, exc: Exception) -> str:
    """A message that says what happened and what the user can do."""
    text = str(exc)
    low = text.lower()
    if "lock" in low:
        return (
            f"the keymem store {path} is held by another process ({text}). "
            "Use the shared daemon (run `keymem daemon --status`) instead of opening the store directly."
        )
    if "read-only" in low or "permission" in low:
        return f"the keymem store {path} cannot be opened for writing ({text}); check the data dir's permissions."
    return (
        f"the keymem store {path} cannot be opened cleanly ({text}). The files were left untouched. "
        f"To recover, stop keymem, move {path.name}* aside and restore the newest backup from "
        f"{path.parent / 'backups'} (`keymem doctor` lists them)."
    )


class Connection:
    """A thread's connection with its prepared statements."""

    def __init__(self, db: Any) -> None:
        import kuzu

        self.conn = kuzu.Connection(db)
        self._prepared: dict[str, Any] = {}

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        stmt = cypher.load(name)
        cypher.check_params(stmt, params)
        if not stmt.params:  # nothing to bind; also how Kuzu runs CALLs it cannot prepare
            return _rows(self.conn.execute(stmt.text))
        if not stmt.prepare:
            return _rows(self.conn.execute(stmt.text, params))
        prepared = self._prepared.get(name)
        if prepared is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                prepared = self.conn.prepare(stmt.text)
            self._prepared[name] = prepared
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            result = self.conn.execute(prepared, params)
        return _rows(result)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        """A statement that is not in cypher/ (DDL built from a checked template, console)."""
        result = self.conn.execute(text, params or {})
        if isinstance(result, list):
            rows: list[Row] = []
            for r in result:
                rows = _rows(r)
            return rows
        return _rows(result)


class Tx:
    """The body of one write transaction.

    ``after_commit`` callbacks update in-memory mirrors (vector cache, BM25) only once the
    transaction is durable, so a rolled-back write never shows up in search.
    """

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.callbacks: list[Callable[[], None]] = []

    def after_commit(self, fn: Callable[[], None]) -> None:
        self.callbacks.append(fn)

    def run(self, statement: str, /, **params: Any) -> list[Row]:
        return self._conn.run(statement, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        return self._conn.raw(text, params)


class Store:
    """The process's Kuzu database."""

    def __init__(self, path: Path, *, buffer_pool_mb: int = 512, read_only: bool = False) -> None:
        import kuzu

        self.path = Path(path)
        self.read_only = read_only
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Kuzu creates its WAL and shadow files at the first write, long after opening, so the
        # owner-only umask stays for the life of the process: memories are private data.
        os.umask(os.umask(0o077) | 0o077)
        for existing in self.path.parent.glob(self.path.name + "*"):
            if existing.is_file() and not read_only:
                with contextlib.suppress(OSError):
                    os.chmod(existing, 0o600)
        try:
            self.db = kuzu.Database(
                str(self.path), buffer_pool_size=buffer_pool_mb * 1024 * 1024, read_only=read_only
            )
        except Exception as exc:  # kuzu raises RuntimeError for lock/corruption
            raise StoreError(explain_open_error(self.path, exc)) from exc
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._all_conns: list[Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False

    # -- connections -------------------------------------------------------------
    def _conn(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreError("the store is closed")
            conn = Connection(self.db)
            self._local.conn = conn
            with self._conns_lock:
                self._all_conns.append(conn)
        return conn

    def connection(self) -> Connection:
        """This thread's connection (a console's read-only transaction must live on it)."""
        return self._conn()

    def query(self, statement: str, /, **params: Any) -> list[Row]:
        """Run a read statement from cypher/ on this thread's connection."""
        return self._conn().run(statement, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        return self._conn().raw(text, params)

    # -- writes ------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[Tx]:
        """One atomic write transaction; any exception rolls everything back."""
        if self.read_only:
            raise StoreError("the store is open read-only")
        with self._write_lock:
            conn = self._conn()
            self._begin(conn)
            tx = Tx(conn)
            try:
                yield tx
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.conn.execute("ROLLBACK")
                raise
            try:
                conn.conn.execute("COMMIT")
            except Exception as exc:
                with contextlib.suppress(Exception):
                    conn.conn.execute("ROLLBACK")
                raise StoreError(f"could not commit the write: {exc}") from exc
            for fn in tx.callbacks:
                try:
                    fn()
                except Exception:  # a mirror failing must not undo a durable write
                    log.exception("after-commit update failed")

    def _begin(self, conn: Connection) -> None:
        try:
            conn.conn.execute("BEGIN TRANSACTION")
        except RuntimeError as exc:  # a transaction left open by an earlier failure
            if "active transaction" not in str(exc).lower():
                raise StoreError(f"could not start a write: {exc}") from exc
            with contextlib.suppress(Exception):
                conn.conn.execute("ROLLBACK")
            conn.conn.execute("BEGIN TRANSACTION")

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """Hold the writer without a transaction (DDL that Kuzu runs only in auto mode, checkpoints)."""
        with self._write_lock:
            yield self._conn()

    # -- files -------------------------------------------------------------------
    def checkpoint(self) -> None:
        with self.exclusive() as conn:
            conn.conn.execute("CHECKPOINT")

    def copy_to(self, dest: Path) -> Path:
        """A consistent copy of the database file: checkpoint, then copy while holding the writer."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self.exclusive() as conn:
            conn.conn.execute("CHECKPOINT")
            tmp = dest.with_name(dest.name + ".part")
            shutil.copyfile(self.path, tmp)
            os.chmod(tmp, 0o600)
            os.replace(tmp, dest)
        return dest

    def backup(self, reason: str) -> Path:
        """Copy the database to ``backups/<name>.bak.<timestamp>`` before a risky change."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.3f}"[1:]
        dest = self.path.parent / "backups" / f"{self.path.name}.bak.{stamp}.{reason}"
        self.copy_to(dest)
        log.info("backed up the store to %s before %s", dest, reason)
        return dest

    def size_bytes(self) -> int:
        total = 0
        for p in self.path.parent.glob(self.path.name + "*"):
            if p.is_file():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._write_lock, self._conns_lock:
            for conn in self._all_conns:
                with contextlib.suppress(Exception):
                    conn.conn.close()
            self._all_conns.clear()
            with contextlib.suppress(Exception):
                self.db.close()
