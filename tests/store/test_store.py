"""The storage layer on a real Kuzu database: parameter guard, transactions, migrations, vectors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from keymem.errors import StoreError
from keymem.store import cypher, migrations
from keymem.store.db import Store
from keymem.store.vectors import KeyVectors
from tests.store.test_contract import _unit, assert_each_finds_itself_in_its_namespace


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "db" / "k.kuzu", buffer_pool_mb=64)
    migrations.migrate(s)
    yield s
    s.close()


def test_param_names_ignore_strings_and_comments() -> None:
    text = "MATCH (m:Memory) WHERE m.id = $id AND m.content = '$notaparam' // $nor_this\nRETURN m"
    assert cypher.param_names(text) == frozenset({"id"})


def _script(name: str) -> bool:
    return name.startswith(("schema/0", "vectors/create_table", "vectors/drop_table"))


@pytest.mark.parametrize("engine", cypher.ENGINES)
def test_every_shipped_statement_loads(engine: str) -> None:
    names = cypher.shared_names()
    assert len(names) > 40
    for name in names:
        if _script(name):
            assert cypher.load_script(name, engine, dim=4) or engine != "ladybug"  # a step may be comments only
        else:
            assert cypher.load(name, engine).text


_AS = re.compile(r"\bAS\s+(\w+)", re.I)


@pytest.mark.parametrize("engine", [e for e in cypher.ENGINES if e != cypher.DEFAULT_ENGINE])
def test_an_override_replaces_a_shared_statement_with_the_same_params_and_columns(engine: str) -> None:
    """An engine's file under cypher/engines/<engine>/ names a shared statement, binds the same $params
    and returns the same columns, so the layers above cannot tell which ran."""
    root = cypher.cypher_root() / cypher.OVERRIDES / engine
    overrides = [str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.cypher")]
    assert overrides
    shared = set(cypher.shared_names())
    for name in overrides:
        assert name in shared, f"{engine} override {name} overrides nothing"
        assert cypher.statement_path(name, engine).is_relative_to(root)
        if _script(name):
            continue
        mine, theirs = cypher.load(name, engine), cypher.load(name)
        assert mine.params == theirs.params, name
        assert mine.heavy == theirs.heavy, name
        columns = _AS.findall(theirs.text.split("RETURN")[-1])
        if columns:  # a CALL's columns are named by the engine (vectors/indexes)
            assert _AS.findall(mine.text.split("RETURN")[-1]) == columns, name


def test_a_duplicate_primary_key_inside_a_transaction_rolls_back(store: Store) -> None:
    """LadybugDB's primary keys (FalkorDB gets no unique constraints yet: tests/store/test_contract.py)."""
    with pytest.raises(RuntimeError), store.write() as tx:
        tx.run("memory/norm_create", id="x", memory_id="m1")
        tx.run("memory/norm_create", id="x", memory_id="m2")  # duplicate primary key
    assert store.query("memory/norm_get", id="x") == []


