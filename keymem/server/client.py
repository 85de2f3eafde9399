"""Talking to the shared daemon: ``DaemonClient.call(method, params)`` and a few helpers.

Used by the MCP stdio bridge, the prompt hook and the CLI (``cypher``, ``snapshot``,
``export`` ...). Stdlib only at import time, because the hook must start fast.

``DaemonClient`` keeps a small pool of connections (one per concurrent call) and:

* starts a detached daemon when none answers (``start=True``) and waits for its socket;
* if the daemon dies mid-session (connection reset, EOF, refused), starts a new one and
  retries the call once; a mutating call (``WRITES``) keeps its request id across the retry,
  so a write that committed before the daemon died is answered with its result, not redone;
* maps daemon errors back to the keymem exceptions (InvalidInput, NotFound, ...).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import keymem
from keymem.server.protocol import (
    PROTOCOL_VERSION,
    DaemonUnavailable,
    LineReader,
    Unauthorized,
    ensure_private_dir,
    out_path,
    pid_alive,
    read_pid,
    read_token,
    request_line,
    settle,
    socket_address,
    write_request_id,
)
from keymem.settings import CONFIG_VAR, Settings

log = logging.getLogger("keymem.client")

START_TIMEOUT_S = 30.0
RECONNECT_WINDOW_S = 10.0
ALREADY_RUNNING = 3  # the daemon's exit status when another one holds the lock
PATH_VARS = ("KEYMEM_DATA_DIR", "LOCAL_EMBEDDING_MODEL_PATH", "KEYMEM_RERANK_MODEL_PATH")
_NOT_THERE = (FileNotFoundError, ConnectionRefusedError)


class Connection:
    """One socket to the daemon; requests on it are strictly sequential."""

    def __init__(self, sock: socket.socket, token: str) -> None:
        self.sock = sock
        self.token = token
        self.reader = LineReader(sock)

    @classmethod
    def open(cls, settings: Settings, timeout: float | None) -> Connection:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(socket_address(settings.socket_path))
            token = read_token(settings.data_dir)  # after connecting: the live daemon wrote it before binding
        except BaseException:
            sock.close()
            raise
        return cls(sock, token)

    def request(self, rid: int, method: str, params: Any, source: Any, timeout: float | None,
                request_id: str | None = None) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        self.sock.sendall(request_line(rid, self.token, method, params, source, request_id))
        resp = self.reader.read()
        if resp is None:
            raise ConnectionResetError("the daemon closed the connection")
        return resp

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class DaemonClient:
    """A thread-safe client with a connection pool; ``start`` decides whether it may spawn a daemon."""

    def __init__(
        self,
        settings: Settings,
        *,
        start: bool = True,
        start_timeout: float = START_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.start = start
        self.env = env
        self.start_timeout = start_timeout
        self.info: dict[str, Any] | None = None
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._spawn_lock = threading.Lock()

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        source: dict[str, Any] | None = None,
        timeout: float | None = None,
        retry: bool = True,
        start: bool | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Run ``method`` in the daemon and return its result, or raise its error.

        ``timeout`` bounds each socket operation (None waits, e.g. for models to load).
        A lost daemon is restarted (if ``start``, default: the client's) and the call retried
        once when ``retry``. A mutating tool call is sent with ``request_id`` (a new random one
        by default), the same on every attempt: the daemon runs it at most once.
        """
        request_id = write_request_id(method, request_id)
        may_start = self.start if start is None else start
        reconnect_until: float | None = None
        unauthorized = 0
        while True:
            conn = self._checkout(timeout, may_start)
            try:
                resp = conn.request(next(self._ids), method, params, source, timeout, request_id)
            except TimeoutError:
                conn.close()
                raise DaemonUnavailable(f"the keymem daemon did not answer {method} within {timeout} s") from None
            except OSError as exc:  # reset, broken pipe, EOF: the daemon died under us
                conn.close()
                self.close()
                now = time.monotonic()
                if not retry or (reconnect_until is not None and now > reconnect_until):
                    raise DaemonUnavailable(f"lost the keymem daemon during {method}: {exc}") from None
                if reconnect_until is None:
                    # A killed daemon can still accept connections for a moment while its threads
                    # unwind: keep reconnecting (a new daemon is started once the socket refuses).
                    reconnect_until = now + RECONNECT_WINDOW_S
                    log.warning("lost the keymem daemon during %s (%s); reconnecting", method, exc)
                time.sleep(0.05)
                continue
            except BaseException:  # a malformed answer, Ctrl-C: this connection's state is unknown
                conn.close()
                raise
            try:
                return settle(resp, functools.partial(self._checkin, conn), conn.close)
            except Unauthorized:  # a daemon restarted between connect and token read
                unauthorized += 1
                if retry and unauthorized < 2:
                    continue
                raise

    def ping(self, timeout: float | None = 5.0) -> dict[str, Any]:
        info = self.call("ping", timeout=timeout)
        self.info = info
        return info  # type: ignore[no-any-return]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    # -- pool ------------------------------------------------------------------------
    def _checkout(self, timeout: float | None, start: bool) -> Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            return Connection.open(self.settings, timeout)
        except _NOT_THERE:
            if not start:
                raise DaemonUnavailable("no keymem daemon is running") from None
        except DaemonUnavailable:
            if not start:
                raise
        with self._spawn_lock:  # concurrent calls of this process start one daemon, not several
            try:
                return Connection.open(self.settings, timeout)
            except (*_NOT_THERE, DaemonUnavailable):
                return start_daemon(self.settings, timeout=self.start_timeout, env=self.env)

    def _checkin(self, conn: Connection) -> None:
        with self._lock:
            if len(self._idle) < 8:
                self._idle.append(conn)
                return
        conn.close()


