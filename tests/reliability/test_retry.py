"""A retried write gets its first answer: mutating calls are idempotent per request id (issue 12, item 3).

When the daemon dies after a write committed and before its reply, the client starts a new
daemon and retries the call once. Before request ids the retry ran the call again: a ``forget``
answered NotFound, a ``correct`` "superseded", a ``remember`` duplicate=true, a ``dismiss``
halved the link twice and a ``confirm_memory`` counted two confirmations. Now each mutating call
carries a request id (made once per call by ``DaemonClient.call``), the write records its
result in its own transaction, and a repeated id gets that result (``memory/requests.py``).

* in-process: every mutating tool through ``GraphHost.call`` twice with one id (the second
  changes nothing and answers the same), a reused id with other arguments, a failed call, a
  record rolled back with its write, expiry by the sweep and the bound on the table;
* a real daemon, a real store: ``KEYMEM_FAULT_KILL_BEFORE_REPLY`` makes the daemon SIGKILL itself
  after each mutating tool's call returned (committed) and before it writes the reply; the
  client (``DaemonClient``, the bridge's retry) must get the original result for each, and the
  store must hold each write once;
* the same through a real MCP client and the stdio bridge: the agent sees no error.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from keymem.admin.invariants import check_invariants, store_digest
from keymem.errors import InvalidInput, NotFound
from keymem.memory.requests import MUTATING
from keymem.server import client as daemon_client
from keymem.server.host import GraphHost
from keymem.server.protocol import WRITES
from tests.e2e.test_stdio_tools import Session, params
from tests.reliability.conftest import open_graph
from tests.reliability.crashlib import by_content

pytestmark = pytest.mark.timeout(300)


def host_for(graph: Any) -> GraphHost:
    """A GraphHost serving an already open graph (what the daemon's host holds once loaded)."""
    host = GraphHost(graph.settings)
    host.graph, host.state = graph, "ready"
    host._ready.set()
    return host


def requests_rows(graph: Any) -> int:
    return int(graph.store.query("request/count")[0]["n"])


def link_weight(graph: Any, key_id: str, memory_id: str) -> float:
    return float(graph.store.query("link/get", key_id=key_id, memory_id=memory_id)[0]["weight"])


def test_the_client_and_the_store_agree_on_what_is_mutating() -> None:
    assert sorted(WRITES) == sorted(MUTATING)


def test_a_repeated_request_id_gets_the_first_answer_and_changes_nothing(graph: Any) -> None:
    host = host_for(graph)
    seeded = host.call("remember_batch", {"items": [
        {"content": "The deploy runs on Fridays", "keys": ["deploy", "schedule"]},
        {"content": "Alice prefers green tea", "keys": ["Alice", "tea"], "key_types": ["name", "concept"]},
        {"content": "The office is on the third floor", "keys": ["office", "floor"]},
        {"content": "Bob plays the cello", "keys": ["Bob", "cello"], "key_types": ["name", "concept"]},
    ]})["results"]
    deploy, alice, office, bob = (r["memory_id"] for r in seeded)
    tea_key = next(k["key_id"] for k in seeded[1]["keys"] if k["key"] == "tea")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember", {"content": "The cat is called Miso", "keys": ["cat", "pet name"]}),
        ("remember_batch", {"items": [{"content": "Paris trip in May", "keys": ["travel", "Paris"]},
                                      {"content": "Rome trip in June", "keys": ["travel", "Rome"]}]}),
        ("dismiss", {"memory_id": alice, "key_id": tea_key}),
        ("confirm_memory", {"memory_id": office, "evidence": "the user said so today"}),
        ("correct", {"memory_id": deploy, "content": "The deploy runs on Thursdays"}),
        ("forget", {"memory_id": bob}),
    ]
    assert sorted(m for m, _ in calls) == sorted(MUTATING)
    for i, (method, args) in enumerate(calls):
        rid = f"test-request-{i:04d}"
        first = host.call(method, args, None, rid)
        before = store_digest(graph)
        again = host.call(method, args, None, rid)
        assert again == first, method
        assert store_digest(graph) == before, f"the repeated {method} changed the store"
    assert graph.requests.replays == len(calls) and requests_rows(graph) == len(calls)
    # each write happened once
    assert link_weight(graph, tea_key, alice) == pytest.approx(0.5)
    assert graph.store.query("memory/get", id=office)[0]["m"]["confirmation_count"] == 1
    assert len(by_content(graph, ["The cat is called Miso", "Paris trip in May", "Rome trip in June"])) == 3
    assert check_invariants(graph) == []
    # what the retry used to do: a second forget without the id is refused
    with pytest.raises(NotFound):
        host.call("forget", {"memory_id": bob})
    assert graph.requests.replays == len(calls)


