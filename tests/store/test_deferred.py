"""Deferred writes on FalkorDB: which statements are queued, and how a scope's queue becomes one query."""

from __future__ import annotations

import uuid

import pytest

from keymem.store import cypher
from keymem.store.compose import Queued, compose, is_schema_change, returned_columns
from keymem.store.executor import PendingRows
from tests.conftest_engines import FalkorServer, drop_graphs

WRITE_OPERATIONS = {"Create", "Merge", "MergeCreate", "Update", "Delete"}


def falkordb_statements() -> list[cypher.Statement]:
    out = []
    for name in cypher.shared_names():
        try:
            out.append(cypher.load(name, "falkordb"))
        except ValueError:  # a multi-statement schema step: run by the migrations, never in a scope's queue
            continue
    return out


def test_every_statement_says_whether_it_writes(falkordb_server: FalkorServer) -> None:
    """The ``writes`` flag (read from a statement's clauses) agrees with FalkorDB's own plan of it: a
    write the flag missed would run at once inside a scope, outside its atomic query."""
    import falkordb

    prefix = f"t{uuid.uuid4().hex[:12]}"
    graph = falkordb.FalkorDB(host=falkordb_server.host, port=falkordb_server.port).select_graph(prefix)
    try:
        graph.query("CREATE (:Meta {name: 'x'})")
        wrong, unplanned, planned = [], [], 0
        for stmt in falkordb_statements():
            try:
                plan = graph.explain(stmt.text, {name: 1 for name in stmt.params})
            except Exception as exc:
                # LadybugDB's own statements (CALL show_tables, ...) and index changes, which a scope
                # runs alone: none may be a write that a scope would queue
                if stmt.writes and not is_schema_change(stmt.text):
                    unplanned.append(f"{stmt.name}: {exc}")
                continue
            planned += 1
            operations = {line.strip().split(" | ")[0] for line in plan.plan}
            if bool(operations & WRITE_OPERATIONS) != stmt.writes:
                wrong.append(f"{stmt.name}: writes={stmt.writes}, plan {sorted(operations)}")
        assert wrong == [] and unplanned == []
        assert planned > 150
    finally:
        drop_graphs(falkordb_server, prefix)


def test_keys_by_many_names_are_index_lookups_on_falkordb(falkordb_server: FalkorServer) -> None:
    """``key/by_names`` (every write's key resolution of a batch) looks each name and its key up by index:
    the shared form was planned as a scan of every Key joined to the names, which made a 100k build slow
    down as it grew (5 s per 500-memory batch at 20k memories)."""
    import falkordb

    prefix = f"t{uuid.uuid4().hex[:12]}"
    graph = falkordb.FalkorDB(host=falkordb_server.host, port=falkordb_server.port).select_graph(prefix)
    try:
        graph.query("CREATE INDEX FOR (n:KeyName) ON (n.id)")
        graph.query("CREATE INDEX FOR (k:Key) ON (k.id)")
        plan = str(graph.explain(cypher.load("key/by_names", "falkordb").text, {"ids": ["a"]}))
        assert "Label Scan" not in plan and plan.count("Index Scan") == 2, plan
    finally:
        drop_graphs(falkordb_server, prefix)


def test_an_override_writes_as_its_shared_statement_does() -> None:
    differ = []
    for name in cypher.shared_names():
        if name.startswith("schema/0"):  # a schema step (load_script): FalkorDB's may hold only comments
            continue
        try:
            shared, own = cypher.load(name, "ladybug"), cypher.load(name, "falkordb")
        except ValueError:
            continue
        if shared.writes != own.writes and not is_schema_change(own.text):
            differ.append(name)
    assert differ == []


def test_every_write_that_returns_rows_can_be_composed() -> None:
    """Each writing statement's returned columns are named, so its rows can come back from one query."""
    for stmt in falkordb_statements():
        if stmt.writes:
            compose([Queued(stmt.name, stmt.text, {}, PendingRows(stmt.name))])  # raises on an unnamed column


def test_a_queue_becomes_unit_and_collecting_subqueries_in_order() -> None:
    queued = [
        Queued("a", "MERGE (m:Meta {name: $name}) SET m.value = '$name kept'", {"name": "x"}, PendingRows("a")),
        Queued("b", "MATCH (m:Meta) WHERE m.name = $name DELETE m RETURN count(*) AS n", {"name": "y"},
               PendingRows("b")),
        Queued("c", "MATCH (m:Meta) WHERE m.name = $name SET m.v = 1", {"name": "z"}, PendingRows("c")),
        Queued("d", "MATCH (m:Meta) RETURN m", {}, PendingRows("d")),
    ]
    text, params, paths = compose(queued)
    assert params == {"q0_name": "x", "q1_name": "y", "q2_name": "z"}
    assert "'$name kept'" in text  # a parameter-like text inside a string is left alone
    assert text == ("CALL { MERGE (m:Meta {name: $q0_name}) SET m.value = '$name kept' } "
                    "CALL { MATCH (m:Meta) WHERE m.name = $q1_name DELETE m WITH count(*) AS n "
                    "RETURN collect({n: n}) AS _kq } WITH [_kq] AS rows "
                    "CALL { MATCH (m:Meta) WHERE m.name = $q2_name SET m.v = 1 } "
                    "CALL { MATCH (m:Meta) WITH m RETURN collect({m: m}) AS _kq } WITH rows + [_kq] AS rows "
                    "RETURN rows")
    assert paths == {1: [0], 3: [1]}


def test_returned_columns() -> None:
    assert returned_columns("MATCH (n) RETURN n") == (10, ["n"])
    assert returned_columns("MATCH (n) RETURN DISTINCT n.id AS id, {a: 1, b: 2} AS m ORDER BY id LIMIT 3")[1] == [
        "id", "m"]
    assert returned_columns("MATCH (n) SET n.x = 'RETURN y'") is None
    with pytest.raises(ValueError, match="needs `AS name`"):
        returned_columns("MATCH (n) RETURN n.id")


def test_rows_of_a_queued_write_are_refused_until_filled() -> None:
    rows = PendingRows("request/expire")
    with pytest.raises(RuntimeError, match="read inside their write scope"):
        rows[0]
    with pytest.raises(RuntimeError):
        bool(rows)
    rows.fill([{"n": 2}])
    assert rows == [{"n": 2}] and len(rows) == 1 and list(rows) == [{"n": 2}] and rows[0]["n"] == 2
