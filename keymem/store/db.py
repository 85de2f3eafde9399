"""One LadybugDB database per process, one writer at a time, prepared statements reused.

LadybugDB (the maintained continuation of Kuzu) admits a single write transaction at a time
(a second writer fails at once rather than waiting) and a single read-write process per
file. :class:`Store` therefore owns the only ``ladybug.Database`` of the process,
serialises writes behind a lock, and gives each thread its own connection with a cache of
prepared statements. ``Database.close()`` does nothing while a prepared statement is still
referenced, so :meth:`Store.close` drops every cache first (else the lock and the WAL stay).
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

from keymem.errors import PoolFull, StoreError
from keymem.store import cypher
from keymem.store.executor import Capabilities, Executor, Row
from keymem.store.gate import Gate

log = logging.getLogger("keymem.store")

LADYBUG = Capabilities(engine="ladybug", atomic_write_scope=True, deferred_writes=False, vector_index=True,
                       prepared_statements=True, checkpoint=True, stable_node_ids=True, local_file=True)


def _rows(result: Any) -> list[Row]:
    names = result.get_column_names()
    out = [dict(zip(names, values, strict=True)) for values in result.get_all()]
    result.close()
    return out


KEEP_BACKUPS = 5
LOAD_PAGE = 20_000  # rows per page of an $after/$limit whole-table read (see Store.pages)
OFFSET_PAGE = 65_536  # node offsets per page of an offset-range read (see Store.offset_ranges)


def columns(rows: list[Row]) -> dict[str, list[Any]]:
    """A statement's one row of collected lists; no row or nulls (an empty table) read as empty lists."""
    row = rows[0] if rows else {}
    return {name: list(values or []) for name, values in row.items()} if row else _EmptyColumns()


class _EmptyColumns(dict):  # type: ignore[type-arg]
    def __missing__(self, name: str) -> list[Any]:
        return []


def prune_backups(directory: Path, name: str, keep: int = KEEP_BACKUPS) -> None:
    """Keep the newest ``keep`` backups: a crash loop on a large store must not fill the disk."""
    entries = sorted(directory.glob(f"{name}.bak.*"), key=lambda p: p.name)  # names start with a UTC stamp
    for old in entries[: max(0, len(entries) - keep)]:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                old.unlink()
        log.info("removed old backup %s", old)


def _stamp() -> str:
    """UTC time to the millisecond, from one clock reading (names sort in time order)."""
    t = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}"


PINNED_PER_ROW = 4 * 1024  # pool bytes a bulk statement holds per row until a checkpoint (measured ~3.5 KiB)
PINNED_PER_WRITE = 64 * 1024  # pool bytes one small write transaction holds until a checkpoint, rounded up


def pool_exhausted(exc: BaseException) -> bool:
    """The engine's "Buffer manager exception: Unable to allocate memory! The buffer pool is full"."""
    if isinstance(exc, PoolFull):
        return True
    low = str(exc).lower()
    return "buffer manager exception" in low or "buffer pool is full" in low


def pool_full_message(pool_mb: int, auto: bool = False) -> str:
    now = f"now {pool_mb}, sized automatically" if auto else f"now {pool_mb}"
    return (f"the LadybugDB buffer pool ({pool_mb} MiB) was full, so this call could not run and nothing was "
            f"written; retry it, and if it keeps happening raise KEYMEM_BUFFER_POOL_MB ({now})")


POOL_FLOOR_MB = 256  # the smallest automatic pool: a 10k store's open caches ~64 MiB, a tool call ~2 MiB
POOL_WORK_MB = 128  # working memory above the store's size: statements, held updates (a quarter), headroom


