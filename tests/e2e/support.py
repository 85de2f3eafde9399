"""Shared fixtures for the server and end-to-end tests: real processes on a short, private data dir.

Every daemon a test starts is stopped at teardown (politely, then by pid with SIGKILL), and
the data dir is removed. Data dirs live directly under /tmp because a Unix socket path must
stay under ~104 bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from keymem.server import client
from keymem.server.protocol import pid_alive, read_pid
from keymem.settings import Settings, load_settings

SERVER_CMD = [sys.executable, "-m", "keymem.cli.main"]
HEAVY_LIBS = ("_lbug", "onnxruntime")  # shared objects the stdio server must not map before a tool call


@contextlib.contextmanager
def bare_session(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, Any]]]:
    """A ``keymem`` stdio server that has answered ``initialize`` and ``tools/list``, and nothing else.

    Raw JSON-RPC lines over pipes (what a health check such as ``claude mcp list`` sends).
    Yields the process, still running, and the initialize result; closes stdin afterwards.
    """
    proc = subprocess.Popen(SERVER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        init = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert listed is not None and len(listed["result"]["tools"]) == 10
        assert init is not None
        yield proc, init["result"]
    finally:
        assert proc.stdin
        proc.stdin.close()
        proc.wait(timeout=15)


def rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC line to a stdio server; for a request, return the next line it answers."""
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    if "id" not in msg:
        return None
    return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]


def mapped_libraries(pid: int, names: tuple[str, ...] = HEAVY_LIBS) -> list[str]:
    """The shared objects of process ``pid`` whose file name mentions one of ``names``."""
    found = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        base = os.path.basename(fields[5]) if len(fields) == 6 else ""
        if ".so" in base and any(n in base for n in names):
            found.add(fields[5])
    return sorted(found)


@dataclass
class Keymem:
    """One isolated keymem installation: data dir + the environment its processes get."""

    data_dir: Path
    env: dict[str, str]
    pids: set[int] = field(default_factory=set)

    def settings(self, **overrides: Any) -> Settings:
        return load_settings(self.env, **overrides)

    def daemon_pid(self) -> int | None:
        pid = read_pid(self.data_dir / "daemon.pid")
        return pid if pid and pid_alive(pid) else None

    def wait_daemon_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        c = client.DaemonClient(self.settings(), start=False)
        try:
            while True:
                try:
                    info = c.ping(timeout=5)
                    if info.get("state") == "ready":
                        self.pids.add(int(info["pid"]))
                        return info  # type: ignore[no-any-return]
                    if info.get("state") == "failed":
                        raise AssertionError(f"daemon failed: {info.get('error')}")
                except client.DaemonUnavailable:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError("daemon not ready in time")
                time.sleep(0.05)
        finally:
            c.close()

    def stop_all(self) -> None:
        """Stop the daemon politely, then SIGKILL anything still serving this data dir (even mid-start)."""
        with contextlib.suppress(Exception):
            client.stop(self.settings(), timeout=10)
        pid = read_pid(self.data_dir / "daemon.pid")
        if pid:
            self.pids.add(pid)
        deadline = time.monotonic() + 1.0
        while True:
            self.pids.update(daemon_processes(self.data_dir))
            for pid in self.pids:
                if pid_alive(pid):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)


@contextlib.contextmanager
def never_answering(srv: socket.socket) -> Iterator[list[socket.socket]]:
    """Accept connections on a listening ``srv`` and never answer (a hung or very slow server or
    daemon); yields the accepted connections; closes them and ``srv`` at the end."""
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except TimeoutError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield held
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def daemon_processes(data_dir: Path) -> list[int]:
    """Live daemon processes serving ``data_dir`` (clients spawn them with cwd = the data dir)."""
    found = []
    target = str(data_dir.absolute())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            if b"keymem.server.daemon" not in cmd or os.readlink(entry / "cwd") != target:
                continue
            state = next(x for x in (entry / "status").read_text().splitlines() if x.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if "Z" not in state:
            found.append(int(entry.name))
    return found


def keymem_env(data_dir: Path, minilm_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_")}
    env.update(
        KEYMEM_DATA_DIR=str(data_dir),
        EMBEDDING_BACKEND="local",
        LOCAL_EMBEDDING_MODEL="minilm-l6-v2",
        LOCAL_EMBEDDING_MODEL_PATH=str(minilm_dir),
        KEYMEM_RERANK="false",
        KEYMEM_EMBED_THREADS="1",
        KEYMEM_BUFFER_POOL_MB="128",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@contextlib.contextmanager
def private_dir(prefix: str = "km") -> Iterator[Path]:
    """A 0700 directory directly under /tmp (a Unix socket path must stay short), removed at the end."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    os.chmod(d, 0o700)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    with private_dir() as d:
        yield d


@pytest.fixture
def km(short_dir: Path, minilm_dir: Path) -> Iterator[Keymem]:
    """A data dir whose daemons are all stopped at teardown."""
    k = Keymem(short_dir / "data", keymem_env(short_dir / "data", minilm_dir))
    try:
        yield k
    finally:
        k.stop_all()


@pytest.fixture
def daemon(km: Keymem) -> Keymem:
    """``km`` with a running, ready daemon."""
    client.start_daemon(km.settings(), env=km.env).close()
    km.wait_daemon_ready()
    return km