def test_reads_and_calls_without_an_id_record_nothing(graph: Any) -> None:
    host = host_for(graph)
    mid = host.call("remember", {"content": "Kuzu is an embedded graph database", "keys": ["Kuzu"]})["memory_id"]
    host.call("read_memory", {"memory_id": mid}, None, "test-request-read")
    host.call("recall", {"query": "graph database"}, None, "test-request-recall")
    assert requests_rows(graph) == 0


def test_a_reused_id_with_other_arguments_is_refused(graph: Any) -> None:
    host = host_for(graph)
    host.call("remember", {"content": "First fact", "keys": ["first"]}, None, "test-request-reuse")
    before = store_digest(graph)
    with pytest.raises(InvalidInput, match="already used for another call"):
        host.call("remember", {"content": "Second fact", "keys": ["second"]}, None, "test-request-reuse")
    with pytest.raises(InvalidInput, match="request_id"):
        host.call("remember", {"content": "Third fact", "keys": ["third"]}, None, "bad id!")
    assert store_digest(graph) == before


def test_a_failed_call_records_nothing_and_its_retry_runs_again(graph: Any) -> None:
    host = host_for(graph)
    mid = host.call("remember", {"content": "The sky is blue", "keys": ["sky"]})["memory_id"]
    with pytest.raises(InvalidInput, match="same as the current version"):
        host.call("correct", {"memory_id": mid, "content": "The sky is blue"}, None, "test-request-fail")
    assert requests_rows(graph) == 0
    with pytest.raises(InvalidInput, match="same as the current version"):  # ran again, refused again
        host.call("correct", {"memory_id": mid, "content": "The sky is blue"}, None, "test-request-fail")
    assert graph.requests.replays == 0


def test_the_record_rolls_back_with_its_write(graph: Any) -> None:
    def failing_write() -> None:
        with graph.store.write() as tx:
            graph.requests.record(tx, {"memory_id": "m_0000000000000000"})
            raise RuntimeError("the write failed after recording")

    with pytest.raises(RuntimeError):
        graph.requests.once("test-request-rollback", "forget", {}, failing_write)
    assert requests_rows(graph) == 0
    assert graph.requests.once("test-request-rollback", "forget", {}, lambda: "ran again") == "ran again"


def test_results_expire_with_the_sweep_and_the_table_is_bounded(graph: Any, clock: Any) -> None:
    host = host_for(graph)
    for i in range(3):
        host.call("remember", {"content": f"Old fact {i}", "keys": ["old"]}, None, f"test-request-old-{i}")
    clock.advance(graph.requests.ttl - 1)
    assert graph.sweep()["requests_expired"] == 0
    clock.advance(2)
    assert graph.sweep()["requests_expired"] == 3 and requests_rows(graph) == 0
    # an expired id is a new call: it runs again (here: a duplicate of what it wrote)
    again = host.call("remember", {"content": "Old fact 0", "keys": ["old"]}, None, "test-request-old-0")
    assert again["duplicate"] is True

    graph.requests.max_rows, graph.requests.slack = 5, 3
    for i in range(12):
        clock.advance(1)
        host.call("remember", {"content": f"New fact {i}", "keys": ["new"]}, None, f"test-request-new-{i}")
        assert requests_rows(graph) < 5 + 3
    newest = {r["id"] for r in graph.store.raw("MATCH (r:Request) RETURN r.id AS id")}
    assert "test-request-new-11" in newest and "test-request-new-0" not in newest
    assert check_invariants(graph) == []