def memory_mb() -> int | None:
    """The machine's memory in MiB, or None if unknown."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024))
    except (ValueError, OSError, AttributeError):
        return None


def auto_pool_mb(path: Path) -> int:
    """The buffer pool for a store when ``KEYMEM_BUFFER_POOL_MB`` is unset: its files' size plus
    ``POOL_WORK_MB``, rounded up to 64 MiB, at least ``POOL_FLOOR_MB`` and at most a quarter of the
    machine's memory (never below the floor).

    The open reads every memory, key, link and vector once (the mirror, BM25 and vector loads), so a
    pool as large as the store keeps all of it cached and the tools never wait for a page; a pool
    costs RSS only for the pages it holds (docs/reliability.md, section 10).
    """
    size = 0
    for p in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(OSError):
            size += p.stat().st_size
    want = -(-(size // (1024 * 1024) + POOL_WORK_MB) // 64) * 64
    ram = memory_mb()
    cap = max(POOL_FLOOR_MB, ram // 4) if ram else 16 * 1024
    return max(POOL_FLOOR_MB, min(want, cap))


def _pool_cap_mb() -> int:
    """The largest pool an open may retry with: half the machine's memory (16 GiB if unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2 // (1024 * 1024))
    except (ValueError, OSError, AttributeError):
        return 16 * 1024


def wal_damaged(exc: BaseException) -> bool:
    """An open that replayed a write-ahead log failed for a reason other than the lock or the pool.

    A torn log fails its checksum ("Checksum verification failed, the WAL file is corrupted"); a
    log whose tail is junk of the right checksum fails anywhere in the replay (measured: an
    assertion in value.cpp, "a vector with ANY type"). Either way the valid prefix can be replayed.
    """
    low = str(exc).lower()
    return not pool_exhausted(exc) and "lock" not in low and "permission" not in low


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


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
    """A thread's connection with its prepared statements (LadybugDB's :class:`Executor`)."""

    capabilities = LADYBUG

    def __init__(self, db: Any, generation: int = 0) -> None:
        import ladybug

        self.conn = ladybug.Connection(db)
        self.generation = generation  # the Store's database this connection belongs to (see Store.reopen)
        self._prepared: dict[str, Any] = {}

    def close(self) -> None:
        """Drop the prepared statements, then the connection: a live statement keeps the database open."""
        self._prepared.clear()
        self.conn.close()

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        stmt = cypher.load(name)
        cypher.check_params(stmt, params)
        if not stmt.params:  # nothing to bind; also how the engine runs CALLs it cannot prepare
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

    def stream(self, name: str, params: dict[str, Any]) -> Iterator[Row]:
        """Rows one at a time (a large read whose rows are converted as they arrive)."""
        stmt = cypher.load(name)
        cypher.check_params(stmt, params)
        result = self.conn.execute(stmt.text, params) if stmt.params else self.conn.execute(stmt.text)
        if isinstance(result, list):  # one statement per file: the engine returns a list only for several
            raise StoreError(f"{name} holds more than one statement")
        try:
            names = result.get_column_names()
            while result.has_next():
                yield dict(zip(names, result.get_next(), strict=True))
        finally:
            result.close()

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        """A statement that is not in cypher/ (DDL built from a checked template, console)."""
        result = self.conn.execute(text, params or {})
        if isinstance(result, list):
            rows: list[Row] = []
            for r in result:
                rows = _rows(r)
            return rows
        return _rows(result)

    def begin(self) -> None:
        self.conn.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")


class Tx:
    """The body of one write transaction.

    ``after_commit`` callbacks update in-memory mirrors (vector cache, BM25) only once the
    transaction is durable, so a rolled-back write never shows up in search.
    """

    def __init__(self, conn: Executor) -> None:
        self._conn = conn
        self.callbacks: list[Callable[[], None]] = []
        self.closers: list[Callable[[Tx], None]] = []
        self.scratch: dict[str, Any] = {}  # per-transaction state of the layers above (e.g. touched rows)
        self.units = 0  # statements run, a bulk statement counting one per row (for the checkpoint policy)

    def after_commit(self, fn: Callable[[], None]) -> None:
        self.callbacks.append(fn)

    def before_commit(self, fn: Callable[[Tx], None]) -> None:
        """Run ``fn(tx)`` once the body is done, inside the scope (a change record written with the write)."""
        self.closers.append(fn)

    def finish(self) -> None:
        """The scope's last statements: each ``before_commit`` callable, in the order given."""
        for fn in self.closers:
            fn(self)

    def run(self, statement: str, /, **params: Any) -> list[Row]:
        self.units += max([1, *(len(v) for v in params.values() if isinstance(v, (list, tuple)))])
        return self._conn.run(statement, params)

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        self.units += 1
        return self._conn.raw(text, params)


