"""The store contract, on every engine (tests/conftest_engines.py): the same statements, parameters,
write scopes and vector search, whichever engine ``KEYMEM_STORE_URL`` selects."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from keymem.errors import StoreError
from keymem.settings import load_settings
from keymem.store import migrations
from keymem.store.cypher import QueryParamError
from keymem.store.db import Store
from keymem.store.factory import open_store
from keymem.store.vectors import SENTINEL, KeyVectors
from tests.conftest_engines import ENGINES, engine_url


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    yield from engine_url(request)


@pytest.fixture
def store(tmp_path: Path, store_url: str | None) -> Iterator[Store]:
    s = open_store(load_settings({}, data_dir=tmp_path / "db", store_url=store_url, buffer_pool_mb=64))
    migrations.migrate(s)
    yield s
    s.close()


def test_unbound_parameter_is_refused_before_the_engine(store: Store) -> None:
    with store.write() as tx:
        tx.run("meta/set", name="a", value="1")
        tx.run("meta/set", name="b", value="2")
    # Kuzu itself would run "WHERE m.name = $name" with $name unbound and match every row.
    with pytest.raises(QueryParamError, match=r"missing \$name"):
        store.query("meta/get")
    with pytest.raises(QueryParamError, match=r"unexpected \$extra"):
        store.query("meta/get", name="a", extra=1)
    assert len(store.query("meta/all")) == 5  # a, b, the schema's walk_copies ("filled"), engine, storage_version


def test_write_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.run("meta/set", name="half", value="written")
        raise RuntimeError("crash in the middle")
    assert store.query("meta/get", name="half") == []
    with store.write() as tx:  # the writer is usable again
        tx.run("meta/set", name="whole", value="ok")
    assert store.query("meta/get", name="whole") == [{"value": "ok"}]


def test_an_engine_error_inside_a_transaction_rolls_back(store: Store) -> None:
    with pytest.raises((RuntimeError, StoreError)), store.write() as tx:
        tx.run("memory/norm_create", id="x", memory_id="m1")
        tx.raw("MATCH (n:MemoryNorm) RETURN n.id AS")  # refused by the engine
    assert store.query("memory/norm_get", id="x") == []


def test_a_statement_the_engine_refuses_writes_nothing(store: Store) -> None:
    """One statement is all-or-nothing on every engine (FalkorDB undoes a statement failing at run time)."""
    with store.write() as tx:
        tx.run("meta/set", name="kept", value="1")
    with pytest.raises((RuntimeError, StoreError)), store.write() as tx:
        tx.raw("CREATE (:Meta {name: 'half', value: '1'}) WITH 1 AS one UNWIND [1, 0] AS d RETURN one / d AS x")
    assert store.query("meta/get", name="half") == []
    assert store.query("meta/get", name="kept") == [{"value": "1"}]


def graph_contents(store: Store) -> list[Any]:
    """Every node and edge with all its properties (and on FalkorDB its internal id), sorted."""
    if store.capabilities.engine == "falkordb":
        nodes = store.raw("MATCH (n) RETURN id(n) AS id, labels(n) AS labels, properties(n) AS props")
        edges = store.raw("MATCH (a)-[r]->(b) RETURN id(r) AS id, type(r) AS type, id(a) AS a, id(b) AS b, "
                          "properties(r) AS props")
    else:
        from keymem.store.falkordb import schema_names

        labels, types = schema_names()
        nodes = [r for label in labels if label != "KeyVec" for r in store.raw(f"MATCH (n:{label}) RETURN n")]
        edges = [r for kind in types for r in store.raw(f"MATCH (a)-[r:{kind}]->(b) RETURN a.id AS a, r, b.id AS b")]
    return sorted(repr(sorted(r.items())) for r in [*nodes, *edges])


def _fill(store: Store) -> None:
    with store.write() as tx:
        tx.run("key/create", id="k1", namespace="ns", text="river", norm="river", key_type="concept", now=1.0)
        tx.run("key/name_create", id="ns\x1friver", key_id="k1")
        tx.run("memory/create", id="m1", namespace="ns", content="the river", norm="the river", now=1.0, depth=0.0,
               decay_profile="standard", ttl_seconds=None, expires_at=None, supersedes=None, source=None, terms="river")
        tx.run("memory/link_keys", key_ids=["k1"], memory_id="m1", weight=1.0, now=1.0)
        tx.run("meta/set", name="kept", value="1")


def _several_writes(tx: Any) -> None:
    tx.run("meta/set", name="kept", value="changed")
    tx.run("key/create", id="k2", namespace="ns", text="boat", norm="boat", key_type="concept", now=2.0)
    tx.run("memory/create", id="m2", namespace="ns", content="a boat", norm="a boat", now=2.0, depth=0.0,
           decay_profile="standard", ttl_seconds=None, expires_at=None, supersedes=None, source=None, terms="boat")
    tx.run("memory/link_keys", key_ids=["k1", "k2"], memory_id="m2", weight=1.0, now=2.0)
    tx.run("link/set", key_id="k1", memory_id="m1", weight=2.5)
    tx.run("memory/norm_delete", memory_id="m1")


def test_a_scope_failing_after_several_writes_leaves_the_graph_exactly_as_before(store: Store) -> None:
    """Whatever fails (the body, a before_commit callable, the engine at the scope's last statement), the
    graph holds every node, edge and property it held before, on every engine."""
    _fill(store)
    before = graph_contents(store)
    assert [r["weight"] for r in store.query("memory/keys", id="m1")] == [1.0]
    with pytest.raises(ValueError), store.write() as tx:
        _several_writes(tx)
        raise ValueError("the body fails after six writes")
    assert graph_contents(store) == before

    def record(tx: Any) -> None:
        tx.run("request/record", id="r1", digest="d", result="{}", at=2.0)
        raise ValueError("the change record fails")

    with pytest.raises(ValueError), store.write() as tx:
        _several_writes(tx)
        tx.before_commit(record)
    assert graph_contents(store) == before
    with pytest.raises((RuntimeError, StoreError)), store.write() as tx:
        _several_writes(tx)
        tx.raw("MATCH (m:Meta) WHERE m.name = 'kept' SET m.value = 'x' WITH m UNWIND [1, 0] AS d RETURN 1 / d AS x")
    assert graph_contents(store) == before
    with store.write() as tx:  # the same writes commit whole
        _several_writes(tx)
    after = graph_contents(store)
    assert after != before and store.query("meta/get", name="kept") == [{"value": "changed"}]
    assert len(store.query("memory/keys", id="m2")) == 2 and store.query("memory/norm_get", id="the river") == []


def test_a_writes_rows_arrive_when_its_scope_commits(store: Store) -> None:
    """A write's rows are read after its scope. Inside it, an engine that defers writes refuses to hand
    them out, and its reads see the store as it was before the scope (LadybugDB's see the scope's writes)."""
    with store.write() as tx:
        for i in range(3):
            tx.run("request/record", id=f"r{i}", digest="d", result="{}", at=float(i))
    with store.write() as tx:
        expired = tx.run("request/expire", before=1.5)
        seen = tx.run("request/count")[0]["n"]
        if store.capabilities.deferred_writes:
            with pytest.raises(RuntimeError, match="rows of request/expire are read inside their write scope"):
                len(expired)
    assert expired[0]["n"] == 2 and expired == [{"n": 2}]
    assert seen == (3 if store.capabilities.deferred_writes else 1)
    assert store.query("request/count") == [{"n": 1}]


def test_a_scope_that_creates_the_first_nodes_of_a_label_links_them(tmp_path: Path, store_url: str | None) -> None:
    """A fresh store's first scope creates keys and a memory and links them: FalkorDB plans a query's
    matches on the labels the graph already holds, so the store registers them first."""
    s = open_store(load_settings({}, data_dir=tmp_path / "fresh", store_url=store_url, buffer_pool_mb=64))
    try:
        migrations.migrate(s)
        with s.write() as tx:
            _several_writes(tx)
            tx.run("link/set", key_id="k2", memory_id="m2", weight=2.0)  # matches the edge made just before
        linked = s.query("memory/keys", id="m2")
        assert [(r["key_id"], r["weight"]) for r in linked] == [("k2", 2.0)]  # k1 does not exist here
        assert s.query("meta/get", name="kept") == [{"value": "changed"}]
    finally:
        s.close()


@pytest.mark.parametrize("group", [100, 3])
def test_a_large_scope_commits_whole_with_each_writes_rows(store: Store, monkeypatch: pytest.MonkeyPatch,
                                                           group: int) -> None:
    """A scope of 3000 statements (a batch of a few hundred memories) whose returning writes are read after
    it; on FalkorDB its subqueries are nested (by 100, and by 3 to nest several levels deep)."""
    from keymem.store import compose

    monkeypatch.setattr(compose, "GROUP", group)
    size = 1500 if group == 100 else 150
    expired = []
    with store.write() as tx:
        for i in range(size):
            tx.run("meta/set", name=f"m{i}", value=str(i))
            if i % 10 == 0:
                expired.append(tx.run("request/expire", before=float(i)))
            tx.run("request/record", id=f"r{i}", digest="d", result="{}", at=float(i))
    assert [rows[0]["n"] for rows in expired] == [0] + [10] * (size // 10 - 1)
    assert store.query("request/count") == [{"n": 10}]
    assert len([r for r in store.query("meta/all") if r["name"].startswith("m")]) == size


def test_a_bulk_scope_larger_than_one_query(store: Store) -> None:
    """A bulk scope (import, re-embedding) of more statements than one query takes writes them all."""
    from keymem.store import falkordb

    n = falkordb.BULK_STATEMENTS * 2 + 7
    with store.write(bulk=True) as tx:
        for i in range(n):
            tx.run("meta/set", name=f"bulk{i}", value=str(i))
    rows = {r["name"]: r["value"] for r in store.query("meta/all")}
    assert all(rows[f"bulk{i}"] == str(i) for i in range(n))


def test_after_commit_runs_only_on_commit(store: Store) -> None:
    seen: list[str] = []
    with store.write() as tx:
        tx.after_commit(lambda: seen.append("committed"))
    with pytest.raises(ValueError), store.write() as tx:
        tx.after_commit(lambda: seen.append("rolled back"))
        raise ValueError
    assert seen == ["committed"]


def test_migrations_recorded_and_idempotent(store: Store) -> None:
    names = migrations.applied(store)
    assert names == migrations.available()[1:] and names[0] == "001_init"
    assert migrations.migrate(store) == []
    assert migrations.applied(store) == names


def test_values_come_back_as_written(store: Store) -> None:
    """Text with separators, quotes, newlines and Hangul, nulls, booleans, floats and integers survive
    the engine (FalkorDB's client sends parameters as text)."""
    text = 'ns\x1fa "quoted" \'single\' back\\slash\nnew line\ttab 한국어'
    with store.write() as tx:
        tx.run("memory/create", id="m1", namespace="ns", content=text, norm="n", now=1_800_000_000.25, depth=0.5,
               decay_profile="standard", ttl_seconds=None, expires_at=None, supersedes=None, source=None,
               terms="a\x1fb")
    m = store.query("memory/get", id="m1")[0]["m"]
    assert m["content"] == text and m["terms"] == "a\x1fb"
    assert m["active"] is True and m["has_related"] is False
    assert m["access_count"] == 0 and isinstance(m["access_count"], int)
    assert m["created_at"] == pytest.approx(1_800_000_000.25, abs=1e-3) and m["depth"] == 0.5
    assert m["expires_at"] is None and m["evidence"] is None  # unset properties read as None on every engine


def test_whole_table_pages_cover_every_row_once(store: Store) -> None:
    """``offset_ranges`` pages (node offsets on LadybugDB, node ids on FalkorDB) cover every row once,
    across the holes deletes leave."""
    with store.write() as tx:
        for i in range(30):
            tx.run("key/create", id=f"k{i:02d}", namespace="ns", text=f"t{i}", norm=f"t{i}", key_type="concept",
                   now=1.0)
    with store.write() as tx:
        for i in range(0, 30, 3):
            tx.run("key/delete", id=f"k{i:02d}")
    seen: list[str] = []
    for lo, hi in store.offset_ranges("key/offset_end", page=4):
        for row in store.query("mirror/keys_range", lo=lo, hi=hi):
            seen.extend(row["ids"] or [])
    assert sorted(seen) == [f"k{i:02d}" for i in range(30) if i % 3]


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_exact_vector_search_on_every_engine(store: Store) -> None:
    rng = np.random.default_rng(7)
    vecs = KeyVectors(store, 16, index_min_keys=10_000)
    vecs.create_table()
    data = {f"k_{i:08x}": _unit(rng, 16) for i in range(60)}
    with store.write() as tx:
        for i, (kid, v) in enumerate(data.items()):
            vecs.insert(tx, kid, "a" if i % 2 == 0 else "b", v)
    vecs.load()  # the cache comes back from the engine, not from the inserts
    assert not vecs.indexed and len(vecs) == 60 and "exact scan" in vecs.path
    got = vecs.get(list(data)[:3])
    for kid in list(data)[:3]:
        assert np.allclose(got[kid], data[kid], atol=1e-6)  # stored as 32-bit floats on both engines
    assert_each_finds_itself_in_its_namespace(vecs, data)
    first = next(iter(data))
    with store.write() as tx:
        vecs.delete(tx, first, "a")
    vecs.load()
    assert first not in [h[0] for h in vecs.search(data[first], "a", 5)] and len(vecs) == 59


def test_a_bad_store_url_is_one_line(tmp_path: Path) -> None:
    from keymem.settings import SettingsError

    for url, why in [("redis://h:1", "must start with falkordb://"), ("falkordb://h", "names no port"),
                     ("falkordb://:secret@h:1/a b", "prefix"), ("falkordb://h:99999", "not a URL")]:
        with pytest.raises(SettingsError) as err:
            load_settings({"KEYMEM_STORE_URL": url})
        message = str(err.value)
        assert message.startswith("KEYMEM_STORE_URL ") and why in message and "\n" not in message, message
        assert "secret" not in message


@pytest.mark.parametrize("server", ["closed", "silent", "http", "plain redis"])
def test_an_unreachable_server_is_one_line_within_two_seconds(tmp_path: Path, server: str) -> None:
    """Nothing listening, a port that accepts and never answers, a server speaking another protocol and
    a Redis without the FalkorDB module: each is one line, in under 2.5 s, never showing the password."""
    import socket
    import threading

    from tests.conftest_engines import free_port, start_falkordb, stop_falkordb

    listener = socket.socket()
    plain = None
    if server == "plain redis":
        plain = start_falkordb(tmp_path / "plain", module=False)
        port = plain.port
    elif server == "closed":
        port = free_port()
    else:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        if server == "http":
            def answer() -> None:
                conn, _ = listener.accept()
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                conn.close()

            threading.Thread(target=answer, daemon=True).start()
    user = "" if plain else "user:secret@"  # a server without ACL users refuses any user (its own line)
    settings = load_settings({}, data_dir=tmp_path, store_url=f"falkordb://{user}127.0.0.1:{port}/k")
    started = time.monotonic()
    try:
        with pytest.raises(StoreError) as err:
            open_store(settings)
        assert time.monotonic() - started < 2.5
    finally:
        listener.close()
        if plain is not None:
            stop_falkordb(plain)
    message = str(err.value)
    assert str(port) in message and "\n" not in message and "secret" not in message, message
    assert {"closed": "is unreachable", "silent": "is unreachable", "http": "did not answer as a FalkorDB server",
            "plain redis": "no FalkorDB module"}[server] in message, message


def assert_each_finds_itself_in_its_namespace(vecs: Any, data: dict[str, np.ndarray]) -> None:
    """The first ten vectors (inserted alternately into namespaces "a" and "b") each find
    themselves first, at cosine 1, in their own namespace and never in the other."""
    for kid, v in list(data.items())[:10]:
        ns = "a" if list(data).index(kid) % 2 == 0 else "b"
        hits = vecs.search(v, ns, 3)
        assert hits[0][0] == kid and hits[0][1] == pytest.approx(1.0, abs=1e-4)
        assert all(h[0] != SENTINEL for h in hits)
        other = "b" if ns == "a" else "a"
        assert kid not in [h[0] for h in vecs.search(v, other, 10)]  # namespaces never mix
