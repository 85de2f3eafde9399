"""What every CLI command shares: settings, where the work runs, messages, progress.

LadybugDB admits one read-write process per database, so a command sends its graph-side work
to the shared daemon when one answers, and opens the store in this process only when none
does (or ``KEYMEM_DAEMON=off``). Both paths run the same functions of
:mod:`keymem.cli.ops`, so what a command prints does not depend on where it ran.

Heavy modules (ladybug, numpy, onnxruntime) are imported only inside functions: ``--help``
must stay fast.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from keymem.server.client import DaemonClient
    from keymem.settings import Settings
    from keymem.store.db import Store

OPS = "keymem.cli.ops"


def fail(message: str, *, fix: str | None = None, code: int = 1) -> typer.Exit:
    """Print ``keymem: message`` (and the fix) on stderr; the caller raises the returned Exit."""
    typer.echo(f"keymem: {message}", err=True)
    if fix:
        typer.echo(f"  fix: {fix}", err=True)
    return typer.Exit(code)


def settings_or_exit() -> Settings:
    """The environment's settings, or exit 2 naming the bad variable."""
    from keymem.settings import SettingsError, load_settings

    try:
        return load_settings()
    except SettingsError as exc:
        raise fail(str(exc), code=2) from None


class StoreView:
    """The parts of a MemoryGraph that store-only operations use, over a directly opened Store.

    Opening the full graph loads the embedding model (seconds); the console, stats, export,
    snapshot and viz need only the store.
    """

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.embedder = None

    def reload_caches(self) -> None:
        """Nothing is cached over a directly opened store (a MemoryGraph re-reads its copies here);
        the links' copies of their ends, which the association walk reads, are re-derived."""
        if not self.store.read_only:
            from keymem.store.walk import fill_walk_copies

            fill_walk_copies(self.store, force=True)

    def now(self) -> float:
        return time.time()

    def close(self) -> None:
        self.store.close()


class Target:
    """Where a command's graph-side work runs: the running daemon, or this process.

    ``need="store"`` opens only the store when local (read-only unless ``write``);
    ``need="graph"`` opens the full MemoryGraph (models included).
    """

    def __init__(self, settings: Settings, *, need: str = "store", write: bool = False) -> None:
        self.settings = settings
        self.need = need
        self.write = write
        self.client: DaemonClient | None = None
        self.local: Any = None
        self.daemon_info: dict[str, Any] | None = None
        if settings.daemon == "auto":
            self._try_daemon()

    @property
    def via_daemon(self) -> bool:
        return self.client is not None

    def _try_daemon(self) -> None:
        from keymem.server.client import DaemonClient
        from keymem.server.protocol import DaemonUnavailable

        client = DaemonClient(self.settings, start=False)
        try:
            self.daemon_info = client.call("ping", timeout=5.0, retry=False)
        except (DaemonUnavailable, OSError):
            client.close()
            return
        self.client = client

    def open_local(self) -> Any:
        if self.local is not None:
            return self.local
        from keymem.errors import KeymemError

        s = self.settings
        try:
            if self.need == "graph" or (s.store_url and s.falkordb_graphs == "namespace"):
                # a graph per namespace is read through the graphs that route to them (its store alone is none)
                from keymem.memory.namespace_graphs import open_memory

                self.local = open_memory(s, progress=sys.stderr.isatty())
            elif s.store_url:  # a server engine: the factory opens it (read-only refuses writes there)
                from keymem.store import migrations
                from keymem.store.factory import open_store

                store = open_store(s, read_only=not self.write)
                if self.write:
                    migrations.migrate(store)
                self.local = StoreView(s, store)
            else:
                from keymem.store import migrations
                from keymem.store.db import Store

                if not s.db_path.exists() and not self.write:
                    raise fail(f"there is no keymem store at {s.db_path} yet",
                               fix="store a memory first, or set KEYMEM_DATA_DIR to the data dir you mean")
                store = Store(s.db_path, buffer_pool_mb=s.buffer_pool_mb, read_only=not self.write)
                if self.write:
                    migrations.migrate(store)
                self.local = StoreView(s, store)
        except KeymemError as exc:
            raise fail(str(exc)) from None
        return self.local

    def request(self, name: str, params: dict[str, Any] | None = None) -> Any:
        """Run ``keymem.cli.ops.<name>(graph, params)`` in the daemon or here; raises KeymemError."""
        params = params or {}
        if self.client is not None:
            return self.client.call(f"{OPS}:{name}", params, timeout=None)
        from keymem.cli import ops

        return ops.OPS[name](self.open_local(), params)

    def call(self, name: str, params: dict[str, Any] | None = None) -> Any:
        """:meth:`request`, but a keymem error ends the command (exit 1) with its message."""
        from keymem.errors import KeymemError

        try:
            return self.request(name, params)
        except KeymemError as exc:
            raise fail(str(exc)) from None

    def where(self) -> str:
        """Where the work runs, for banners and doctor."""
        if self.client is not None:
            pid = (self.daemon_info or {}).get("pid")
            return f"the keymem daemon (pid {pid})"
        mode = "read-write" if self.write else "read-only"
        place: Any = self.settings.db_path
        if self.settings.store_url:
            from keymem.engine_url import parse_store_url

            place = parse_store_url(self.settings.store_url).shown()  # the password left out
        return f"{place} ({mode}, no daemon running)"

    def reopen(self, *, write: bool) -> None:
        """Switch a local store between read-only and read-write (the console's ``:write``)."""
        self.write = write
        if self.local is not None and self.need == "store":
            self.local.close()
            self.local = None

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.local is not None:
            self.local.close()
            self.local = None

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- progress --------------------------------------------------------------------------------

Progress = Callable[[str, int, int], None]


@contextlib.contextmanager
def progress_bar(enabled: bool | None = None) -> Iterator[Progress | None]:
    """A ``(phase, done, total)`` callback drawing a bar on stderr, or None without a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    drawn = [False]

    def show(phase: str, done: int, total: int) -> None:
        width = 30
        frac = done / total if total else 1.0
        bar = "#" * int(width * frac) + "-" * (width - int(width * frac))
        sys.stderr.write(f"\r{phase:<16} [{bar}] {done}/{total}")
        sys.stderr.flush()
        drawn[0] = True

    try:
        yield show
    finally:
        if drawn[0]:
            sys.stderr.write("\n")
            sys.stderr.flush()


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def schema_state(applied: list[str], available: list[str], problems: list[tuple[str, str]]) -> str:
    """Doctor's word on a store's schema steps ("005_x (up to date)", or what is pending); a store
    written by a newer keymem adds its problem to ``problems``."""
    pending = [s for s in available if s not in applied and s != "000_migrations"]
    newer = [s for s in applied if s not in available]
    if newer:
        problems.append((f"the store has schema steps this keymem does not know ({', '.join(newer)})",
                         "upgrade keymem (the store was written by a newer version)"))
    return (applied[-1] if applied else "(none)") + (f", pending {', '.join(pending)}" if pending else " (up to date)")


def daemon_stats(settings: Settings) -> dict[str, Any]:
    """The running daemon's ``stats`` (no hubs): what doctor reports of a store the daemon holds open."""
    target = Target(settings, need="store")
    try:
        return target.call("stats", {"hubs": 0})  # type: ignore[no-any-return]
    finally:
        target.close()