# -- starting and stopping ---------------------------------------------------------------


def spawn_daemon(
    settings: Settings, *, idle_exit: float | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a detached daemon (own session, stdio to the log dir) and return at once.

    The daemon reads its configuration from ``env`` (default: this process's environment,
    which for the stdio server is what the MCP client configured) and from the config file
    these settings were read with; the data dir is forced to ``settings.data_dir`` and the
    config file to ``settings.config_file`` (a file that moves the data dir elsewhere is still
    the one the daemon reads).
    """
    data_dir = ensure_private_dir(settings.data_dir.absolute())
    out = out_path(data_dir)
    ensure_private_dir(out.parent)
    env = dict(os.environ if env is None else env)
    for var in PATH_VARS:  # the daemon runs in the data dir: make relative paths absolute
        if env.get(var):
            env[var] = os.path.abspath(os.path.expanduser(env[var]))
    env["KEYMEM_DATA_DIR"] = str(data_dir)
    if settings.config_file is not None:
        env[CONFIG_VAR] = str(settings.config_file)
    argv = [sys.executable, "-m", "keymem.server.daemon"]
    if idle_exit is not None:
        argv += ["--idle-exit", str(idle_exit)]
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=data_dir, env=env,
            start_new_session=True, close_fds=True,
        )
    finally:
        os.close(fd)
    # Reap it if it exits while we live (else a zombie would look alive to pid checks).
    threading.Thread(target=proc.wait, name="keymem-reap", daemon=True).start()
    log.info("started keymem daemon %d for %s", proc.pid, data_dir)
    return proc


def start_daemon(
    settings: Settings, *, timeout: float = START_TIMEOUT_S, env: Mapping[str, str] | None = None
) -> Connection:
    """Spawn a daemon and return a connection once its socket answers (another one may win the race)."""
    proc = spawn_daemon(settings, env=env)
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = Connection.open(settings, timeout=max(0.1, deadline - time.monotonic()))
            conn.request(0, "ping", None, None, timeout=max(0.5, deadline - time.monotonic()))
            return conn
        except (*_NOT_THERE, DaemonUnavailable, ConnectionResetError, Unauthorized):
            pass
        rc = proc.poll()
        if rc not in (None, 0, ALREADY_RUNNING):
            raise DaemonUnavailable(f"the keymem daemon exited with status {rc}: {_tail(settings)}")
        if time.monotonic() > deadline:
            raise DaemonUnavailable(f"the keymem daemon did not start within {timeout:.0f} s: {_tail(settings)}")
        time.sleep(0.05)


def _tail(settings: Settings, lines: int = 3) -> str:
    try:
        text = out_path(settings.data_dir.absolute()).read_text(errors="replace").strip().splitlines()
    except OSError:
        text = []
    return " | ".join(text[-lines:]) or f"see {settings.log_path}"


def status(settings: Settings, timeout: float = 5.0) -> dict[str, Any] | None:
    """The running daemon's ``stats``, or None when none answers (never starts one)."""
    client = DaemonClient(settings, start=False)
    try:
        return client.call("stats", timeout=timeout, retry=False)  # type: ignore[no-any-return]
    except (DaemonUnavailable, OSError):
        return None
    finally:
        client.close()


def stop(settings: Settings, timeout: float = 15.0) -> bool:
    """Ask the daemon to stop and wait until it has; False if none was running.

    A daemon that does not answer but whose pid file names a live keymem daemon gets SIGTERM.
    """
    pid = read_pid(settings.pid_path)
    client = DaemonClient(settings, start=False)
    try:
        answer = client.call("shutdown", timeout=5.0, retry=False)
        pid = int(answer.get("pid", pid or 0)) or pid
    except (DaemonUnavailable, OSError):
        if not (pid and pid_alive(pid) and _is_daemon(pid)):
            return False
        os.kill(pid, signal.SIGTERM)
    finally:
        client.close()
    deadline = time.monotonic() + timeout
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _is_daemon(pid: int) -> bool:
    try:
        return b"keymem.server.daemon" in open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return False


def setting_differences(info: dict[str, Any], settings: Settings) -> list[tuple[str, str, str]]:
    """``(variable, this client's value, the daemon's)`` for each daemon setting that differs
    (:data:`keymem.settings.DAEMON_SETTINGS`); a daemon of an older keymem is compared on its model alone."""
    from keymem.server.protocol import daemon_view

    mine = daemon_view(settings)
    theirs = info.get("settings")
    if not isinstance(theirs, dict):
        embedding = f"{settings.backend}:{mine.get('LOCAL_EMBEDDING_MODEL') or mine.get('OPENAI_EMBEDDING_MODEL')}"
        theirs_embedding = info.get("embedding")
        return [] if not theirs_embedding or theirs_embedding == embedding else [
            ("embedding", embedding, str(theirs_embedding))]
    names = dict.fromkeys([*mine, *theirs])
    return [(n, mine.get(n, "not used"), str(theirs.get(n, "not used"))) for n in names
            if mine.get(n, "not used") != str(theirs.get(n, "not used"))]


def describe_differences(diffs: list[tuple[str, str, str]], here: str = "here") -> str:
    """``LOCAL_EMBEDDING_MODEL bge-m3 here, minilm-l6-v2 in the daemon; ...``."""
    from keymem.errors import shown

    return "; ".join(f"{name} {shown(mine, quoted=False)} {here}, {shown(theirs, quoted=False)} in the daemon"
                     for name, mine, theirs in diffs)


def compatibility_warnings(info: dict[str, Any], settings: Settings) -> list[str]:
    """Differences between this client and the daemon it reached, in words a user (or an agent) can act on."""
    out = []
    mine_version = keymem.__version__  # looked up here, not at import: the hook imports this module
    if info.get("version") != mine_version or info.get("protocol") != PROTOCOL_VERSION:
        out.append(f"the daemon runs keymem {info.get('version')} (this client is {mine_version}); "
                   "run `keymem daemon --stop` to restart it with this version")
    diffs = setting_differences(info, settings)
    if diffs:
        out.append(f"the running keymem daemon (pid {info.get('pid')}) computes every result with its own settings, "
                   f"not this client's: {describe_differences(diffs)}. To use this client's settings, give every "
                   "client the same ones (the config file, `keymem init`, not per-client variables) and run "
                   "`keymem daemon --stop`: the next tool call starts a daemon with them")
    return out