class Store:
    """The process's store: the façade the layers above use, here over LadybugDB (the embedded default).

    :class:`~keymem.store.falkordb.FalkorStore` gives the same surface over a FalkorDB server;
    :func:`~keymem.store.factory.open_store` picks one from ``KEYMEM_STORE_URL``.
    """

    capabilities = LADYBUG

    def __init__(self, path: Path, *, buffer_pool_mb: int | None = 512, read_only: bool = False) -> None:
        """``buffer_pool_mb`` None sizes the pool from the store and the machine (:func:`auto_pool_mb`)."""
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
        from keymem.store import engine

        found = engine.pending(self.path)
        if found is not None:
            raise StoreError(
                f"the keymem store {found[0]} was written by {found[1]}; this keymem runs {engine.current()}. "
                "Run `keymem migrate` (the old files are kept in backups/), or start the daemon, which moves it "
                "at its first open."
            )
        wal = self.path.with_name(self.path.name + ".wal")
        replay = wal.is_file() and wal.stat().st_size > 0
        # A write-ahead log was replayed at open (an unclean stop). Derived counts that span node and
        # rel tables (the walk's, schema step 003) are re-derived then: Kuzu 0.11.3 replaying a torn
        # WAL tail was measured to keep a link whose key's count update was lost (tests/reliability/test_wal.py).
        self.replayed_wal = False
        self.wal_copy: Path | None = None  # where _guard_wal kept the log before a replay
        self.wal_tail_dropped: str | None = None  # set when a torn WAL tail was dropped at open
        if not read_only:
            self._guard_wal()
        self.pool_auto = buffer_pool_mb is None
        if buffer_pool_mb is None:
            buffer_pool_mb = auto_pool_mb(self.path)
        self.buffer_pool_mb = buffer_pool_mb  # the pool actually in use (see _open_database)
        self.db = self._open_database(buffer_pool_mb, replay=replay)
        # Checkpoint policy (see _maybe_checkpoint): writes since the last checkpoint, pool use, WAL size.
        self.checkpoint_writes = max(16, self.buffer_pool_mb * 1024 * 1024 // (4 * PINNED_PER_WRITE))
        self.pool_checkpoint_writes = max(4, self.checkpoint_writes // 16)
        self.checkpoint_units = max(1024, self.buffer_pool_mb * 1024 * 1024 // (4 * PINNED_PER_ROW))
        self._writes_since_checkpoint = 0
        self._units_since_checkpoint = 0
        self.checkpoints = 0  # how many the store ran, for tests and stats
        self._gate = Gate()
        self._failed: str | None = None
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._all_conns: list[Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._configured_pool_mb = buffer_pool_mb
        self._generation = 0  # bumped by reopen: connections of an older database are replaced
        self._heavy = threading.Lock()  # admission: one large stream at a time (see stream)
        self._recover_lock = threading.Lock()
        self._recoveries = 0  # pool recoveries so far (a failure seen before the latest one is settled)
        self.pool_failures = 0  # statements refused for lack of pool memory, for stats and doctor
        self.reopens = 0  # in-process reopens after a pool the checkpoint could not free
        self._extensions: list[str] = []  # loaded into the database (loaded again by reopen)

    def _open_database(self, pool_mb: int, *, replay: bool) -> Any:
        """Open the database; a store whose write-ahead log does not fit the pool is opened with a larger one.

        The engine keeps committed updates in buffer-pool memory until a checkpoint, and
        replaying a WAL at open rebuilds all of it: a store saved with a full pool may not open
        with the same pool ("Buffer manager exception"). The open is then retried with twice the
        pool (up to half the machine's memory) and logged; once open, the replayed log is
        checkpointed and the store reopened with the configured pool. It never refuses to start
        for lack of pool while memory remains.

        A WAL whose tail is torn (full disk, power loss) fails its checksum. The store is then
        opened replaying the valid prefix only (``throw_on_wal_replay_failure=False``); the log
        as it was is already in ``backups/`` (see :meth:`_guard_wal`), and
        :attr:`wal_tail_dropped` says so for ``keymem doctor`` and the first tool result.
        """
        pool, cap = pool_mb, max(pool_mb, _pool_cap_mb())
        strict = True
        while True:
            db = None
            try:
                db = self._database(pool, strict=strict)
                if replay and not self.read_only:  # the replay holds its updates in the pool until checkpointed
                    self._checkpoint_fresh(db)
                break
            except Exception as exc:  # the engine raises RuntimeError for lock/corruption/pool
                if db is not None:
                    with contextlib.suppress(Exception):
                        db.close()
                if strict and replay and not self.read_only and wal_damaged(exc):
                    strict = False
                    self.wal_tail_dropped = (
                        f"the write-ahead log could not be replayed whole ({first_line(exc)}); the writes before "
                        f"the damage were replayed and the unreadable rest dropped. The log as it was is kept in "
                        f"{self.wal_copy}."
                    )
                    log.error("%s", self.wal_tail_dropped)
                    continue
                if not pool_exhausted(exc) or pool >= cap:
                    raise StoreError(explain_open_error(self.path, exc)) from exc
                bigger = min(cap, pool * 2)
                log.warning("the store %s does not open with a %d MiB buffer pool (%s); retrying with %d MiB",
                            self.path, pool, exc, bigger)
                pool = bigger
        if pool == pool_mb:
            return db
        if not self.read_only:  # checkpointed: the configured pool is enough again
            db.close()
            try:
                db = self._database(pool_mb)
                log.warning("the store %s needed a %d MiB buffer pool to replay its write-ahead log; it is "
                            "checkpointed and open with the configured %d MiB (KEYMEM_BUFFER_POOL_MB)",
                            self.path, pool, pool_mb)
                return db
            except Exception as exc:
                log.warning("reopening %s with %d MiB failed (%s); keeping %d MiB", self.path, pool_mb, exc, pool)
                db = self._database(pool)
        log.warning("the store %s is open with a %d MiB buffer pool instead of the configured %d MiB "
                    "(KEYMEM_BUFFER_POOL_MB)", self.path, pool, pool_mb)
        self.buffer_pool_mb = pool
        return db

    def _database(self, pool_mb: int, *, strict: bool = True) -> Any:
        import ladybug

        return ladybug.Database(
            str(self.path), buffer_pool_size=pool_mb * 1024 * 1024, read_only=self.read_only,
            auto_checkpoint=False,  # checkpoints run from the Store, under the gate (see _maybe_checkpoint)
            throw_on_wal_replay_failure=strict,
        )

    @staticmethod
    def _checkpoint_fresh(db: Any) -> None:
        import ladybug

        conn = ladybug.Connection(db)
        try:
            conn.execute("CHECKPOINT")
        finally:
            conn.close()

    def _guard_wal(self) -> None:
        """Keep the evidence before Kuzu replays a write-ahead log.

        Kuzu 0.11 replays a WAL it finds beside the database and silently drops the part it
        cannot read (deleting the file), and it replays a stray WAL into a brand-new database.
        A WAL without its database is refused; otherwise both files are copied to
        ``backups/`` first, so a damaged replay destroys nothing.
        """
        wal = self.path.with_name(self.path.name + ".wal")
        if not wal.is_file() or wal.stat().st_size == 0:
            return
        if not self.path.is_file() or self.path.stat().st_size == 0:
            raise StoreError(explain_open_error(
                self.path, RuntimeError(f"found a write-ahead log {wal.name} without its database")))
        dest = self.path.parent / "backups" / f"{self.path.name}.bak.{_stamp()}.pre-wal-replay"
        try:
            dest.mkdir(parents=True, mode=0o700)
            for src in (self.path, wal):
                shutil.copyfile(src, dest / src.name)
                os.chmod(dest / src.name, 0o600)
        except OSError as exc:
            shutil.rmtree(dest, ignore_errors=True)
            raise StoreError(
                f"the keymem store {self.path} has a write-ahead log to replay, and keymem keeps a copy of both "
                f"files first, but could not ({exc}). Nothing was changed; free space in {self.path.parent} "
                "and start keymem again."
            ) from exc
        log.warning("replaying %s; the files as they were are kept in %s", wal.name, dest)
        self.replayed_wal = True
        self.wal_copy = dest
        prune_backups(dest.parent, self.path.name)

    def _check(self) -> None:
        if self._failed:
            raise StoreError(self._failed)

    # -- connections -------------------------------------------------------------
    def _conn(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None or conn.generation != self._generation:
            if self._closed:
                raise StoreError("the store is closed")
            conn = Connection(self.db, self._generation)
            self._local.conn = conn
            with self._conns_lock:
                self._all_conns.append(conn)
        return conn

    def connection(self) -> Connection:
        """This thread's connection (a console's read-only transaction must live on it)."""
        return self._conn()

    def script(self, name: str, **template: int) -> list[str]:
        """The statements of a multi-statement file (a schema step) in this store's engine's text."""
        return cypher.load_script(name, self.capabilities.engine, **template)

    def describe(self) -> str:
        """Where the store lives, in words (logs, errors)."""
        return str(self.path)

    def query(self, statement: str, /, **params: Any) -> list[Row]:
        """Run a read statement from cypher/ on this thread's connection."""
        return self._read(lambda conn: conn.run(statement, params), heavy=cypher.load(statement).heavy)

    def adhoc(self, fn: Callable[[Connection], Row], /) -> Row:
        """Run a statement keymem did not write (the console) as a heavy read: alone, refused in one
        line (:class:`PoolFull`) if the pool cannot hold it, and not tried again."""
        return self._read(fn, heavy=True, retry=False)

    def _read(self, fn: Callable[[Connection], Any], *, heavy: bool, retry: bool = True) -> Any:
        """A read through the gate; a heavy one holds it exclusively, so it runs alone.

        A statement whose memory grows with the store can exhaust the pool; alone, it fails alone.
        (Several statements failing for lack of pool at once were seen to corrupt the engine's heap:
        "free(): invalid next size", the daemon gone.)

        A statement refused for lack of buffer-pool memory is tried again after a checkpoint, then
        once more after the database is opened again in the process (:meth:`recover_pool`); inside
        a write it is refused at once (the write rolls back and recovers). A refusal is
        :class:`PoolFull`, one line.
        """
        self._check()
        nested = self._gate.held()
        for attempt in range(3 if retry and not nested else 1):
            seen = self._recoveries
            try:
                with self._gate.exclusive() if heavy and not nested else self._gate.shared():
                    return fn(self._conn())
            except Exception as exc:
                if not pool_exhausted(exc):
                    raise
                refusal = self._refused(exc)
                log.warning("a read found the buffer pool full (attempt %d): %s", attempt + 1, first_line(exc))
                if nested:
                    raise refusal from exc
            self.recover_pool(seen, reopen=attempt > 0)
        raise PoolFull(pool_full_message(self.buffer_pool_mb, self.pool_auto))

    def pages(self, statement: str, /, **params: Any) -> Iterator[dict[str, list[Any]]]:
        """The pages of a ``$after``/``$limit`` statement returning parallel lists led by ``ids``.

        One ``collect`` over a whole large table does not fit Kuzu's buffer pool, so such reads go a
        page of ``LOAD_PAGE`` rows at a time (the open-time loads use ``offset_ranges`` instead).

        A caller that turns each page into compact structures before reading the next never holds
        the whole table as Python objects: at 100k memories, joining every page first left ~170 MB
        of freed small strings that the allocator could not hand back to the OS.
        """
        after = ""
        while True:
            page = columns(self.query(statement, after=after, limit=LOAD_PAGE, **params))
            if page.get("ids"):
                yield page
            if len(page.get("ids", ())) < LOAD_PAGE:
                return
            after = max(page["ids"])  # the page's last id, whatever order its collect kept

    def offset_ranges(self, end: str, /, page: int = OFFSET_PAGE) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` node-offset ranges covering a table, for ``$lo``/``$hi`` page statements.

        ``end`` names the statement giving one past the table's highest node offset. A filter on
        ``offset(id(n))`` costs a plain scan per page, where ``$after``/``$limit`` paging sorts the
        rest of the table for each page (at 1M memories: 3.5 s against 11 s for the whole table).
        A page may be empty: deleted rows leave holes in the offsets.
        """
        rows = self.query(end)
        stop = int(rows[0]["stop"]) if rows else 0
        for lo in range(0, stop, page):
            yield lo, lo + page

    def stream(self, statement: str, /, **params: Any) -> Iterator[Row]:
        """Run a large read statement, yielding rows as they come (bounded Python memory)."""
        self._check()
        seen = self._recoveries
        try:
            with self._heavy if not self._gate.held() else contextlib.nullcontext(), self._gate.shared():
                yield from self._conn().stream(statement, params)
        except Exception as exc:
            if not pool_exhausted(exc) or self._gate.held():
                raise
            refusal = self._refused(exc)
            self.recover_pool(seen)
            raise refusal from exc

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]:
        return self._read(lambda conn: conn.raw(text, params), heavy=False)

    def load_extension(self, name: str) -> None:
        """``LOAD EXTENSION name`` (raises if it is not installed); loaded again after a reopen."""
        self.raw(f"LOAD EXTENSION {name}")
        if name not in self._extensions:
            self._extensions.append(name)

    # -- writes ------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self, *, bulk: bool = False) -> Iterator[Tx]:
        """One atomic write transaction; any exception rolls everything back.

        ``bulk`` marks a scope too large to send as one query on an engine that defers its writes
        (FalkorDB sends it in chunks); here it is one transaction all the same.
        """
        if self.read_only:
            raise StoreError("the store is open read-only")
        self._check()
        with self._write_lock:
            rolled_back = full = False
            seen = self._recoveries
            try:
                with self._gate.shared():
                    conn = self._conn()
                    try:
                        self._begin(conn)
                    except RuntimeError as exc:
                        if not pool_exhausted(exc):
                            raise
                        full = True
                        raise self._refused(exc) from exc
                    tx = Tx(conn)
                    try:
                        yield tx
                        tx.finish()
                    except BaseException as exc:
                        with contextlib.suppress(Exception):
                            conn.rollback()
                        rolled_back = True
                        if isinstance(exc, Exception) and pool_exhausted(exc):
                            full = True
                            raise self._refused(exc) from exc
                        raise
                    try:
                        conn.commit()
                        self._local.commits = self.thread_commits() + 1
                    except Exception as exc:
                        with contextlib.suppress(Exception):
                            conn.rollback()
                        rolled_back = True
                        if pool_exhausted(exc):
                            full = True
                            raise self._refused(exc) from exc
                        raise self._commit_failed(exc) from exc
            finally:
                if full and not self._failed:
                    self.recover_pool(seen)
                elif rolled_back and not self._failed:
                    self._settle()
            for fn in tx.callbacks:
                try:
                    fn()
                except Exception:  # a mirror failing must not undo a durable write
                    log.exception("after-commit update failed")
            self._maybe_checkpoint(tx.units)

    def _refused(self, exc: BaseException) -> PoolFull:
        """Count a statement the engine refused for lack of pool (once), and its one-line error."""
        if not isinstance(exc, PoolFull):
            self.pool_failures += 1
        return PoolFull(pool_full_message(self.buffer_pool_mb, self.pool_auto))

    def thread_commits(self) -> int:
        """Write transactions this thread committed (a call that committed nothing may run again)."""
        return int(getattr(self._local, "commits", 0))

    def held(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Hold ``name`` against the other processes writing this store: none here (one process owns the
        file); a store with ``shared_writers`` holds a lease by that name."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def no_writes(self) -> Iterator[None]:
        """Hold the writer (reads go on): for comparing the store with an in-memory copy."""
        with self._write_lock:
            yield

    wal_checkpoint_bytes = 16 * 1024 * 1024

    def _maybe_checkpoint(self, units: int = 1) -> None:
        """Checkpoint after a commit, before the buffer pool fills (runs under the writer lock).

        Kuzu 0.11.3 holds every committed update in buffer-pool memory until a checkpoint,
        about 16 KiB per updated column per transaction however few rows it touched (measured:
        a 64 MiB pool took 1,973 one-row two-column SETs, a 256 MiB pool ~7,700 ``read_memory``
        calls). That exhausts the pool ("Buffer manager exception") long before the WAL grows
        large, so the WAL size alone is the wrong signal. A checkpoint runs when any of:

        * ``checkpoint_writes`` write transactions since the last one (a quarter of the pool at
          ``PINNED_PER_WRITE`` each: 1,024 for 256 MiB);
        * ``checkpoint_units`` rows written since the last one (a quarter of the pool at
          ``PINNED_PER_ROW`` each: 16,384 for 256 MiB). Bulk statements hold memory per row
          touched: re-storing the terms of 100k memories in 2,000-row transactions filled a 256 MiB
          pool after 34 of them and fail-stopped the store; with this rule it stays under 80 MiB,
          and the checkpoints cost nothing measurable (30k rows: 12.9 s without, 13.1 s with one
          per transaction);
        * the pool is at least half used and ``pool_checkpoint_writes`` writes ran since the
          last one (``CALL BM_INFO()`` counts cached pages too, so a pool full of cache cannot
          tell them apart from held updates; this bounds the held part);
        * the WAL passed ``wal_checkpoint_bytes`` (Kuzu's own auto-checkpoint runs inside
          COMMIT and is starved by concurrent reads, so it is off).
        """
        self._writes_since_checkpoint += 1
        self._units_since_checkpoint += units
        n = self._writes_since_checkpoint
        reason = ""
        if n >= self.checkpoint_writes:
            reason = f"{n} writes since the last checkpoint"
        elif self._units_since_checkpoint >= self.checkpoint_units:
            reason = f"{self._units_since_checkpoint} rows written since the last checkpoint"
        elif n >= self.pool_checkpoint_writes:
            used, capacity = self.pool_usage()
            if used * 2 >= capacity:
                reason = f"buffer pool {used / capacity:.0%} used"
        if not reason:
            try:
                size = self.path.with_name(self.path.name + ".wal").stat().st_size
            except OSError:
                return
            if size < self.wal_checkpoint_bytes:
                return
            reason = f"write-ahead log {size} bytes"
        try:
            self.checkpoint()
            log.debug("checkpoint (%s)", reason)
        except Exception as exc:
            self._checkpoint_failed(exc, "after a commit")

    def pool_usage(self) -> tuple[int, int]:
        """(bytes in use, capacity) of Kuzu's buffer pool; in use includes evictable cached pages."""
        row = self._conn().run("admin/buffer_pool", {})[0]
        return int(row["used"]), int(row["capacity"])

    def _checkpoint_failed(self, exc: Exception, when: str) -> None:
        """A checkpoint that fails for lack of pool cannot free it: the database is opened again in this
        process (its log replayed with a larger pool if it needs one); only if that fails, fail-stop."""
        if pool_exhausted(exc) and not self._failed:
            log.warning("checkpoint %s found the buffer pool full (%s); opening the store again", when,
                        first_line(exc))
            self.reopen()
            return
        log.warning("checkpoint %s failed: %s", when, exc)

    def recover_pool(self, seen: int, *, reopen: bool = False) -> None:
        """Make the buffer pool usable again after a statement could not get memory.

        Waits until no statement runs (the writer and the gate held), then checkpoints, which
        frees the memory committed updates hold; with ``reopen`` (a statement failed again after
        that) the database is closed and opened again in this process, which frees whatever the
        engine still held. ``seen`` is :attr:`_recoveries` when the failure was observed: a
        recovery another thread finished since then is enough.
        """
        # The writer first, as every write takes it before anything else: a write that failed while
        # this thread waited for the writer recovers through this same path after its rollback.
        with self._write_lock, self._recover_lock:
            if self._recoveries != seen or self._failed or self._closed:
                return
            if not reopen:
                try:
                    self.checkpoint()
                except Exception as exc:
                    if not pool_exhausted(exc):
                        log.warning("checkpoint after a full buffer pool failed: %s", exc)
                    reopen = True
            if reopen:
                self.reopen()
            self._recoveries += 1

    def reopen(self) -> None:
        """Close the database and open it again in this process (the daemon and its clients stay).

        Every thread's connection is replaced at its next statement; a write-ahead log left by the
        close is replayed and checkpointed (with a larger pool if it needs one). If the store cannot
        be opened again, it fails-stop: every call says why, the daemon exits, the next start recovers.
        """
        with self._write_lock, self._gate.exclusive():
            if self._closed or self._failed:
                return
            with self._conns_lock:
                for conn in self._all_conns:
                    with contextlib.suppress(Exception):
                        conn.close()
                self._all_conns.clear()
                self._generation += 1
            try:
                with contextlib.suppress(Exception):
                    self.db.close()
                wal = self.path.with_name(self.path.name + ".wal")
                self.db = self._open_database(self._configured_pool_mb,
                                              replay=wal.is_file() and wal.stat().st_size > 0)
            except Exception as exc:
                self._failed = (
                    f"the LadybugDB buffer pool ({self.buffer_pool_mb} MiB) was exhausted and the store could not be "
                    f"opened again ({first_line(exc)}); nothing acknowledged was lost. Restart keymem (the daemon "
                    "exits and the next start replays the log with a larger pool if it needs one)."
                )
                log.error("%s", self._failed)
                return
            self._writes_since_checkpoint = self._units_since_checkpoint = 0
            for name in self._extensions:
                with contextlib.suppress(Exception):
                    self._conn().raw(f"LOAD EXTENSION {name}")
            self.reopens += 1
            log.warning("the store was opened again to free its buffer pool (%d time(s) since the start)", self.reopens)

    def _settle(self) -> None:
        """Checkpoint after a rollback: Kuzu 0.11.3 can otherwise refuse later updates of the rows
        the rolled-back transaction had SET ("write-write conflict") or crash."""
        try:
            with self._gate.exclusive():
                self._checkpoint_now(self._conn())
        except Exception as exc:
            self._checkpoint_failed(exc, "after a rollback")

    def _commit_failed(self, exc: Exception) -> StoreError:
        """A failed commit. An I/O failure leaves Kuzu's in-process state unusable: fail-stop."""
        text = str(exc)
        low = text.lower()
        if any(s in low for s in ("io exception", "no space", "cannot write", "disk", "write to file")):
            self._failed = (
                f"could not commit the write: the disk holding {self.path.parent} is full or failing ({text}); "
                "nothing acknowledged was lost. "
                "Free space, then restart keymem (`keymem daemon --stop`); the next start recovers the store."
            )
            return StoreError(self._failed)
        return StoreError(f"could not commit the write: {text}")

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def failed(self) -> str | None:
        """Why the store stopped accepting calls (the daemon exits on it), or None."""
        return self._failed

    def _begin(self, conn: Connection) -> None:
        try:
            conn.begin()
        except RuntimeError as exc:  # a transaction left open by an earlier failure
            if pool_exhausted(exc):
                raise  # write() answers it (PoolFull) and recovers the pool
            if "active transaction" not in str(exc).lower():
                raise StoreError(f"could not start a write: {exc}") from exc
            with contextlib.suppress(Exception):
                conn.rollback()
            conn.begin()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """Hold the writer with no transaction running anywhere (DDL Kuzu runs only in auto mode, checkpoints)."""
        self._check()
        with self._write_lock, self._gate.exclusive():
            yield self._conn()

    # -- files -------------------------------------------------------------------
    def checkpoint(self) -> None:
        with self.exclusive() as conn:
            self._checkpoint_now(conn)

    def _checkpoint_now(self, conn: Connection) -> None:
        """CHECKPOINT with the gate held exclusively; it frees the pool memory held by committed updates."""
        conn.conn.execute("CHECKPOINT")
        self._writes_since_checkpoint = 0
        self._units_since_checkpoint = 0
        self.checkpoints += 1

    def copy_to(self, dest: Path) -> Path:
        """A consistent copy of the database file: checkpoint, then copy while holding the writer."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self.exclusive() as conn:
            try:
                self._checkpoint_now(conn)
            except RuntimeError as exc:
                raise StoreError(f"could not checkpoint the store for a copy: {exc}") from exc
            tmp = dest.with_name(dest.name + ".part")
            shutil.copyfile(self.path, tmp)
            os.chmod(tmp, 0o600)
            os.replace(tmp, dest)
        return dest

    def backup(self, reason: str) -> Path:
        """Copy the database to ``backups/<name>.bak.<timestamp>`` before a risky change."""
        dest = self.path.parent / "backups" / f"{self.path.name}.bak.{_stamp()}.{reason}"
        self.copy_to(dest)
        log.info("backed up the store to %s before %s", dest, reason)
        prune_backups(dest.parent, self.path.name)
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
                    conn.close()
            self._all_conns.clear()
            self._local = threading.local()
            if self._failed:  # Kuzu aborts the process when closing after an I/O failure
                log.warning("leaving the failed store for the process exit to release")
                return
            with contextlib.suppress(Exception):
                self.db.close()
