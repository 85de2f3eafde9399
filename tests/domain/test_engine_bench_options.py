"""The benchmarks' engine options: bench/two_fronts.py's arguments and seeded corpus, and the
``--store-url``/``--falkordb`` options of bench/assoc.py and bench/locomo.py (bench/_engine.py),
the graphs they name and clean up on a real FalkorDB server."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
import redis

from tests import bench_modules
from tests.conftest_engines import FalkorServer


@pytest.fixture(scope="module")
def two_fronts() -> ModuleType:
    return bench_modules.load("two_fronts")


@pytest.fixture(scope="module")
def engine() -> ModuleType:
    bench_modules.load("assoc")  # imports bench/_engine.py as _engine
    return sys.modules["_engine"]


def test_two_fronts_defaults_and_refusals(two_fronts: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    args = two_fronts.parse_args([])
    assert (args.http_clients, args.calls, args.memories, args.probes, args.seed) == (8, 300, 400, 60, 7)
    for bad, named in ((["--http-clients", "1"], "--http-clients must be at least 2"),
                       (["--calls", "0"], "--calls must be at least 1"),
                       (["--probes", "-3"], "--probes must be at least 1")):
        with pytest.raises(SystemExit) as exc:
            two_fronts.parse_args(bad)
        assert exc.value.code == 2
        assert named in capsys.readouterr().err


def test_two_fronts_corpus_is_seeded(two_fronts: ModuleType) -> None:
    a, b, other = two_fronts.seed_items(7, 20), two_fronts.seed_items(7, 20), two_fronts.seed_items(8, 20)
    assert a == b and a != other
    assert len({m["content"] for m in a}) == 20  # distinct texts: the store would merge equal ones
    assert all(2 <= len(m["keys"]) <= 3 and all(k.isalpha() for k in m["keys"]) for m in a)


@pytest.mark.parametrize("script", ["assoc", "locomo"])
def test_quality_benchmarks_refuse_a_bad_store_url_in_one_line(script: str, capsys: pytest.CaptureFixture[str]) -> None:
    main = bench_modules.load(script).main
    for argv, named in ((["--store-url", "redis://127.0.0.1:6379"], "--store-url: must start with falkordb://"),
                        (["--store-url", "falkordb+sentinel://127.0.0.1:26379/mymaster"], "not a Sentinel one"),
                        (["--store-url", "falkordb://127.0.0.1:6379", "--falkordb"], "not allowed with")):
        with pytest.raises(SystemExit) as exc:
            main([*(["--data", "unused"] if script == "locomo" else []), *argv])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert named in err[-1]


def test_each_store_is_a_graph_of_its_own_refused_if_present_and_dropped(engine: ModuleType,
                                                                        falkordb_server: FalkorServer) -> None:
    base = falkordb_server.url("benchtest")
    url = engine.graph_url(base, "locomo-conv-26-agent")
    assert url == f"falkordb://127.0.0.1:{falkordb_server.port}/benchtest-locomo-conv-26-agent"
    client = redis.Redis(host=falkordb_server.host, port=falkordb_server.port)
    try:
        engine.require_empty(url)  # nothing there yet
        client.execute_command("GRAPH.QUERY", "benchtest-locomo-conv-26-agent", "CREATE (:Memory {id: 'm1'})")
        client.execute_command("GRAPH.QUERY", "benchtest-locomo-conv-26-agentx", "CREATE (:Memory {id: 'm2'})")
        client.set("benchtest-locomo-conv-26-agent:writer", "token")  # an earlier release's lease
        client.set("{benchtest-locomo-conv-26-agent}:writer", "token")
        client.execute_command("GRAPH.COPY", "benchtest-locomo-conv-26-agent", "{benchtest-locomo-conv-26-agent}.bak.1")
        with pytest.raises(SystemExit, match="already holds the graph"):
            engine.require_empty(url)
        engine.drop(url)
        engine.require_empty(url)
        assert not client.exists("benchtest-locomo-conv-26-agent:writer", "{benchtest-locomo-conv-26-agent}:writer")
        listed = {g.decode() for g in client.execute_command("GRAPH.LIST")}
        assert "benchtest-locomo-conv-26-agentx" in listed  # another store's graph is left alone
    finally:
        client.execute_command("GRAPH.DELETE", "benchtest-locomo-conv-26-agentx")
        client.close()