# -- a real daemon killed between commit and reply --------------------------------------------------
def _restarted(km: Any, old_pid: int) -> int:
    info = km.wait_daemon_ready()
    assert int(info["pid"]) != old_pid, "the daemon was not killed before its reply"
    return int(info["pid"])


def kill_before_each_reply(km: Any, embedder: Any, tmp_path: Path, killed: tuple[str, ...]) -> dict[str, float]:
    """Six mutating calls through DaemonClient; the daemon dies after each ``killed`` one committed."""
    km.env = {**km.env, "KEYMEM_FAULT_KILL_BEFORE_REPLY": ",".join(killed)}
    daemon_client.start_daemon(km.settings(), env=km.env).close()
    pid = int(km.wait_daemon_ready()["pid"])
    c = daemon_client.DaemonClient(km.settings(), start=True, env=km.env)
    timings: dict[str, float] = {}

    def call(method: str, args: dict[str, Any]) -> Any:
        nonlocal pid
        t0 = time.monotonic()
        result = c.call(method, args, timeout=120)  # killed after the commit: retried once on a new daemon
        if method in killed:
            timings[method] = round(time.monotonic() - t0, 2)
            pid = _restarted(km, pid)
            assert (km.data_dir / f"fault-{method}.fired").exists()
        return result

    try:
        batch = call("remember_batch", {"items": [
            {"content": "The deploy runs on Fridays", "keys": ["deploy", "schedule"]},
            {"content": "Alice prefers green tea", "keys": ["Alice", "tea"], "key_types": ["name", "concept"]},
            {"content": "The office is on the third floor", "keys": ["office", "floor"]},
        ]})
        assert [r["duplicate"] for r in batch["results"]] == [False, False, False]
        deploy, alice, office = (r["memory_id"] for r in batch["results"])
        tea_key = next(k["key_id"] for k in batch["results"][1]["keys"] if k["key"] == "tea")

        remembered = call("remember", {"content": "Bob plays the cello", "keys": ["Bob", "cello"],
                                       "key_types": ["name", "concept"]})
        assert remembered["duplicate"] is False
        dismissed = call("dismiss", {"memory_id": alice, "key_id": tea_key})
        assert dismissed == {"memory_id": alice, "key_id": tea_key, "link_weight": 0.5}
        confirmed = call("confirm_memory", {"memory_id": office, "evidence": "the user said so today"})
        assert confirmed["memory_id"] == office and confirmed["validity"]["confirmation_count"] == 1
        corrected = call("correct", {"memory_id": deploy, "content": "The deploy runs on Thursdays"})
        assert corrected["supersedes"] == deploy
        forgotten = call("forget", {"memory_id": remembered["memory_id"]})
        assert forgotten == {"memory_id": remembered["memory_id"], "deleted": True}
    finally:
        c.close()
        km.stop_all()

    graph = open_graph(km.settings(), embedder)
    try:
        found = by_content(graph, ["The deploy runs on Fridays", "The deploy runs on Thursdays",
                                   "Alice prefers green tea", "The office is on the third floor",
                                   "Bob plays the cello"])  # each content at most once
        assert set(found) == {"The deploy runs on Fridays", "The deploy runs on Thursdays",
                              "Alice prefers green tea", "The office is on the third floor"}
        new = found["The deploy runs on Thursdays"]
        assert new["id"] == corrected["memory_id"] and new["supersedes"] == deploy and new["active"]
        assert found["The deploy runs on Fridays"]["superseded_by"] == corrected["memory_id"]
        assert found["The office is on the third floor"]["confirmation_count"] == 1
        assert link_weight(graph, tea_key, alice) == pytest.approx(0.5)
        assert requests_rows(graph) == len(MUTATING)
        assert check_invariants(graph) == []
    finally:
        graph.close()
    (tmp_path / "retry_figures.json").write_text(json.dumps({"seconds_per_killed_call": timings}, indent=2))
    print(f"\nretry figures (s per killed call: kill + new daemon + retry): {json.dumps(timings)}")
    return timings


