"""The CLI's commands on a FalkorDB store (``KEYMEM_STORE_URL``), run as a user runs them: the commands
that read the store, ``keymem doctor``'s engine lines, and an unreachable server in one line."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.settings import Settings
from tests.cli.conftest import cli_env, run_cli
from tests.conftest_engines import FalkorServer, drop_graphs


@pytest.fixture
def store_url(falkordb_server: FalkorServer) -> Iterator[str]:
    """A fresh graph on the session's FalkorDB server for the ``settings`` and ``graph`` fixtures."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    yield falkordb_server.url(prefix)
    drop_graphs(falkordb_server, prefix)


@pytest.fixture
def falkordb_env(store_env: dict[str, Any]) -> dict[str, Any]:
    """``store_env`` (a populated store, closed again, and a `keymem` subprocess's environment) on this
    module's FalkorDB graph, with its URL."""
    url = store_env["settings"].store_url
    assert url is not None and store_env["env"]["KEYMEM_STORE_URL"] == url
    return {**store_env, "url": url}


def test_the_commands_that_read_the_store_work_on_falkordb(falkordb_env: dict[str, Any]) -> None:
    env, ids, url = falkordb_env["env"], falkordb_env["ids"], falkordb_env["url"]
    data = json.loads(run_cli(["stats", "--json"], env).stdout)
    assert data["counts"]["memories"] == 6 and data["counts"]["superseded"] == 1
    assert data["hubs"][0]["text"] == "python" and data["store"]["path"] == url
    server = data["store"]["server"]
    assert server["falkordb_version"].count(".") == 2 and server["redis_version"].startswith(("7.", "8."))
    assert server["appendonly"] == "yes" and server["role"] == "master" and data["process"]["buffer_pool"] is None
    text = run_cli(["stats"], env)
    assert text.returncode == 0, text.stderr
    assert f"store       {url}" in text.stdout and "engine: FalkorDB " in text.stdout
    assert "durability: appendonly yes, appendfsync everysec" in text.stdout and "buffer pool" not in text.stdout
    exported = run_cli(["export", "-"], env)
    assert exported.returncode == 0, exported.stderr
    assert sum(1 for line in exported.stdout.splitlines() if '"type": "memory"' in line) == 7
    shown = run_cli(["read", ids["a"]], env)
    assert shown.returncode == 0 and "loved for readability" in shown.stdout, shown.stderr
    found = run_cli(["recall", "what linter does the python tooling use"], env)
    assert found.returncode == 0 and "ruff" in found.stdout, found.stderr
    vocabulary = run_cli(["keys"], env)
    assert vocabulary.returncode == 0 and "python" in vocabulary.stdout, vocabulary.stderr
    page = Path(falkordb_env["settings"].data_dir) / "graph.html"
    drawn = run_cli(["viz", "-o", str(page)], env)
    assert drawn.returncode == 0 and "memories" in drawn.stdout and page.stat().st_size > 0, drawn.stderr
    assert int(drawn.stdout.split(": ", 1)[1].split(" keys")[0]) >= 8, drawn.stdout
    refused = run_cli(["snapshot", str(Path(falkordb_env["settings"].data_dir) / "snap")], env)
    assert refused.returncode == 1 and "keymem export" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_doctor_shows_the_falkordb_server_its_durability_and_the_acknowledgement(falkordb_env: dict[str, Any]) -> None:
    out = run_cli(["doctor"], {**falkordb_env["env"], "KEYMEM_FALKORDB_ACK_REPLICAS": "1"})
    store = out.stdout.split("\nstore:\n", 1)[1]
    lines = store.splitlines()
    assert lines[0].startswith("  engine: FalkorDB 4.") and f"on Redis 8.2.3, {falkordb_env['url']}" in lines[0]
    assert lines[1] == '  durability: appendonly yes, appendfsync everysec, save ""; primary, 0 replica(s) connected'
    assert lines[2].startswith("  acknowledgement: a write is acknowledged once 1 replica(s) hold it (WAIT")
    assert "schema 00" in lines[3] and "(up to date)" in lines[3], store
    # the session's server has no replica: a write would wait for one that is not there
    assert out.returncode == 1 and "KEYMEM_FALKORDB_ACK_REPLICAS=1 but the primary has 0 replica(s) online" in out.stderr


