"""A Redis Cluster shard's primary killed with -9 after acknowledged writes, its replica promoted by the
cluster itself (no Sentinel), and every acknowledged write found on the new primary: the failover
guarantee of tests/store/test_falkor_durability.py on a real 3-node cluster (tests/store/falkor_cluster.py)
with a graph per namespace (``KEYMEM_FALKORDB_GRAPHS=namespace``), opened through keymem's real path.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.errors import StoreError
from keymem.memory.namespace_graphs import open_memory
from keymem.settings import Settings, load_settings
from tests.store.falkor_cluster import Cluster, ClusterNode, cluster
from tests.store.falkor_replicas import wait_replicas_online

# ~15 s of cluster start and failover: outside the default run (`-m slow`), which keeps the Sentinel failover
# test and the cluster tests of tests/store/test_falkor_cluster.py
pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

PREFIX = "keymem"
NODE_TIMEOUT_MS = 2000  # a primary silent this long is failed, and its replica promotes itself
FAILOVER_TIMEOUT_S = 60.0  # the promotion must happen within this (how long it took is printed)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three primaries, the first with two replicas (one to promote, one to acknowledge the writes after),
    failing a silent node after 2 s."""
    with cluster(tmp_path_factory.mktemp("failover"), replica=True, replicas=2,
                 node_timeout_ms=NODE_TIMEOUT_MS) as made:
        yield made


def _settings(root: Path, minilm_dir: Path, url: str) -> Settings:
    return load_settings({}, data_dir=root, store_url=url, falkordb_graphs="namespace", falkordb_ack_replicas=1,
                         falkordb_ack_timeout_ms=2000, embedding_backend="local",
                         local_embedding_model="minilm-l6-v2", local_embedding_model_path=minilm_dir,
                         rerank=False, embed_threads=1)


def _rows(node: ClusterNode, graph: str, query: str) -> list[Any]:
    """A read of ``graph`` on ``node`` itself (a replica answers reads of its primary's slots after READONLY)."""
    client = node.client()
    try:
        client.execute_command("READONLY")
        return list(client.execute_command("GRAPH.RO_QUERY", graph, query)[1])
    finally:
        client.close()


def _serves(asked: ClusterNode, slot: int) -> int | None:
    """The port ``asked`` says serves ``slot`` as its primary, None while no node does."""
    client = asked.client()
    try:
        for first, last, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
            if int(first) <= slot <= int(last):
                return int(primary[1])
    finally:
        client.close()
    return None


def _role(node: ClusterNode) -> str:
    client = node.client()
    try:
        return str(client.execute_command("ROLE")[0])
    finally:
        client.close()


def wait_promoted(nodes: Cluster, slot: int, timeout: float = FAILOVER_TIMEOUT_S) -> ClusterNode:
    """The replica of nodes[0] that says it is a primary, once the other primaries say it serves ``slot``
    and the cluster is ok; else raise, saying what each node said last."""
    deadline = time.monotonic() + timeout
    others = nodes.nodes[1:]
    while True:
        roles = [_role(replica) for replica in nodes.replicas]
        promoted = next((r for r, role in zip(nodes.replicas, roles, strict=True) if role == "master"), None)
        serving = [_serves(n, slot) for n in others]
        states = []
        for node in others:
            client = node.client()
            try:
                info = client.execute_command("CLUSTER", "INFO")
            finally:
                client.close()
            facts = info if isinstance(info, dict) else dict(
                line.split(":", 1) for line in str(info).split() if ":" in line)
            states.append(facts.get("cluster_state"))
        if promoted is not None and all(p == promoted.port for p in serving) and all(s == "ok" for s in states):
            return promoted
        if time.monotonic() > deadline:
            raise RuntimeError(f"no replica of the killed primary was promoted within {timeout} s: the replicas' "
                               f"roles {roles}, the slot {slot} served by {serving}, cluster states {states}")
        time.sleep(0.1)