def test_daemon_killed_between_commit_and_reply_answers_the_retry_with_the_original_result(
    km: Any, minilm_embedder: Any, tmp_path: Path,
) -> None:
    timings = kill_before_each_reply(km, minilm_embedder, tmp_path, ("remember", "correct", "forget"))
    assert set(timings) == {"remember", "correct", "forget"}


@pytest.mark.slow
def test_daemon_killed_after_every_mutating_tool(km: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    assert set(kill_before_each_reply(km, minilm_embedder, tmp_path, MUTATING)) == set(MUTATING)


def test_an_agent_sees_the_original_result_through_the_stdio_bridge(km: Any) -> None:
    env = {**km.env, "KEYMEM_FAULT_KILL_BEFORE_REPLY": "forget"}

    async def main() -> None:
        async with Client(params(env), mode="legacy") as c:
            s = Session(c)
            a = await s.ok("remember", {"content": "The printer is on floor two", "keys": ["printer"]})
            b = await s.ok("remember", {"content": "Lunch is at noon", "keys": ["lunch"]})
            pid = km.wait_daemon_ready()["pid"]
            assert await s.ok("forget", {"memory_id": a["memory_id"]}) == {"memory_id": a["memory_id"], "deleted": True}
            _restarted(km, pid)
            assert "does not exist" in await s.err("read_memory", {"memory_id": a["memory_id"]})
            assert (await s.ok("read_memory", {"memory_id": b["memory_id"]}))["content"] == "Lunch is at noon"

    asyncio.run(main())
    assert (km.data_dir / "fault-forget.fired").exists()


def test_the_loop_connection_hands_a_lost_daemon_to_the_retrying_client(
    km: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """``DaemonBackend.call`` reads the answer on the event loop's own connection; a daemon killed
    after the commit and before the reply goes to the blocking client, which starts a new daemon
    and retries with the same request id: the original answer, the write applied once."""
    from keymem.server.backends import DaemonBackend

    for name, value in {**km.env, "KEYMEM_FAULT_KILL_BEFORE_REPLY": "forget"}.items():
        monkeypatch.setenv(name, value)  # the daemon the backend starts reads this environment
    backend = DaemonBackend(km.settings())

    async def main() -> None:
        a = await backend.call("remember", {"content": "The printer is on floor two", "keys": ["printer"]}, None)
        assert backend.client.info is not None  # the first call started and greeted the daemon
        await backend.call("read_memory", {"memory_id": a["memory_id"]}, None)
        assert len(backend.fast._idle) == 1  # answered on the loop's connection, kept for the next call
        pid = km.wait_daemon_ready()["pid"]
        with caplog.at_level("WARNING", logger="keymem.server"):
            assert await backend.call("forget", {"memory_id": a["memory_id"]}, None) == {
                "memory_id": a["memory_id"], "deleted": True}
        assert "lost the keymem daemon during forget" in caplog.text
        _restarted(km, pid)
        with pytest.raises(NotFound):
            await backend.call("read_memory", {"memory_id": a["memory_id"]}, None)
        assert len(backend.fast._idle) == 1  # the new daemon is reached the fast way again

    try:
        asyncio.run(main())
    finally:
        backend.close()
        km.stop_all()
    assert (km.data_dir / "fault-forget.fired").exists()
