"""keymem's FalkorDB store on a real 3-node Redis Cluster (tests/store/falkor_cluster.py), one graph per
namespace (``<prefix>:<namespace>``) spread over the shards: write scopes and reads routed to each graph's
shard, the writer lease and request keys in the graph's slot (``{<graph>}:writer``), every primary's
graphs listed from any node, backups in the graph's slot, the acknowledgement asked of the graph's shard,
and doctor's facts about the cluster.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from keymem.engine_url import FalkorURL, parse_store_url
from keymem.errors import StoreError
from keymem.store import migrations
from keymem.store.db import KEEP_BACKUPS
from keymem.store.falkor_connect import AckPolicy, durability_line, server_facts
from keymem.store.falkor_lock import RedisLease
from keymem.store.falkordb import FalkorStore
from tests.store.falkor_cluster import Cluster, cluster

PREFIX = "keymem"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three primaries, the first with a replica (for the acknowledgement), once for the module."""
    with cluster(tmp_path_factory.mktemp("cluster"), replica=True) as made:
        yield made


def namespace_on(nodes: Cluster, shard: int, tag: str) -> str:
    """The first namespace ``<tag><n>`` whose graph ``keymem:<tag><n>`` is on ``shard`` (by CLUSTER KEYSLOT)."""
    return next(f"{tag}{n}" for n in range(1000) if nodes.shard_of(f"{PREFIX}:{tag}{n}") == shard)


def url_of(nodes: Cluster, namespace: str, node: int = 0) -> FalkorURL:
    return parse_store_url(nodes.url(PREFIX, node)).for_namespace(namespace)


@contextlib.contextmanager
def opened(url: FalkorURL, **kwargs: object) -> Iterator[FalkorStore]:
    store = FalkorStore(url, **kwargs)  # type: ignore[arg-type]
    try:
        yield store
    finally:
        store.close()


def on_node(nodes: Cluster, shard: int) -> set[str]:
    client = nodes.nodes[shard].client()
    try:
        return set(client.execute_command("GRAPH.LIST"))
    finally:
        client.close()


def test_stores_on_graphs_of_every_shard_write_and_read_back(nodes: Cluster) -> None:
    for shard in range(3):
        namespace = namespace_on(nodes, shard, "rw")
        with opened(url_of(nodes, namespace, node=(shard + 1) % 3)) as store:  # asked through another node
            assert migrations.migrate(store)  # schema steps, under the {graph}:migrations lease
            with store.write() as tx:
                tx.run("meta/set", name="shard", value=str(shard))
                tx.run("meta/set", name="namespace", value=namespace)
            assert store.query("meta/get", name="shard") == [{"value": str(shard)}]
            assert store.query("meta/get", name="namespace") == [{"value": namespace}]
        assert f"{PREFIX}:{namespace}" in on_node(nodes, shard)  # the graph whole on the shard of its slot


def test_the_writer_lease_and_request_keys_live_in_the_graphs_slot(nodes: Cluster) -> None:
    shard = 2
    namespace = namespace_on(nodes, shard, "lease")
    graph = f"{PREFIX}:{namespace}"
    with opened(url_of(nodes, namespace)) as first, opened(url_of(nodes, namespace, node=1)) as second:
        lease = first.writer_lease()
        assert lease.key == "{" + graph + "}:writer"
        assert nodes.keyslot(lease.key) == nodes.keyslot(graph)
        other = RedisLease(second.client.connection, second.writer_lease().key, wait_s=0.3)
        holder = nodes.nodes[shard].client()
        try:
            with lease.held():
                assert holder.get(lease.key) == lease.token  # on the graph's own node
                with pytest.raises(StoreError, match="held the store's writer lease"):
                    other.acquire()
            started = time.monotonic()
            with other.held():  # released: the other store takes it at once
                assert time.monotonic() - started < 1.0
            with first.held("request:r1"):
                assert holder.exists("{" + graph + "}:request:r1")
            with first.write() as tx:  # a scope takes the lease through the cluster client
                tx.run("meta/set", name="leased", value="yes")
            assert second.query("meta/get", name="leased") == [{"value": "yes"}]
            assert not holder.exists(lease.key)
        finally:
            holder.close()


def test_graphs_lists_every_primarys_graphs_from_any_node(nodes: Cluster) -> None:
    made = []
    for shard in range(3):
        namespace = namespace_on(nodes, shard, "list")
        made.append(f"{PREFIX}:{namespace}")
        with opened(url_of(nodes, namespace)) as store, store.write() as tx:
            tx.run("meta/set", name="here", value="1")
    listed = []
    for node in range(3):
        with opened(url_of(nodes, "list-reader", node=node)) as store:
            listed.append(store.graphs())
    assert set(made) <= set(listed[0])
    assert listed[0] == listed[1] == listed[2] == sorted(listed[0])
    assert all(on_node(nodes, shard) & set(made) == {made[shard]} for shard in range(3))


