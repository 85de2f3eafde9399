"""Two fronts on one FalkorDB store: two daemons (their own data dirs, models and indexes) on one
``KEYMEM_STORE_URL``, each behind a real MCP stdio client (issue 39, "Many daemons, one store").

Real FalkorDB server (tests/conftest_engines.py), real daemons, real MiniLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from mcp import Client

from tests.conftest_engines import FalkorServer, drop_graphs
from tests.e2e.support import Keymem, keymem_env, private_dir
from tests.e2e.test_stdio_tools import Session, params

pytestmark = pytest.mark.timeout(180)


class Fronts:
    def __init__(self, server: FalkorServer, graph: str, a: Keymem, b: Keymem) -> None:
        self.server, self.graph, self.a, self.b = server, graph, a, b

    def redis(self) -> redis.Redis:
        return redis.Redis(host=self.server.host, port=self.server.port)

    def count(self, content: str) -> int:
        """Memories in the store holding exactly ``content`` (read straight from the server)."""
        reply = self.redis().execute_command("GRAPH.QUERY", self.graph,
                                             f"MATCH (m:Memory) WHERE m.content = '{content}' RETURN count(m)")
        return int(reply[1][0][0])


@contextlib.contextmanager
def _fronts(server: FalkorServer, minilm_dir: Path, **extra: str) -> Iterator[Fronts]:
    graph = f"t{uuid.uuid4().hex[:12]}"
    url = server.url(graph)
    with private_dir() as da, private_dir() as db:
        a = Keymem(da / "data", keymem_env(da / "data", minilm_dir, KEYMEM_STORE_URL=url, **extra))
        b = Keymem(db / "data", keymem_env(db / "data", minilm_dir, KEYMEM_STORE_URL=url, **extra))
        try:
            yield Fronts(server, graph, a, b)
        finally:
            a.stop_all()
            b.stop_all()
            drop_graphs(server, graph)


@pytest.fixture
def fronts(falkordb_server: FalkorServer, minilm_dir: Path) -> Iterator[Fronts]:
    with _fronts(falkordb_server, minilm_dir) as f:
        yield f


@pytest.fixture
def namespace_fronts(falkordb_server: FalkorServer, minilm_dir: Path) -> Iterator[Fronts]:
    """Two fronts on a store that keeps each namespace in its own graph."""
    with _fronts(falkordb_server, minilm_dir, KEYMEM_FALKORDB_GRAPHS="namespace") as f:
        yield f


async def _open(km: Keymem, stack: contextlib.AsyncExitStack) -> Session:
    return Session(await stack.enter_async_context(Client(params(km.env), mode="legacy")))


async def _two(f: Fronts, stack: contextlib.AsyncExitStack) -> tuple[Session, Session]:
    """Both fronts, the first one's daemon ready before the second opens the store."""
    a = await _open(f.a, stack)
    await a.ok("browse_keys", {})
    b = await _open(f.b, stack)
    await b.ok("browse_keys", {})
    assert f.a.wait_daemon_ready()["pid"] != f.b.wait_daemon_ready()["pid"]
    return a, b


def test_a_remember_on_one_front_is_recalled_on_the_other_within_a_second(fronts: Fronts) -> None:
    lags: list[float] = []

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(fronts, stack)
            for i in range(8):
                (w, r) = (a, b) if i % 2 == 0 else (b, a)
                made = await w.ok("remember", {"content": f"Relay station {i} sits on ridge R{i * 7}",
                                               "keys": [f"relay station {i}", "ridges"]})
                acked = time.monotonic()
                while True:
                    found = await r.ok("recall", {"query": f"relay station {i}"})
                    if made["memory_id"] in str(found):
                        break
                    assert time.monotonic() - acked < 1.0, f"front did not see {made['memory_id']} within 1 s"
                lags.append(time.monotonic() - acked)
            # both fronts hold the same memories, keys and counts
            assert (await a.ok("browse_keys", {"limit": 50})) == (await b.ok("browse_keys", {"limit": 50}))

    asyncio.run(main())
    print(f"\ncross-front visibility (recall on the other front finds the write): median "
          f"{statistics.median(lags) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms")


def test_both_fronts_write_at_once_and_every_acknowledged_write_is_there_once(fronts: Fronts) -> None:
    acked: dict[str, str] = {}

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(fronts, stack)

            async def write(s: Session, tag: str) -> None:
                for j in range(10):
                    content = f"{tag} note {j}: crate {j} holds {j * 11} bolts"
                    r = await s.ok("remember", {"content": content, "keys": [f"crate {j}", "bolts", f"{tag} notes"]})
                    acked[r["memory_id"]] = content

            await asyncio.gather(write(a, "north"), write(b, "south"))
            browsed = []
            for s in (a, b):
                for mid, content in acked.items():
                    assert (await s.ok("read_memory", {"memory_id": mid}))["content"] == content
                browsed.append((await s.ok("browse_keys", {"limit": 100}))["keys"])
                texts = [k["key"] for k in browsed[-1]]
                assert len(texts) == len(set(texts))  # a key both fronts named at once is one key
                assert {k["key"]: k["memory_count"] for k in browsed[-1]}["bolts"] == 20
            assert browsed[0] == browsed[1]
    asyncio.run(main())
    assert len(acked) == 20
    for content in acked.values():
        assert fronts.count(content) == 1


