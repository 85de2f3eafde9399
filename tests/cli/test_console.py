"""The Cypher console: statement splitting, tables, read-only refusal, and a real session in a pty.

The tests marked ``both_engines`` run on LadybugDB and FalkorDB (GRAPH.RO_QUERY refuses the writes there)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.cli import ops
from keymem.cli.console import Step, disp_width, read_script, render_table, split_statements
from keymem.errors import InvalidInput
from tests.cli.conftest import KEYMEM, run_cli
from tests.conftest_engines import ENGINES, engine_url

both_engines = pytest.mark.parametrize("store_url", ENGINES, indirect=True)


@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """LadybugDB, or each engine for a test marked ``both_engines``."""
    if not hasattr(request, "param"):
        yield None
        return
    yield from engine_url(request)


def test_split_statements_respects_strings_and_comments() -> None:
    text = "MATCH (n) RETURN 'a;b' AS x;\n// c; d\nRETURN \"q;\" /* ; */;\nRETURN 1"
    stmts, rest = split_statements(text)
    assert [s for s, _ in stmts] == ["MATCH (n) RETURN 'a;b' AS x", '// c; d\nRETURN "q;" /* ; */']
    assert [line for _, line in stmts] == [1, 2]
    assert rest.strip() == "RETURN 1"


def test_table_fits_the_terminal_width() -> None:
    rows = [["k_1", "x" * 200, 3], ["k_2", "파이썬 " * 30, 4]]
    for width in (40, 80, 120):
        table = render_table(["id", "content", "n"], rows, width)
        assert all(disp_width(line) <= width for line in table.splitlines()), width
    assert "…" in render_table(["id", "content", "n"], rows, 60)


@both_engines
@pytest.mark.parametrize("query", [
    "CREATE (:Meta {name: 'x', value: 'y'})",
    "MATCH (k:Key) SET k.text = 'hacked'",
    "MATCH (m:Memory) DETACH DELETE m",
    "MATCH (m:Memory) WITH m LIMIT 1 MERGE (:Meta {name: 'z', value: 'w'})",
    "DROP TABLE Meta",
    "ALTER TABLE Key ADD extra STRING",
    "CREATE NODE TABLE Evil(id STRING PRIMARY KEY)",
    "COPY Meta FROM '/tmp/nothing.csv'",
    "COPY (MATCH (k:Key) RETURN k.text) TO '/tmp/keymem-test-leak.csv'",
    "EXPORT DATABASE '/tmp/keymem-test-export'",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "CALL threads = 1",
    "CALL clear_warnings()",
    "CALL CREATE_VECTOR_INDEX('KeyVec', 'evil', 'vec')",
    "CREATE INDEX FOR (k:Key) ON (k.text)",
    "CALL db.idx.fulltext.createNodeIndex('Memory', 'content')",
    "PROFILE MATCH (m:Memory) DETACH DELETE m",
])
def test_read_only_refuses_mutations(graph: Any, populated: dict[str, str], query: str) -> None:
    before = graph.counts()
    texts = sorted(r["text"] for r in graph.store.query("key/all"))
    with pytest.raises(InvalidInput):
        ops.cypher_run(graph, {"query": query})
    assert graph.counts() == before
    assert sorted(r["text"] for r in graph.store.query("key/all")) == texts
    # the connection is usable afterwards (no transaction left open)
    assert ops.cypher_run(graph, {"query": "MATCH (k:Key) RETURN count(k) AS n"})["rows"] == [[len(texts)]]


@both_engines
def test_write_mode_runs_mutations(graph: Any, populated: dict[str, str]) -> None:
    ops.cypher_run(graph, {"query": "CREATE (:Meta {name: 'console', value: 'on'})", "write": True})
    assert graph.meta("console") == "on"
    # and a keymem write still works after it (the writer was released)
    graph.remember(content="after a console write", keys=["console"])


@both_engines
def test_write_mode_reloads_what_recall_holds(graph: Any, populated: dict[str, str]) -> None:
    """A console write bypasses the domain layer; keymem re-reads its in-memory copies after it."""
    from keymem.admin.invariants import check_invariants

    ops.cypher_run(graph, {"query": "MATCH (k:Key)-[l:LINKS]->(m:Memory) SET l.weight = 2.5", "write": True})
    ops.cypher_run(graph, {"query": "MATCH (m:Memory) WHERE m.active SET m.depth = 0.75", "write": True})
    snap = graph.mirror.snapshot()["memories"]
    assert snap and all(w == 2.5 for m in snap.values() for _, w in m["keys"])
    assert all(m["depth"] == 0.75 for m in snap.values() if m["active"])
    assert check_invariants(graph) == []


@both_engines
def test_unbound_parameters_are_refused_even_in_write_mode(graph: Any, populated: dict[str, str]) -> None:
    """Kuzu drops an unbound $x silently (WHERE m.id = $x DELETE would delete every memory)."""
    before = graph.counts()
    with pytest.raises(InvalidInput, match=r"\$x"):
        ops.cypher_run(graph, {"query": "MATCH (m:Memory) WHERE m.id = $x DETACH DELETE m", "write": True})
    assert graph.counts() == before


def test_errors_carry_the_engine_message_and_position(graph: Any) -> None:
    """The engine's errors in keymem's one-line style: no "Parser exception:" class, no caret drawing."""
    cases = [("MATCH (k:Key RETURN k", 'Cypher syntax error at line 1, offset 13: near "RETURN k"'),
             ("MATCH (k:Key)\nWHERE k.text = 'a' AND AND RETURN k",
              'Cypher syntax error at line 2, offset 23: near "AND RETURN k"'),
             ("RETURN 1 +", "Cypher syntax error at line 1, offset 10: at the end of the statement"),
             ("MATCH (m:Memory) RETURN m.nope", "Cannot find property nope for m."),
             ("RETURN size(1, 2)", "Function SIZE did not receive correct arguments: Actual: (INT64,INT64) "
                                   "Expected: (LIST) -> INT64 (ARRAY) -> INT64 (MAP) -> INT64 (STRING) -> INT64")]
    for query, message in cases:
        with pytest.raises(InvalidInput) as err:
            ops.cypher_run(graph, {"query": query})
        assert str(err.value) == message
    with pytest.raises(InvalidInput) as err:
        ops.cypher_run(graph, {"query": "MATCH (m:Memory) DETACH DELETE m"})
    assert str(err.value) == "read-only console: this statement would change the store; --write or :write on allows it"


@both_engines
def test_a_write_in_the_read_only_console_is_one_line(graph: Any, populated: dict[str, str]) -> None:
    before = graph.counts()
    for query in ("MATCH (m:Memory) DETACH DELETE m", "MATCH (k:Key) SET k.text = 'x'"):
        with pytest.raises(InvalidInput) as err:
            ops.cypher_run(graph, {"query": query})
        assert str(err.value) == ("read-only console: this statement would change the store; "
                                  "--write or :write on allows it")
    assert graph.counts() == before
    rows = ops.cypher_run(graph, {"query": "MATCH (k:Key) WHERE k.text = 'python' RETURN k.namespace AS ns ORDER BY ns"})
    assert rows["columns"] == ["ns"] and rows["rows"] == [["default"], ["work"]]
    plan = ops.cypher_run(graph, {"query": "EXPLAIN MATCH (k:Key) RETURN k.text"})
    assert plan["columns"] == ["explain result"] and plan["rows"]


@pytest.mark.parametrize("store_url", ["falkordb"], indirect=True)
def test_falkordb_console_says_what_it_cannot_list(store_env: dict[str, Any]) -> None:
    """:tables and :schema on FalkorDB: labels and types, one line each for table_info() and functions."""
    out = run_cli(["cypher"], store_env["env"], input=":tables\n:schema Memory\n")
    assert out.returncode == 0, out.stderr
    assert re.search(r"\| Memory +\| NODE", out.stdout) and re.search(r"\| LINKS +\| REL", out.stdout)
    assert "NODE Memory" in out.stdout and "superseded_by" in out.stdout
    notes = [line for line in out.stderr.splitlines() if line.startswith("note: ")]
    assert any("schemaless" in n and "table_info" in n for n in notes)
    assert any("no show_functions()" in n for n in notes)
    out = run_cli(["cypher", "-c", "MATCH (m:Memory) DETACH DELETE m;"], store_env["env"])
    assert out.returncode == 1 and out.stderr.strip().endswith("--write or :write on allows it")
    assert len(out.stderr.strip().splitlines()) == 1


def test_engine_messages_in_keymem_words() -> None:
    import ladybug

    from keymem.store.engine import engine_message
    from keymem.store.vectors import load_vector

    conn = ladybug.Connection(ladybug.Database())
    try:
        why = load_vector(conn.execute)
        with pytest.raises(RuntimeError) as raw:
            conn.execute("MATCH (n:Nope) RETURN n")
    finally:
        conn.close()
    assert why is None or why == "LadybugDB's VECTOR extension is not installed"
    assert str(raw.value).startswith("Binder exception: ") and engine_message(raw.value) == "Table Nope does not exist."


def test_schema_lists_tables_properties_and_functions(graph: Any) -> None:
    schema = ops.cypher_schema(graph, {})
    tables = {t["name"]: t for t in schema["tables"]}
    assert {"Key", "Memory", "LINKS", "SUPERSEDES"} <= set(tables)
    assert {"id", "content", "superseded_by"} <= {p["name"] for p in tables["Memory"]["properties"]}
    assert tables["LINKS"]["connections"] == [["Key", "Memory"]]
    assert "LOWER" in schema["functions"] or "lower" in schema["functions"]


def test_one_shot_formats_and_script_errors(store_env: dict[str, Any], tmp_path: Any) -> None:
    env = store_env["env"]
    out = run_cli(["cypher", "--format", "json", "-c", "MATCH (k:Key) WHERE k.text = 'python' RETURN k.text AS t, k.namespace AS ns ORDER BY ns;"], env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [{"t": "python", "ns": "default"}, {"t": "python", "ns": "work"}]
    out = run_cli(["cypher", "--format", "csv", "-c", "MATCH (m:Memory) WHERE NOT m.active RETURN count(m) AS old;"], env)
    assert out.stdout.splitlines() == ["old", "1"]
    script = tmp_path / "q.cypher"
    script.write_text("MATCH (k:Key)\nRETURN count(k);\n\nMATCH (m:Memory)\nRETURN m.nope;\n")
    out = run_cli(["cypher", "-f", str(script)], env)
    assert out.returncode == 1
    assert f"statement 2 ({script} line 4)" in out.stderr and "Cannot find property nope" in out.stderr
    out = run_cli(["cypher", "-c", "MATCH (m:Memory) DETACH DELETE m;"], env)
    assert out.returncode == 1 and "read-only" in out.stderr


def test_script_reader_reads_lines_as_the_console_does() -> None:
    text = ":format csv\nMATCH (m:Memory)\n:not a command inside a statement\nRETURN m; RETURN 1\n// note\n:tables\n\nRETURN 2"
    assert read_script(text) == [
        Step("command", ":format csv", 1),
        Step("statement", "MATCH (m:Memory)\n:not a command inside a statement\nRETURN m", 2),
        Step("statement", "RETURN 1\n// note\n:tables\n\nRETURN 2", 4),
    ]
    assert read_script("// a comment is no statement\n:tables\n\n") == [Step("command", ":tables", 2)]
    assert read_script("/* open\n:still a comment */ RETURN 1;\n:help") == [
        Step("statement", "/* open\n:still a comment */ RETURN 1", 1), Step("command", ":help", 3)]


@both_engines
def test_script_runs_commands_and_statements_like_the_console(store_env: dict[str, Any], tmp_path: Any) -> None:
    env = store_env["env"]
    out = run_cli(["cypher"], env, input=":tables\n:help\n")  # piped stdin: not a terminal
    assert out.returncode == 0, out.stderr
    assert re.search(r"\| Memory +\| NODE", out.stdout) and ":expand ID [HOPS]" in out.stdout
    assert "unknown command" not in out.stderr
    script = tmp_path / "q.cypher"
    script.write_text(":format csv\nMATCH (m:Memory) WHERE NOT m.active\nRETURN count(m) AS old;\n")
    out = run_cli(["cypher", "-f", str(script)], env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["old", "1"]
    # the first error ends the script (exit 1), naming where it is; --continue goes on
    script.write_text(":format csv\n:bogus\nRETURN 1 AS one;\nRETURN nope;\nRETURN 2 AS two;\n")
    out = run_cli(["cypher", "-f", str(script)], env)
    assert out.returncode == 1
    assert out.stdout == "" and out.stderr.splitlines() == [f"{script} line 2: unknown command :bogus (try :help)"]
    out = run_cli(["cypher", "-f", str(script), "--continue"], env)
    assert out.returncode == 1
    assert out.stdout.splitlines() == ["one", "1", "two", "2"]
    assert f"{script} line 2: unknown command :bogus" in out.stderr
    assert f"statement 2 ({script} line 4)" in out.stderr
    out = run_cli(["cypher", "--format", "csv"], env, input=":format xml\nRETURN 1 AS one;\n")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == "stdin line 1: usage: :format table|json|csv"
    out = run_cli(["cypher", "--format", "csv"], env, input="RETURN 1 AS one;\n:quit\nRETURN 2 AS two;\n")
    assert out.returncode == 0 and out.stdout.splitlines() == ["one", "1"]


def test_interactive_session_in_a_terminal(store_env: dict[str, Any]) -> None:
    """Drive the real console in a pseudo-terminal as a person would, and read the screen."""
    pexpect = pytest.importorskip("pexpect")
    env = {**store_env["env"], "TERM": "dumb", "COLUMNS": "100", "LINES": "40"}
    child = pexpect.spawn(KEYMEM[0], [*KEYMEM[1:], "cypher"], env=env, encoding="utf-8", timeout=60,
                          dimensions=(40, 100))
    try:
        child.expect("keymem cypher console on .*read-only")
        child.expect_exact("keymem> ")
        # a multi-line statement: the continuation prompt, then a result table with timing
        child.sendline("MATCH (k:Key)")
        child.expect_exact("...> ")
        child.sendline("WHERE k.key_type = 'name' RETURN k.text AS name;")
        child.expect(r"\| name +\|")
        child.expect(r"\| Guido +\|")
        child.expect(r"\(1 row, [0-9.]+ ms\)")
        child.expect_exact("keymem> ")
        # an error shows Kuzu's message and where
        child.sendline("MATCH (k:Key RETURN k;")
        child.expect_exact('Cypher syntax error at line 1, offset 13: near "RETURN k"')
        child.expect_exact("keymem> ")
        child.sendline(":tables")
        child.expect(r"\| Memory +\| NODE")
        child.expect_exact("keymem> ")
        # read-only refusal
        child.sendline("MATCH (m:Memory) DETACH DELETE m;")
        child.expect("read-only console")
        child.expect_exact("keymem> ")
        child.sendline("MATCH (m:Memory) RETURN count(m) AS n;")
        child.expect(r"\| 7 +\|")
        child.expect_exact("keymem> ")
        # completion of a table name
        child.send("MATCH (m:Memo\t")
        child.expect("Memo\x07?ry")  # completed to the common prefix of Memory / MemoryNorm (with a bell)
        child.sendline(") RETURN count(*) AS c;")
        child.expect(r"\| 7 +\|")
        child.expect_exact("keymem> ")
        # :write on lifts read-only mode, with the warning
        child.sendline(":write on")
        child.expect("bypass keymem's invariants")
        child.expect_exact("keymem[write]> ")
        child.sendline("CREATE (:Meta {name: 'from_pty', value: 'yes'});")
        child.expect(r"\(0 rows")
        child.sendline(":write off")
        child.expect_exact("keymem> ")
        child.sendline(":quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    import ladybug

    db = ladybug.Database(str(store_env["settings"].db_path), read_only=True)
    try:
        rows = ladybug.Connection(db).execute("MATCH (m:Meta) WHERE m.name = 'from_pty' RETURN m.value")
        assert not isinstance(rows, list) and rows.get_all() == [["yes"]]
    finally:
        db.close()
    history = store_env["settings"].data_dir / "cypher_history"
    assert "MATCH (k:Key) WHERE k.key_type = 'name' RETURN k.text AS name;" in history.read_text()


def test_console_through_the_daemon(store_env: dict[str, Any]) -> None:
    env = {**store_env["env"], "KEYMEM_DAEMON": "auto"}
    started = run_cli(["daemon"], env)
    assert started.returncode == 0, started.stderr
    try:
        out = run_cli(["cypher", "-c", "MATCH (k:Key) RETURN count(k) AS n; CREATE (:Meta {name: 'a', value: 'b'});"], env)
        assert out.returncode == 1
        assert "(1 row" in out.stdout and "read-only console" in out.stderr
        out = run_cli(["stats", "--json"], env)
        data = json.loads(out.stdout)
        assert data["served_by"] == "daemon"
        daemon_pid = data["process"]["pid"]
        status = Path(f"/proc/{daemon_pid}/status").read_text()
        assert "keymem.server.daemon" in Path(f"/proc/{daemon_pid}/cmdline").read_bytes().decode().replace("\0", " ")
        rss_now = int(next(ln for ln in status.splitlines() if ln.startswith("VmRSS:")).split()[1])
        assert abs(data["process"]["rss_kb"] - rss_now) < 64 * 1024  # the daemon's own RSS, not the CLI's
        assert data["process"]["peak_rss_kb"] >= data["process"]["rss_kb"] > 100_000  # the model is loaded there
        assert f"peak (daemon pid {daemon_pid})" in run_cli(["stats"], env).stdout
        out = run_cli(["cypher", "--format", "json", "-c", f":expand {store_env['ids']['c']} 1"], env)
        assert out.returncode == 0, out.stderr
        assert (1, "RELATED_TO", store_env["ids"]["a"]) in {(r["hop"], r["via"], r["to"]) for r in json.loads(out.stdout)}
        out = run_cli(["cypher", "--write", "-c", "CREATE (:Meta {name: 'a', value: 'b'});"], env)
        assert out.returncode == 0 and "bypass keymem's invariants" in out.stderr
    finally:
        run_cli(["daemon", "--stop"], env)
    assert sys.executable


def test_saved_queries_in_explorer_doc_run_read_only(graph: Any, populated: dict[str, str]) -> None:
    """Every query in docs/explorer.md is valid Kuzu 0.11 Cypher and reads only."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "explorer.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```cypher\n(.*?)```", doc, re.S)
    assert len(blocks) >= 4
    for block in blocks:
        query = block.strip().rstrip(";").replace("m_0123456789abcdef0123", populated["old"])
        result = ops.cypher_run(graph, {"query": query})
        assert result["columns"]
    chain = ops.cypher_run(graph, {"query": blocks[3].strip().rstrip(";").replace("m_0123456789abcdef0123",
                                                                                    populated["old"])})
    assert [r[0] for r in chain["rows"]] == [populated["new"], populated["old"]]


