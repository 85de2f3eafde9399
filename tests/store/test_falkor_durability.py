"""FalkorDB durability on real processes: the Sentinel URL, writes acknowledged by replicas
(KEYMEM_FALKORDB_ACK_REPLICAS), a write the replicas do not confirm, and a primary killed with -9
after acknowledged writes, failed over by a Sentinel, with every acknowledged write on the new primary.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from keymem.engine_url import StoreURLError, parse_store_url
from keymem.errors import StoreError
from keymem.settings import SettingsError, load_settings
from keymem.store.factory import open_store
from keymem.store.falkor_connect import server_facts
from tests.conftest_engines import free_port
from tests.store.falkor_replicas import MASTER, replicated, wait_for_primary, wait_replicas_online


def test_the_sentinel_url_names_its_sentinels_master_and_prefix() -> None:
    url = parse_store_url("falkordb+sentinel://app:s3cret@10.0.0.1:26379,[::1]:26380,sent.example:26381/mymaster/team")
    assert url.sentinels == (("10.0.0.1", 26379), ("::1", 26380), ("sent.example", 26381))
    assert (url.master, url.prefix, url.username, url.password) == ("mymaster", "team", "app", "s3cret")
    assert url.shown() == "falkordb+sentinel://app:***@10.0.0.1:26379,[::1]:26380,sent.example:26381/mymaster/team"
    assert parse_store_url("falkordb+sentinel://h:1/m").prefix == "keymem"
    assert not parse_store_url("falkordb://h:1/p").via_sentinel


@pytest.mark.parametrize(("url", "why"), [
    ("falkordb+sentinel://:secret@h:1", "names no master"),
    ("falkordb+sentinel://:secret@h/m", "not host:port"),
    ("falkordb+sentinel://:secret@h:1,h2/m", "not host:port"),
    ("falkordb+sentinel://:secret@h:99999/m", "not host:port"),
    ("falkordb+sentinel://:secret@h:1/m/p/q", "more than a master name and a prefix"),
    ("falkordb+sentinel://:secret@h:1/m a", "master name"),
    ("falkordb+sentinel://:secret@h:1/m/p?x=1", "takes no ?query"),
])
def test_a_bad_sentinel_url_is_one_line_without_the_password(url: str, why: str) -> None:
    with pytest.raises(StoreURLError) as err:
        parse_store_url(url)
    assert why in str(err.value) and "secret" not in str(err.value)
    with pytest.raises(SettingsError) as settings_err:
        load_settings({"KEYMEM_STORE_URL": url})
    message = str(settings_err.value)
    assert message.startswith("KEYMEM_STORE_URL ") and "\n" not in message and "secret" not in message


def _settings(tmp_path: Path, url: str, **extra: Any) -> Any:
    return load_settings({}, data_dir=tmp_path / "data", store_url=url, **extra)


def _on_replica(replica: Any, graph: str, name: str) -> bool:
    rows = replica.client().execute_command("GRAPH.RO_QUERY", graph, f"MATCH (m:Meta {{name: '{name}'}}) RETURN m.value")
    return bool(rows[1])


def test_an_acknowledged_write_is_on_the_replica_and_an_unconfirmed_one_is_an_error(tmp_path: Path) -> None:
    """With KEYMEM_FALKORDB_ACK_REPLICAS=1 each write returns only once the replica holds it; with the
    replica paused, the write is committed on the primary and reported as one error line saying so."""
    with replicated(tmp_path / "servers") as (primary, (replica,), _):
        settings = _settings(tmp_path, f"falkordb://127.0.0.1:{primary.port}/acks", falkordb_ack_replicas=1,
                             falkordb_ack_timeout_ms=300)
        store = open_store(settings)
        try:
            for i in range(20):
                with store.write() as tx:
                    tx.run("meta/set", name=f"n{i}", value="v")
                assert _on_replica(replica, "acks", f"n{i}")  # read at once: WAIT returned after the copy
            os.kill(replica.process.pid, signal.SIGSTOP)
            started = time.monotonic()
            try:
                with pytest.raises(StoreError) as err, store.write() as tx:
                    tx.run("meta/set", name="unconfirmed", value="v")
            finally:
                os.kill(replica.process.pid, signal.SIGCONT)
            assert 0.25 < time.monotonic() - started < 2.0
            message = str(err.value)
            assert "committed on the primary of falkordb://127.0.0.1:" in message and "\n" not in message
            assert "only 0 of the 1 replica(s)" in message and "300 ms" in message, message
            assert store.query("meta/get", name="unconfirmed")  # committed on the primary, as the line says
        finally:
            store.close()


def test_without_acknowledgement_a_paused_replica_does_not_hold_writes_back(tmp_path: Path) -> None:
    with replicated(tmp_path / "servers") as (primary, (replica,), _):
        store = open_store(_settings(tmp_path, f"falkordb://127.0.0.1:{primary.port}/acks"))
        os.kill(replica.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with store.write() as tx:
                tx.run("meta/set", name="quick", value="v")
            assert time.monotonic() - started < 0.5  # the acknowledgement's default timeout is 1 s
        finally:
            os.kill(replica.process.pid, signal.SIGCONT)
            store.close()


def test_a_primary_killed_after_acknowledged_writes_fails_over_and_keeps_them(
        tmp_path: Path, minilm_dir: Path, minilm_embedder: Any) -> None:
    """kill -9 of the primary after writes acknowledged by a replica; the Sentinel promotes a replica and
    points the other at it; the open graph writes on the new primary through the same Sentinel URL (and
    that write is acknowledged by the remaining replica), and a graph reopened on it finds every
    acknowledged memory."""
    from keymem.memory.graph import MemoryGraph

    with replicated(tmp_path / "servers", replicas=2, sentinel=True) as (primary, _, sentinel):
        assert sentinel is not None
        down = free_port()  # a Sentinel that is down comes first: the client asks the next one
        url = f"falkordb+sentinel://127.0.0.1:{down},127.0.0.1:{sentinel.port}/{MASTER}/failover"
        settings = _settings(tmp_path, url, falkordb_ack_replicas=1, falkordb_ack_timeout_ms=2000,
                             embedding_backend="local", local_embedding_model="minilm-l6-v2",
                             local_embedding_model_path=minilm_dir, rerank=False, embed_threads=1)
        graph = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
        acknowledged: dict[str, str] = {}
        try:
            for i in range(12):
                content = f"Deployment note {i}: service {i} moved to rack {i * 7 % 11}"
                acknowledged[graph.remember(content=content, keys=[f"service {i}", "deployment"]).memory_id] = content
            primary.kill9()
            # the failover itself must happen (each wait raises past its timeout); how long it takes is
            # reported by bench/falkor_durability.py, not bounded here, as it depends on the machine's load
            host, port = wait_for_primary(sentinel, not_port=primary.port, timeout=60.0)
            wait_replicas_online(port, 1)  # the Sentinel points the other replica at the new primary
            after = graph.remember(content="Written after the failover, on the promoted replica", keys=["failover"])
            acknowledged[after.memory_id] = "Written after the failover, on the promoted replica"
        finally:
            graph.close()
        reopened = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
        try:
            assert server_facts(parse_store_url(url))["primary"] == f"{host}:{port}"  # the promoted replica
            for memory_id, content in acknowledged.items():
                assert reopened.read_memory(memory_id=memory_id).content == content
        finally:
            reopened.close()
