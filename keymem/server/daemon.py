"""The shared daemon: the one process that opens the Kuzu store read-write.

Kuzu admits one read-write process per database, so every entry point (each MCP stdio
server, the prompt hook, the CLI) talks to this process instead of opening the store.

* Exactly one daemon per data dir: it holds an exclusive ``flock`` on ``daemon.lock`` for its
  whole life. A second one (two clients starting a daemon at once) exits at once with
  :data:`ALREADY_RUNNING`. The kernel drops the lock when a daemon dies, even by kill -9, so
  the next one takes over and replaces the stale socket and pid files.
* The channel is a Unix socket (0600, in the 0700 data dir) plus a random token (0600 file)
  checked on every request, and the peer's uid must be ours. Nothing listens on TCP.
* Each connection gets a thread for its I/O; graph calls run on a small worker pool (the
  store serialises writes, reads run concurrently; a fixed pool keeps one Kuzu connection per
  worker). ``ping`` and ``counts`` are answered while the models load.
* A mutating tool call that carries a ``request_id`` runs at most once per id: the client's
  retry after a crash between commit and reply gets the recorded result (``memory/requests.py``).
* ``graph.sweep()`` runs when the store opens and every ``KEYMEM_CLEANUP_INTERVAL_MS``;
  coalesced ``read_memory`` accesses are written within ``FLUSH_SECONDS`` (``memory/access.py``).
* It exits on ``shutdown``, SIGTERM/SIGINT, after ``idle_exit`` seconds without clients, or
  shortly after the store or models failed to load (so a fixed configuration gets a new try).
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import logging
import os
import secrets
import signal
import socket
import struct
import sys
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from keymem.errors import InvalidInput
from keymem.native import limit_malloc_arenas, trim_heap
from keymem.server.host import GraphHost
from keymem.server.protocol import (
    BadLine,
    LineReader,
    ProtocolError,
    Unauthorized,
    bad_unicode,
    encode,
    ensure_private_dir,
    error_payload,
    lock_path,
    socket_address,
    token_path,
    write_private,
)
from keymem.settings import Settings

log = logging.getLogger("keymem.daemon")

ALREADY_RUNNING = 3
FAILED_GRACE_S = 10.0
MAX_CLIENTS = 256
TRIM_SECONDS = 60.0  # how often freed heap memory is handed back to the OS
MALLOC_ARENAS = 2  # glibc malloc arenas for the daemon's threads (keymem/native.py)


def acquire_lock(data_dir: Path) -> int | None:
    """The daemon lock's fd, or None if another daemon holds it."""
    fd = os.open(lock_path(data_dir), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def rss_kb(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process in KiB, from /proc (empty where there is no /proc)."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    return out


class Daemon:
    """One daemon process serving one data dir."""

    def __init__(self, settings: Settings, *, idle_exit: float = 900.0, host: GraphHost | None = None) -> None:
        self.settings = settings
        self.idle_exit = idle_exit
        self.host = host or GraphHost(settings)
        self.stop = threading.Event()
        self.token = ""
        self.clients = 0
        self.last_activity = time.monotonic()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=min(8, max(4, os.cpu_count() or 1)), thread_name_prefix="keymem-worker")
        self._listener: socket.socket | None = None
        self._sock_ino: int | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def run(self) -> int:
        os.umask(0o077)  # everything the daemon creates (store, WAL, backups) is owner-only
        limit_malloc_arenas(MALLOC_ARENAS)  # before the host and connection threads start
        data_dir = ensure_private_dir(self.settings.data_dir)
        lock_fd = acquire_lock(data_dir)
        if lock_fd is None:
            log.info("another keymem daemon already serves %s", data_dir)
            return ALREADY_RUNNING
        try:
            self.token = secrets.token_hex(32)
            write_private(token_path(data_dir), self.token)
            self._listener = self._bind()
            write_private(self.settings.pid_path, f"{os.getpid()}\n")
            log.info("daemon %d serving %s", os.getpid(), self.settings.socket_path)
            self.host.start()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    signal.signal(sig, lambda *_: self.stop.set())
            threading.Thread(target=self._accept_loop, name="keymem-accept", daemon=True).start()
            threading.Thread(target=self._sweep_loop, name="keymem-sweep", daemon=True).start()
            threading.Thread(target=self._flush_loop, name="keymem-flush", daemon=True).start()
            self._watch()
        finally:
            self._cleanup(data_dir)
            os.close(lock_fd)
        return 0

    def _bind(self) -> socket.socket:
        addr = socket_address(self.settings.socket_path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(addr)  # we hold the lock: any socket file here is a dead daemon's
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(addr)
        finally:
            os.umask(old)
        os.chmod(addr, 0o600)
        self._sock_ino = os.stat(addr).st_ino
        sock.listen(64)
        sock.settimeout(0.5)
        return sock

    def _watch(self) -> None:
        """Main thread: wait for a reason to stop."""
        failed_at: float | None = None
        while not self.stop.wait(0.5):
            now = time.monotonic()
            graph = self.host.graph
            if graph is not None and graph.store.failed:  # fail-stop: the next start recovers the store
                log.error("exiting: %s", graph.store.failed)
                return
            if self.host.state == "failed":
                failed_at = failed_at or now
                if now - failed_at > FAILED_GRACE_S:
                    log.error("exiting: the store or models could not be loaded")
                    return
            with self._lock:
                idle = self.clients == 0 and now - self.last_activity > self.idle_exit
            if self.idle_exit > 0 and idle:
                log.info("exiting: no clients for %.0f s", self.idle_exit)
                return

    def _cleanup(self, data_dir: Path) -> None:
        self.stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
            addr = str(self.settings.socket_path.absolute())
            with contextlib.suppress(OSError):
                if os.stat(addr).st_ino == self._sock_ino:
                    os.unlink(addr)
        self._pool.shutdown(wait=True, cancel_futures=True)
        try:
            self.host.close()
        except Exception:
            log.exception("closing the store failed")
        for path in (self.settings.pid_path, token_path(data_dir)):
            with contextlib.suppress(OSError):
                if path == token_path(data_dir) or path.read_text().strip() == str(os.getpid()):
                    path.unlink()
        log.info("daemon %d stopped", os.getpid())

    def _sweep_loop(self) -> None:
        interval = self.settings.cleanup_interval_ms / 1000.0
        while not self.stop.wait(interval):
            graph = self.host.graph
            if graph is None:
                continue
            try:
                self._pool.submit(graph.sweep).result()
            except Exception:
                log.exception("periodic sweep failed")

    def _flush_loop(self) -> None:
        """Write coalesced read_memory accesses within FLUSH_SECONDS even when no more reads come."""
        from keymem.memory.access import FLUSH_SECONDS

        last_trim = time.monotonic()
        while not self.stop.wait(FLUSH_SECONDS / 2):
            if time.monotonic() - last_trim >= TRIM_SECONDS:  # freed heap back to the OS (keymem/native.py)
                trim_heap()
                last_trim = time.monotonic()
            graph = self.host.graph
            if graph is None or not graph.access.due():
                continue
            try:
                self._pool.submit(graph.access.flush).result()
            except Exception:
                log.exception("writing the pending accesses failed")

    # -- connections -------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self.stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self.stop.is_set():
                    return
                log.exception("accept failed")
                time.sleep(0.1)
                continue
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), name="keymem-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self.clients += 1
            self.last_activity = time.monotonic()
            crowded = self.clients > MAX_CLIENTS
        try:
            if crowded or not _same_user(conn):
                conn.sendall(encode({"id": None, "ok": False, "error": {
                    "type": "Unauthorized", "message": "too many clients" if crowded else "peer is another user"}}))
                return
            reader = LineReader(conn)
            while not self.stop.is_set():
                try:
                    msg = reader.read()
                except BadLine as exc:  # answered, and the connection goes on with the next line
                    conn.sendall(encode({"id": None, "ok": False, "error": error_payload(exc)}))
                    continue
                if msg is None:
                    return
                response, close = self._handle(msg)
                conn.sendall(encode(response))
                if close:
                    return
        except ProtocolError as exc:
            with contextlib.suppress(OSError):
                conn.sendall(encode({"id": None, "ok": False, "error": error_payload(exc)}))
        except OSError:
            pass  # the client went away
        finally:
            with self._lock:
                self.clients -= 1
                self.last_activity = time.monotonic()
            with contextlib.suppress(OSError):
                conn.close()

    def _handle(self, msg: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        rid = msg.get("id")
        bad = bad_unicode(msg)
        if bad is not None:  # before anything reads a value: UTF-8 cannot carry it (Kuzu, the log, the reply)
            where, what = bad
            if where == "token" or where.startswith("token"):
                return {"id": None, "ok": False, "error": error_payload(Unauthorized("wrong daemon token"))}, True
            log.warning("refused a request whose %s is not valid Unicode", where)
            error = InvalidInput(f"{where} contains {what}; send valid Unicode")
            return {"id": None if bad_unicode(rid) else rid, "ok": False, "error": error_payload(error)}, False
        token = msg.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            log.warning("refused a request with a wrong token")
            return {"id": rid, "ok": False, "error": error_payload(Unauthorized("wrong daemon token"))}, True
        method = msg.get("method")
        params = msg.get("params") or {}
        try:
            if not isinstance(method, str):
                raise ProtocolError("method must be a string")
            result = self._dispatch(method, params, msg.get("source"), msg.get("request_id"))
            self._fault_before_reply(method)
            return {"id": rid, "ok": True, "result": result}, False
        except CancelledError:
            return {"id": rid, "ok": False, "error": {"type": "StoreError", "message": "the daemon is shutting down"}}, True
        except Exception as exc:
            payload = error_payload(exc)
            if payload["type"] == "InternalError":
                log.exception("%s failed", method)
                payload["message"] = f"internal error in {method}: {type(exc).__name__}: {exc} (see {self.settings.log_path})"
            return {"id": rid, "ok": False, "error": payload}, False

    def _others(self) -> int:
        """Connected clients other than the one asking (``keymem daemon --status`` is no client of note)."""
        return max(0, self.clients - 1)

    def _dispatch(self, method: str, params: Any, source: Any, request_id: Any = None) -> Any:
        if method == "ping":
            return {**self.host.info(), "clients": self._others()}
        if method == "shutdown":
            log.info("shutdown requested")
            self.stop.set()
            return {"stopping": True, "pid": os.getpid()}
        if method == "stats":
            counts = self._pool.submit(self.host.counts).result() if self.host.graph else self.host.counts()
            return {**self.host.info(), "clients": self._others(), "counts": counts, "memory_kb": rss_kb()}
        if method == "counts" and self.host.graph is None:
            return self.host.counts()
        if method != "counts":
            self.host.wait()  # on this connection's thread, so waiting callers hold no worker
        if source is not None and not isinstance(source, dict):
            raise ProtocolError("source must be an object")
        with self._lock:
            self.last_activity = time.monotonic()
        return self._pool.submit(self.host.call, method, params, source, request_id).result()

    def _fault_before_reply(self, method: str) -> None:
        """Tests only (``KEYMEM_FAULT_KILL_BEFORE_REPLY``): SIGKILL this daemon after a listed method's
        call returned (its write committed) and before its reply is sent; once per method and data dir."""
        listed = self.settings.fault_kill_before_reply
        if not listed or method not in [m.strip() for m in listed.split(",")]:
            return
        marker = self.settings.data_dir / f"fault-{method}.fired"
        try:
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return
        log.warning("KEYMEM_FAULT_KILL_BEFORE_REPLY: killing the daemon after %s committed, before its reply", method)
        os.kill(os.getpid(), signal.SIGKILL)


def _same_user(conn: socket.socket) -> bool:
    """SO_PEERCRED: the connecting process must run as our uid (Linux; elsewhere the 0600 socket)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


def main(argv: list[str] | None = None) -> int:
    """``python -m keymem.server.daemon [--foreground] [--idle-exit S]``: how clients spawn it."""
    import argparse

    from keymem.server.logs import setup_logging
    from keymem.settings import SettingsError, load_settings

    parser = argparse.ArgumentParser(prog="python -m keymem.server.daemon", description="The shared keymem daemon.")
    parser.add_argument("--foreground", action="store_true", help="also log to stderr")
    parser.add_argument("--idle-exit", type=float, default=900.0, help="seconds without clients before exiting")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"keymem: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings, stderr=args.foreground)
    return Daemon(settings, idle_exit=args.idle_exit).run()


if __name__ == "__main__":
    sys.exit(main())