def test_a_front_killed_mid_write_loses_nothing_acknowledged_and_blocks_nobody(fronts: Fronts) -> None:
    lease = "{" + fronts.graph + "}:writer"

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(fronts, stack)
            before = [await a.ok("remember", {"content": f"Acknowledged {i} before the kill", "keys": ["kill test"]})
                      for i in range(3)]
            pid = fronts.a.wait_daemon_ready()["pid"]
            items = [{"content": f"batch item {i}: shelf {i} holds part P{i}", "keys": [f"shelf {i}", "parts"]}
                     for i in range(400)]
            batch = asyncio.ensure_future(a.client.call_tool("remember_batch", {"items": items}))
            r = fronts.redis()
            deadline = time.monotonic() + 30
            while not r.get(lease):  # the batch's scope holds the writer lease: kill it there
                assert time.monotonic() < deadline, "the batch never took the writer lease"
                await asyncio.sleep(0.002)
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            assert r.pttl(lease) > 0  # the dead front still holds it: the other front's write waits it out
            after = await b.ok("remember", {"content": "Written on the other front after the kill",
                                            "keys": ["kill test"]})
            assert time.monotonic() - killed < 5.0, "the dead front's lease blocked the other front too long"
            for made in [*before, after]:
                assert (await b.ok("read_memory", {"memory_id": made["memory_id"]}))["memory_id"] == made["memory_id"]
            done = await batch  # the stdio server starts a new daemon and retries once, with its request id
            assert not done.is_error, done.content[0].text
            landed = [fronts.count(str(item["content"])) for item in items]
            assert landed == [1] * len(items)  # the retry wrote the batch once, whatever the kill left
            found = await b.ok("recall", {"query": "shelf 399 parts"})
            assert "P399" in str(found)

    asyncio.run(main())


def test_hebbian_reads_from_both_fronts_both_count(fronts: Fronts) -> None:
    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(fronts, stack)
            made = await a.ok("remember", {"content": "The Vega line is serviced on Tuesdays", "keys": ["Vega line"]})
            key = made["keys"][0]["key_id"]
            mid = made["memory_id"]
            views: list[Any] = await asyncio.gather(*(s.ok("read_memory", {"memory_id": mid, "via_key_id": key})
                                                      for s in (a, b)))
            assert max(v["keys"][0]["link_weight"] for v in views) == 1.2  # the later of the two saw both
            for s in (a, b):
                view = await s.ok("read_memory", {"memory_id": mid})
                assert view["keys"][0]["link_weight"] == 1.2  # 1.0 + two steps of 0.1: neither update lost

    asyncio.run(main())


def test_a_request_id_retried_on_the_other_front_writes_once(fronts: Fronts) -> None:
    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(fronts, stack)
            args = {"content": "The Hanoi depot opens at 07:30", "keys": ["Hanoi depot"]}
            meta = {"keymem/request_id": f"fronts-{uuid.uuid4().hex[:12]}"}
            first = await a.client.call_tool("remember", args, meta=meta)
            again = await b.client.call_tool("remember", args, meta=meta)
            assert not first.is_error and not again.is_error
            assert again.structured_content == first.structured_content
            assert again.structured_content["duplicate"] is False  # the first answer, not a duplicate's
            # the same id at once on both fronts: one runs, the other is answered from it
            args2 = {"content": "The Quito depot opens at 08:00", "keys": ["Quito depot"]}
            meta2 = {"keymem/request_id": f"fronts-{uuid.uuid4().hex[:12]}"}
            both = await asyncio.gather(*(s.client.call_tool("remember", args2, meta=meta2)
                                          for s in (a, b)))
            assert both[0].structured_content == both[1].structured_content
            assert both[0].structured_content["duplicate"] is False

    asyncio.run(main())
    assert fronts.count("The Hanoi depot opens at 07:30") == 1
    assert fronts.count("The Quito depot opens at 08:00") == 1


def test_fronts_on_a_graph_per_namespace_serve_each_namespace_from_its_graph(namespace_fronts: Fronts) -> None:
    f = namespace_fronts

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            a, b = await _two(f, stack)
            team_a = await a.ok("remember", {"content": "Team A ships the billing service", "keys": ["billing"],
                                             "namespace": "team-a"})
            team_b = await a.ok("remember", {"content": "Team B owns the search cluster", "keys": ["search cluster"],
                                             "namespace": "team-b"})
            # the other front finds a namespace made after it opened, by recall within it and by id
            assert (await b.ok("recall", {"query": "search cluster", "namespace": "team-a"}))["memory"] is None
            found = await b.ok("recall", {"query": "search cluster", "namespace": "team-b"})
            assert found["memory"]["memory_id"] == team_b["memory_id"]
            read = await b.ok("read_memory", {"memory_id": team_b["memory_id"]})
            assert (read["namespace"], read["content"]) == ("team-b", "Team B owns the search cluster")
            await b.ok("forget", {"memory_id": team_a["memory_id"]})
            assert "does not exist" in await a.err("read_memory", {"memory_id": team_a["memory_id"]})

    asyncio.run(main())
    made = set(f.server.graphs())
    assert {f"{f.graph}:default", f"{f.graph}:team-a", f"{f.graph}:team-b"} <= made and f.graph not in made
