"""A graph per namespace on FalkorDB (KEYMEM_FALKORDB_GRAPHS=namespace): each namespace in its own graph
``<prefix>:<namespace>``, calls routed by namespace or by id, and two daemons' worth of graphs on one server
seeing each other's namespaces. Real FalkorDB server (tests/conftest_engines.py), real MiniLM."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.errors import InvalidInput, NotFound, StoreError
from keymem.memory.namespace_graphs import NamespaceGraphs, namespace_graph_names, open_memory
from keymem.settings import Settings, load_settings
from tests.conftest_engines import FalkorServer, drop_graphs

pytestmark = pytest.mark.timeout(120)


def _settings(root: Path, minilm_dir: Path, url: str, graphs: str = "namespace") -> Settings:
    return load_settings({}, data_dir=root, store_url=url, falkordb_graphs=graphs, embedding_backend="local",
                         local_embedding_model="minilm-l6-v2", local_embedding_model_path=minilm_dir,
                         rerank=False, embed_threads=1)


@pytest.fixture
def prefix(falkordb_server: FalkorServer) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    drop_graphs(falkordb_server, name)


def _open(root: Path, minilm_dir: Path, embedder: Any, url: str, graphs: str = "namespace") -> Any:
    return open_memory(_settings(root, minilm_dir, url, graphs), embedder=embedder, reranker=None, progress=False)


def test_each_namespace_is_its_own_graph_and_calls_find_theirs(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any, falkordb_server: FalkorServer, prefix: str) -> None:
    g = _open(tmp_path, minilm_dir, minilm_embedder, falkordb_server.url(prefix))
    try:
        assert isinstance(g, NamespaceGraphs)
        home = g.remember(content="The user's cat is called Miso", keys=["cat", "Miso"])
        work = g.remember(content="The deploy pipeline runs on Fridays", keys=["deploy", "pipeline"], namespace="work")
        assert namespace_graph_names(falkordb_server.graphs(), prefix) == ["default", "work"]
        assert prefix not in falkordb_server.graphs()  # no graph for the whole store

        # namespaces never mix: a recall reads its namespace's graph alone
        assert g.recall(query="deploy pipeline").dump()["memory"] is None
        assert g.recall(query="deploy pipeline", namespace="work").dump()["memory"]["memory_id"] == work.memory_id

        # a call by id with no namespace finds the graph that holds the id; a wrong namespace does not
        assert g.read_memory(memory_id=work.memory_id).dump()["namespace"] == "work"
        assert g.read_key(key_id=work.keys[0].key_id).dump()["total"] == 1
        with pytest.raises(NotFound):
            g.read_memory(memory_id=work.memory_id, namespace="default")
        with pytest.raises(NotFound, match="m_0123456789abcdef"):
            g.read_memory(memory_id="m_0123456789abcdef")
        g.forget(memory_id=home.memory_id)
        with pytest.raises(NotFound):
            g.read_memory(memory_id=home.memory_id)
        assert g.counts()["memories"] == 1
        # a read in a namespace nothing was stored in answers as one graph would, and makes no graph
        assert g.recall(query="deploy pipeline", namespace="elsewhere").dump()["memory"] is None
        assert g.browse_keys(namespace="elsewhere").dump()["total"] == 0
        assert namespace_graph_names(falkordb_server.graphs(), prefix) == ["default", "work"]
    finally:
        g.close()


def test_a_batch_writes_one_namespace_and_a_mixed_one_writes_nothing(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any, falkordb_server: FalkorServer, prefix: str) -> None:
    g = _open(tmp_path, minilm_dir, minilm_embedder, falkordb_server.url(prefix))
    try:
        with pytest.raises(InvalidInput, match="one batch writes one namespace; the items name default, work"):
            g.remember_batch([{"content": "Tea at four", "keys": ["tea"]},
                              {"content": "Standup at nine", "keys": ["standup"], "namespace": "work"}])
        assert g.counts()["memories"] == 0
        assert namespace_graph_names(falkordb_server.graphs(), prefix) == ["default"]
        done = g.remember_batch([{"content": "Standup at nine", "keys": ["standup"], "namespace": "work"},
                                 {"content": "Retro on Thursdays", "keys": ["retro"], "namespace": "work"}])
        assert len(done.results) == 2
        assert g.recall(query="standup", namespace="work").dump()["memory"]["content"] == "Standup at nine"
    finally:
        g.close()


def test_another_daemon_finds_a_namespace_created_after_it_opened(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any, falkordb_server: FalkorServer, prefix: str) -> None:
    url = falkordb_server.url(prefix)
    a = _open(tmp_path / "a", minilm_dir, minilm_embedder, url)
    b = _open(tmp_path / "b", minilm_dir, minilm_embedder, url)
    try:
        made = a.remember(content="Invoices are due on the 5th", keys=["invoices"], namespace="finance")
        assert b.read_memory(memory_id=made.memory_id).dump()["content"] == "Invoices are due on the 5th"
        assert b.recall(query="invoices", namespace="finance").dump()["memory"]["memory_id"] == made.memory_id
        later = a.remember(content="Payroll runs on the 25th", keys=["payroll"], namespace="finance")
        assert b.recall(query="payroll", namespace="finance").dump()["memory"]["memory_id"] == later.memory_id
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("first, then", [("one", "namespace"), ("namespace", "one")])
def test_a_store_of_one_layout_is_not_opened_under_the_other(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any, falkordb_server: FalkorServer, prefix: str,
        first: str, then: str) -> None:
    url = falkordb_server.url(prefix)
    g = _open(tmp_path / "first", minilm_dir, minilm_embedder, url, first)
    try:
        g.remember(content="Kept in the first layout", keys=["layout"], namespace="work")
    finally:
        g.close()
    with pytest.raises(StoreError, match=f"KEYMEM_FALKORDB_GRAPHS={then}"):
        _open(tmp_path / "then", minilm_dir, minilm_embedder, url, then)


def test_namespaces_spread_over_a_3_node_redis_cluster(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any) -> None:
    """Each namespace's graph lives whole on the shard its name hashes to; any node's URL serves them all,
    and the export of every namespace reads every shard."""
    from keymem.cli.ops import export
    from tests.store.falkor_cluster import cluster

    with cluster(tmp_path / "cluster") as nodes:
        spread = {}  # shard -> a namespace whose graph "keymem:<ns>" it holds
        for n in range(200):
            spread.setdefault(nodes.shard_of(f"keymem:team{n}"), f"team{n}")
            if len(spread) == 3:
                break
        assert len(spread) == 3
        g = _open(tmp_path / "a", minilm_dir, minilm_embedder, nodes.url("keymem", 0))
        made = {}
        try:
            for _, namespace in sorted(spread.items()):
                made[namespace] = g.remember(content=f"The {namespace} on-call rota changes on Mondays",
                                             keys=["on-call rota", namespace], namespace=namespace).memory_id
            for shard, namespace in spread.items():
                client = nodes.nodes[shard].client()
                try:
                    held = {x.decode() if isinstance(x, bytes) else x for x in client.execute_command("GRAPH.LIST")}
                finally:
                    client.close()
                assert f"keymem:{namespace}" in held
            lines = export(g, {})["lines"]
            assert sum('"type": "memory"' in line for line in lines) == 3
        finally:
            g.close()
        other = _open(tmp_path / "b", minilm_dir, minilm_embedder, nodes.url("keymem", 2))
        try:
            for namespace, memory_id in made.items():
                assert other.read_memory(memory_id=memory_id).dump()["namespace"] == namespace
                found = other.recall(query="on-call rota", namespace=namespace).dump()["memory"]
                assert found["memory_id"] == memory_id
        finally:
            other.close()