def _key_id(graph: Any, memory_id: str, text: str) -> str:
    return next(k for k, _ in graph.mirror.memory_keys(memory_id) if graph.mirror.key(k)["text"] == text)


def test_expand_shows_the_walk_from_a_memory_and_a_key(graph: Any, populated: dict[str, str]) -> None:
    """`:expand` prints the rows the association walk reads, from the same Cypher statements."""

    from keymem.index.neighbourhood import MirrorNeighbourhood
    from keymem.memory import associative

    a, b, c = populated["a"], populated["b"], populated["c"]
    out = ops.cypher_expand(graph, {"id": a, "hops": 2})
    assert out["columns"] == ["hop", "from", "from_text", "via", "key_id", "to", "to_text", "w_from", "w_to", "mass"]
    rows = [dict(zip(out["columns"], r, strict=True)) for r in out["rows"]]
    hop1 = {(r["via"], r["to"]) for r in rows if r["hop"] == 1}
    # each memory by its first words, each key by its name
    assert {(r["from_text"], r["via"], r["to_text"]) for r in rows if r["to"] == b} >= {
        ("Python is a programming language loved …", "python", "The python tooling uses ruff for …")}
    assert {r["to_text"] for r in rows if r["to"] == c} == {"Kuzu is an embedded graph database"}
    assert ("python", b) in hop1 and ("python", populated["new"]) in hop1 and ("RELATED_TO", c) in hop1
    assert populated["old"] not in {r["to"] for r in rows}  # superseded: not walked
    assert populated["work"] not in {r["to"] for r in rows}  # another namespace's "python" key
    assert {r["hop"] for r in rows} == {1, 2} and all(r["from"] != r["to"] for r in rows)
    # The mass shown is the walk's own, over the mirror too.
    cands = {a: associative.Candidate(a, 1.0)}
    want = associative.associate(MirrorNeighbourhood(graph.mirror), cands, 2, graph.now()).mass
    assert {r["to"]: r["mass"] for r in rows} == {m: round(v, 4) for m, v in want.items()}

    kuzu_key = _key_id(graph, c, "kuzu")
    out = ops.cypher_expand(graph, {"id": kuzu_key, "hops": 2})
    rows = [dict(zip(out["columns"], r, strict=True)) for r in out["rows"]]
    assert [(r["hop"], r["key_id"], r["to"]) for r in rows if r["hop"] == 1] == [(1, kuzu_key, c)]
    assert [(r["from"], r["from_text"], r["via"]) for r in rows if r["hop"] == 1] == [("", "", "kuzu")]
    assert (2, c, "RELATED_TO", a) in {(r["hop"], r["from"], r["via"], r["to"]) for r in rows}