def test_second_process_cannot_open_a_held_store(store: Store, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from keymem.store.db import Store; from keymem.errors import StoreError\n"
        f"try:\n    Store(__import__('pathlib').Path({str(store.path)!r}))\n"
        "except StoreError as e:\n    print('REFUSED', e); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "held by another process" in proc.stdout or "cannot be opened" in proc.stdout


def test_backup_is_a_consistent_copy(store: Store, tmp_path: Path) -> None:
    with store.write() as tx:
        tx.run("meta/set", name="k", value="v")
    dest = store.backup("test")
    assert dest.exists() and dest.stat().st_mode & 0o777 == 0o600
    copy = Store(dest, buffer_pool_mb=64)
    try:
        assert copy.query("meta/get", name="k") == [{"value": "v"}]
    finally:
        copy.close()


def _needs_hnsw(store: Store) -> None:
    from keymem.store.vectors import vector_extension

    why = vector_extension(store)
    if why:  # the VECTOR extension downloads from the engine's server; CI machines are offline
        pytest.skip(f"the VECTOR extension is not installed here: {why}")


@pytest.mark.parametrize("index_min_keys", [10_000, 1], ids=["exact-numpy", "hnsw"])
def test_vector_search_paths_agree(store: Store, index_min_keys: int) -> None:
    if index_min_keys == 1:
        _needs_hnsw(store)
    rng = np.random.default_rng(7)
    vecs = KeyVectors(store, 16, index_min_keys=index_min_keys)
    vecs.create_table()
    data = {f"k_{i:08x}": _unit(rng, 16) for i in range(60)}
    with store.write() as tx:
        for i, (kid, v) in enumerate(data.items()):
            vecs.insert(tx, kid, "a" if i % 2 == 0 else "b", v)
    vecs.load()
    assert vecs.indexed is (index_min_keys == 1)
    assert_each_finds_itself_in_its_namespace(vecs, data)
    # delete then reinsert (an indexed vector cannot be SET)
    first = next(iter(data))
    with store.write() as tx:
        vecs.delete(tx, first, "a")
    assert first not in [h[0] for h in vecs.search(data[first], "a", 5)]
    with store.write() as tx:
        vecs.insert(tx, first, "a", data[first])
    assert vecs.search(data[first], "a", 1)[0][0] == first


def test_exact_scan_serves_past_the_threshold_without_the_extension(store: Store) -> None:
    # Offline, the VECTOR extension cannot be installed: past the crossover the exact scan keeps serving.
    from keymem.store.vectors import vector_extension

    if vector_extension(store) is None:
        pytest.skip("the VECTOR extension is installed here")
    rng = np.random.default_rng(5)
    vecs = KeyVectors(store, 8, index_min_keys=5)
    vecs.create_table()
    data = {f"k_{i:08x}": _unit(rng, 8) for i in range(20)}
    with store.write() as tx:
        for kid, v in data.items():
            vecs.insert(tx, kid, "a", v)
    vecs.load()
    assert not vecs.indexed and vecs.extension_missing
    assert "exact scan" in vecs.path and "keymem extensions download" in vecs.path
    for kid, v in data.items():
        assert vecs.search(v, "a", 1)[0][0] == kid
    vecs.maybe_switch()
    assert not vecs.indexed


def test_indexed_table_never_empties(store: Store) -> None:
    _needs_hnsw(store)
    rng = np.random.default_rng(1)
    vecs = KeyVectors(store, 8, index_min_keys=1)
    vecs.create_table()
    v = _unit(rng, 8)
    with store.write() as tx:
        vecs.insert(tx, "k_00000001", "a", v)
    vecs.load()
    with store.write() as tx:
        vecs.delete(tx, "k_00000001", "a")
    assert vecs.search(v, "a", 5) == []
    assert store.raw("MATCH (v:KeyVec) RETURN count(v) AS n")[0]["n"] == 1  # the sentinel stays
    with store.write() as tx:
        vecs.insert(tx, "k_00000002", "a", v)
    assert vecs.search(v, "a", 1)[0][0] == "k_00000002"


def test_read_only_store_refuses_writes(store: Store, tmp_path: Path) -> None:
    path = store.path
    store.close()
    ro = Store(path, buffer_pool_mb=64, read_only=True)
    try:
        with pytest.raises(StoreError, match="read-only"), ro.write():
            pass
    finally:
        ro.close()


def test_store_files_stay_owner_only(tmp_path: Path) -> None:
    s = Store(tmp_path / "db" / "k.kuzu", buffer_pool_mb=64)
    try:
        migrations.migrate(s)
        with s.write() as tx:  # the engine creates its WAL only now
            tx.run("meta/set", name="x", value="y")
        files = [p for p in (tmp_path / "db").iterdir() if p.is_file()]
        assert files and all(p.stat().st_mode & 0o077 == 0 for p in files), [oct(p.stat().st_mode) for p in files]
        assert (tmp_path / "db").stat().st_mode & 0o777 == 0o700
    finally:
        s.close()


def test_backups_are_pruned_to_the_newest(store: Store) -> None:
    from keymem.store.db import KEEP_BACKUPS

    made = [store.backup(f"r{i}") for i in range(KEEP_BACKUPS + 3)]
    left = sorted(p.name for p in made[0].parent.iterdir())
    assert left == sorted(p.name for p in made[-KEEP_BACKUPS:])


def test_loaded_key_cache_keeps_little_spare_room(store: Store) -> None:
    # A load streams rows into blocks grown by doubling, then trims them; later writes grow by a quarter.
    from keymem.store.vectors import HEADROOM

    rng = np.random.default_rng(3)
    vecs = KeyVectors(store, 8, index_min_keys=10_000)
    vecs.create_table()
    data = {f"k_{i:08x}": _unit(rng, 8) for i in range(1000)}
    with store.write() as tx:
        for kid, v in data.items():
            vecs.insert(tx, kid, "a", v)
    vecs.load()
    block = vecs._blocks["a"]
    assert len(block.ids) == 1000
    assert block.mat.shape[0] == 1000 + int(1000 * HEADROOM)
    more = {f"k_{i:08x}": _unit(rng, 8) for i in range(1000, 1200)}
    with store.write() as tx:
        for kid, v in more.items():
            vecs.insert(tx, kid, "a", v)
    assert len(block.ids) == 1200 and block.mat.shape[0] < 1200 * 1.3
    for kid in ("k_00000000", "k_000004af"):
        v = {**data, **more}[kid]
        assert vecs.search(v, "a", 1)[0][0] == kid