def test_a_backup_is_a_copy_in_the_graphs_slot_and_the_oldest_are_pruned(nodes: Cluster) -> None:
    shard = 1
    namespace = namespace_on(nodes, shard, "bak")
    graph = f"{PREFIX}:{namespace}"
    with opened(url_of(nodes, namespace)) as store:
        with store.write() as tx:
            tx.run("meta/set", name="kept", value="in the copy")
        names = []
        for i in range(KEEP_BACKUPS + 2):
            names.append(str(store.backup(f"test{i}")))
            time.sleep(0.002)  # each stamp its own millisecond
        assert all(n.startswith("{" + graph + "}.bak.") for n in names)
        assert nodes.keyslot(names[0]) == nodes.keyslot(graph)
        backups = sorted(g for g in store.graphs() if g.startswith("{" + graph + "}.bak."))
        assert backups == sorted(names[-KEEP_BACKUPS:])  # the oldest two are gone
        assert set(backups) <= on_node(nodes, shard)
        copy = store.client.select_graph(names[-1])
        assert copy.ro_query("MATCH (m:Meta {name: 'kept'}) RETURN m.value").result_set == [["in the copy"]]


def test_an_acknowledgement_waits_for_the_replica_of_the_graphs_shard(nodes: Cluster) -> None:
    """Shard 0 has a replica: a write there returns once the replica holds it, and with the replica paused
    it is one error line (a cluster does not replicate PUBLISH, so a PUBLISH + WAIT would count the paused
    replica). Shard 2 has none: a write there is committed and reported as one line naming its primary."""
    assert nodes.replica is not None
    ack = AckPolicy(replicas=1, timeout_ms=300)
    replicated = namespace_on(nodes, 0, "ack")
    with opened(url_of(nodes, replicated, node=2), ack=ack) as store:
        replica = nodes.replica.client()
        try:
            replica.execute_command("READONLY")  # a cluster replica answers reads of its primary's slots
            for i in range(5):
                with store.write() as tx:
                    tx.run("meta/set", name=f"n{i}", value="v")
                rows = replica.execute_command("GRAPH.RO_QUERY", f"{PREFIX}:{replicated}",
                                               f"MATCH (m:Meta {{name: 'n{i}'}}) RETURN m.value")
                assert rows[1] == [["v"]]  # read at once: WAIT returned after the copy
            os.kill(nodes.replica.process.pid, signal.SIGSTOP)
            try:
                with pytest.raises(StoreError, match="only 0 of the 1 replica"), store.write() as tx:
                    tx.run("meta/set", name="paused", value="v")
            finally:
                os.kill(nodes.replica.process.pid, signal.SIGCONT)
        finally:
            replica.close()
    alone = namespace_on(nodes, 2, "ack")
    with opened(url_of(nodes, alone), ack=ack) as store:
        with pytest.raises(StoreError) as err, store.write() as tx:
            tx.run("meta/set", name="unconfirmed", value="v")
        message = str(err.value)
        assert "\n" not in message and f"127.0.0.1:{nodes.nodes[2].port}" in message
        assert "only 0 of the 1 replica(s)" in message
        assert store.query("meta/get", name="unconfirmed") == [{"value": "v"}]  # committed, as it says


def test_doctor_reports_the_cluster_from_any_node(nodes: Cluster, tmp_path: Path) -> None:
    for node in range(3):
        facts = server_facts(parse_store_url(nodes.url(PREFIX, node)))
        assert facts["cluster"] == {"state": "ok", "primaries": 3, "fewest_replicas": 0}
        assert facts["role"] == "master" and facts["appendonly"] == "yes"
        assert "a node of a cluster of 3 primaries, cluster_state ok" in facts["where"]
        line = durability_line(facts)
        assert "cluster of 3 primaries (cluster_state ok), the fewest replicas of one: 0" in line
    with_replica = server_facts(parse_store_url(nodes.url(PREFIX, 0)))
    assert len(with_replica["replicas"]) == 1
    # the acknowledgement waits for each graph's own shard: the shard with the fewest replicas decides, even
    # asked through the node that has one
    from types import SimpleNamespace

    from keymem.cli.falkordb_doctor import problems_of

    found = problems_of(with_replica, SimpleNamespace(falkordb_ack_replicas=1))
    assert [p for p, _ in found] == ["KEYMEM_FALKORDB_ACK_REPLICAS=1 but a shard of the cluster has 0 replica(s) "
                                     "online: every write will be reported as not acknowledged"]