def test_expand_refuses_what_it_cannot_walk(graph: Any, populated: dict[str, str]) -> None:
    from keymem.errors import NotFound

    with pytest.raises(InvalidInput, match="usage"):
        ops.cypher_expand(graph, {"id": "python"})
    with pytest.raises(InvalidInput, match="hops"):
        ops.cypher_expand(graph, {"id": populated["a"], "hops": 9})
    with pytest.raises(NotFound, match="not visible"):
        ops.cypher_expand(graph, {"id": populated["old"]})
    with pytest.raises(NotFound, match="does not exist"):
        ops.cypher_expand(graph, {"id": "k_00000000000000000000"})
    graph.set_meta("walk_copies", "pending")  # schema step 003's fill not finished
    with pytest.raises(InvalidInput, match="schema step 003"):
        ops.cypher_expand(graph, {"id": populated["a"]})
    graph.set_meta("walk_copies", "filled")


def test_expand_in_the_console(store_env: dict[str, Any]) -> None:
    env, ids = store_env["env"], store_env["ids"]
    out = run_cli(["cypher", "--format", "json", "-c", f":expand {ids['c']} 1"], env)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {(r["hop"], r["via"], r["to"]) for r in rows} >= {(1, "RELATED_TO", ids["a"])}
    out = run_cli(["cypher", "-c", f":expand {ids['a']}"], env)
    assert out.returncode == 0, out.stderr
    # the table is for reading: memories by their first words, keys by name, the id reached to go on with
    assert re.search(r"\|\s*hop\s*\|\s*from\s*\|\s*via\s*\|\s*to\s*\|\s*to_id\s*\|", out.stdout), out.stdout
    assert "| python " in out.stdout and "| Python is a program" in out.stdout and ids["b"] in out.stdout
    assert re.search(r"\(\d+ rows, [0-9.]+ ms\)", out.stdout)
    out = run_cli(["cypher", "-c", ":expand"], env)
    assert "usage: :expand" in out.stderr