@pytest.mark.parametrize("server", ["closed", "silent"])
def test_doctor_on_an_unreachable_falkordb_is_one_line_within_two_seconds(
        settings: Settings, minilm_dir: Path, server: str, tmp_path: Path) -> None:
    """A closed port and a port that accepts and never answers: the store section is one line, the
    problem names the server without its password, and doctor's store check takes under 2 s."""
    from keymem.cli import falkordb_doctor
    from tests.conftest_engines import free_port

    listener = socket.socket()
    if server == "silent":
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        threading.Thread(target=lambda: listener.accept(), daemon=True).start()
    else:
        port = free_port()
    url = f"falkordb+sentinel://keymem:secret@127.0.0.1:{port}/mymaster/k" if server == "silent" else \
        f"falkordb://keymem:secret@127.0.0.1:{port}/k"
    try:
        started = time.monotonic()
        problems = falkordb_doctor.doctor_store(settings.with_overrides(store_url=url), daemon_running=False)
        assert time.monotonic() - started < 2.2
        out = run_cli(["doctor"], cli_env(settings, minilm_dir, KEYMEM_STORE_URL=url))
    finally:
        listener.close()
    assert len(problems) == 1 and "secret" not in problems[0][0] and "\n" not in problems[0][0]
    store = out.stdout.split("\nstore:\n", 1)[1].split("\n\n")[0]
    assert store.splitlines() == [f"  {url.replace('secret', '***')}: CANNOT REACH"], store
    assert out.returncode == 1 and "secret" not in out.stdout + out.stderr
    assert ("is unreachable" if server == "closed" else "no Sentinel of") in out.stderr


def test_stats_and_doctor_through_a_daemon_on_falkordb(falkordb_server: FalkorServer, minilm_dir: Path) -> None:
    """A real daemon serving a FalkorDB store: `keymem stats` and `keymem doctor` ask it, and show the
    server's facts as the daemon sees them."""
    from keymem.server import client
    from tests.e2e.support import Keymem, keymem_env, private_dir

    prefix = f"t{uuid.uuid4().hex[:12]}"
    url = falkordb_server.url(prefix)
    with private_dir() as d:
        km = Keymem(d / "data", keymem_env(d / "data", minilm_dir, KEYMEM_STORE_URL=url))
        try:
            client.start_daemon(km.settings(), env=km.env).close()
            km.wait_daemon_ready()
            remembered = run_cli(["remember", "The staging database runs on FalkorDB", "-k", "staging"], km.env)
            assert remembered.returncode == 0, remembered.stderr
            data = json.loads(run_cli(["stats", "--json"], km.env).stdout)
            assert data["served_by"] == "daemon" and data["counts"]["memories"] == 1
            assert data["store"]["path"] == url and data["store"]["server"]["role"] == "master"
            doctor = run_cli(["doctor"], km.env)
        finally:
            km.stop_all()
            drop_graphs(falkordb_server, prefix)
    store = doctor.stdout.split("\nstore:\n", 1)[1]
    assert store.startswith("  engine: FalkorDB ") and "durability: appendonly yes" in store
    assert f"graph {prefix}: opened by the daemon" in store and "(up to date)" in store, store
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_doctor_and_stats_on_a_graph_per_namespace(falkordb_env: dict[str, Any], falkordb_server: FalkorServer,
                                                   tmp_path: Path) -> None:
    """The same store moved to a graph per namespace: doctor lists each namespace's graph, stats counts them
    all; the store left in one graph is refused under the other layout, in doctor as a problem."""
    env = falkordb_env["env"]
    mismatch = run_cli(["doctor"], {**env, "KEYMEM_FALKORDB_GRAPHS": "namespace"})
    assert mismatch.returncode == 1 and "layout: DOES NOT MATCH KEYMEM_FALKORDB_GRAPHS" in mismatch.stdout
    assert "keeps its namespaces in one graph" in mismatch.stderr
    before = json.loads(run_cli(["stats", "--json"], env).stdout)

    prefix = f"t{uuid.uuid4().hex[:12]}"
    split = {**env, "KEYMEM_STORE_URL": falkordb_server.url(prefix), "KEYMEM_FALKORDB_GRAPHS": "namespace",
             "KEYMEM_DATA_DIR": str(tmp_path / "split")}
    try:
        assert run_cli(["export", str(tmp_path / "all.jsonl")], env).returncode == 0
        moved = run_cli(["import", str(tmp_path / "all.jsonl")], split)
        assert moved.returncode == 0, moved.stderr
        out = run_cli(["doctor"], split)
        store = out.stdout.split("\nstore:\n", 1)[1].splitlines()
        assert "  layout: a graph per namespace (KEYMEM_FALKORDB_GRAPHS=namespace), 2 namespace(s)" in store
        for namespace in ("default", "work"):
            line = next(x for x in store if x.startswith(f"  graph {prefix}:{namespace}: "))
            assert "opens cleanly" in line and "(up to date)" in line, store
        after = json.loads(run_cli(["stats", "--json"], split).stdout)
        assert after["counts"] == before["counts"]
        assert sorted(map(str, after["namespaces"])) == sorted(map(str, before["namespaces"]))
        assert after["hubs"][0]["text"] == before["hubs"][0]["text"] == "python"
    finally:
        drop_graphs(falkordb_server, prefix)