def test_a_shards_primary_killed_after_acknowledged_writes_fails_over_and_keeps_them(
        nodes: Cluster, tmp_path: Path, minilm_dir: Path, minilm_embedder: Any) -> None:
    """Memories remembered in a namespace whose graph is on shard 0, each acknowledged by that shard's
    replicas; a remember waiting on the primary when it gets kill -9 fails with one line and is not sent
    again, as does one while the shard has no primary; the cluster promotes a replica; the same open object
    then remembers on the new primary (acknowledged by the other replica), and a freshly opened one reads
    every acknowledged memory."""
    namespace = next(f"tenant{n}" for n in range(1000) if nodes.shard_of(f"{PREFIX}:tenant{n}") == 0)
    graph = f"{PREFIX}:{namespace}"
    slot = nodes.keyslot(graph)
    primary = nodes.nodes[0]
    assert len(nodes.replicas) == 2
    settings = _settings(tmp_path, minilm_dir, nodes.url(PREFIX, node=1))  # a node that stays up

    memory = open_memory(settings, embedder=minilm_embedder, reranker=None, progress=False)
    acknowledged: dict[str, str] = {}
    try:
        for i in range(12):
            content = f"Tenant note {i}: queue {i} drains to bucket {i * 5 % 13}"
            made = memory.remember(content=content, keys=[f"queue {i}", "tenant"], namespace=namespace)
            acknowledged[made.memory_id] = content
        held = {row[0] for replica in nodes.replicas for row in _rows(replica, graph, "MATCH (m:Memory) RETURN m.id")}
        assert held == set(acknowledged)  # each acknowledged write is on a replica

        # A remember in flight: the primary is paused, so the call's statement waits on it; then it dies.
        lost = "Written while the primary died: never acknowledged"
        failed: list[BaseException] = []

        def in_flight() -> None:
            try:
                memory.remember(content=lost, keys=["in flight"], namespace=namespace)
            except BaseException as exc:
                failed.append(exc)

        os.kill(primary.process.pid, signal.SIGSTOP)
        caller = threading.Thread(target=in_flight, name="in-flight-remember", daemon=True)
        caller.start()
        caller.join(1.0)
        assert caller.is_alive(), f"the remember did not wait on the paused primary: {failed}"
        killed = time.monotonic()
        primary.kill9()
        caller.join(10.0)
        assert not caller.is_alive(), "the remember in flight did not fail when its primary died"
        assert len(failed) == 1 and isinstance(failed[0], StoreError), failed
        assert "\n" not in str(failed[0]), str(failed[0])
        # while the shard has no primary a remember fails in one line (and refreshes the client's slot map
        # to the old one: the first statement after the promotion must still find the new primary)
        with pytest.raises(StoreError) as outage:
            memory.remember(content="Written while the shard had no primary", keys=["outage"], namespace=namespace)
        assert "\n" not in str(outage.value), str(outage.value)

        replica = wait_promoted(nodes, slot)
        took = time.monotonic() - killed
        print(f"\ncluster failover: replica {replica.port} primary for slot {slot} {took:.1f} s after kill -9 "
              f"(cluster-node-timeout {NODE_TIMEOUT_MS} ms)")
        wait_replicas_online(replica.port, 1, timeout=FAILOVER_TIMEOUT_S)  # the other replica follows it

        after = "Written after the failover, on the promoted replica"
        made = memory.remember(content=after, keys=["failover"], namespace=namespace)
        acknowledged[made.memory_id] = after
        print(f"first remember after the promotion answered {time.monotonic() - killed:.1f} s after kill -9")
    finally:
        memory.close()

    reopened = open_memory(settings, embedder=minilm_embedder, reranker=None, progress=False)
    try:
        for memory_id, content in acknowledged.items():
            assert reopened.read_memory(memory_id=memory_id).content == content
    finally:
        reopened.close()
    assert _serves(nodes.nodes[1], slot) == replica.port  # the promoted replica is the graph's primary now
    held = _rows(replica, graph, "MATCH (m:Memory) RETURN m.id, m.content")
    assert dict((row[0], row[1]) for row in held) == acknowledged  # all there, once; the failed ones not resent
