"""Load: concurrent clients x mixed operations (recall, read_memory, remember, correct, confirm_memory).

Two ways in:

* ``mcp``: real MCP clients (the ``mcp`` SDK's stdio Client) each starting ``keymem`` over
  stdio, all bridged to ONE shared daemon (real Kuzu, real MiniLM);
* ``threads``: threads calling one in-process MemoryGraph (the daemon's worker pool, without
  the transport).

Each must show zero errors and zero lost writes (every client's last write of every memory is
read back, the set of active memories is exactly the acknowledged one, invariants hold).
p50/p95 per operation are printed (``-s``) and written to ``load_<name>.json`` in the tmp dir.
Default run: 4 clients x 30 operations each way; ``-m slow``: 8 x 250.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants
from tests.reliability.conftest import open_graph
from tests.reliability.loadlib import ClientLog, check_nothing_lost, percentiles


def _report(tmp_path: Path, name: str, logs: list[ClientLog], wall: float, extra: dict[str, Any]) -> dict[str, Any]:
    ops = sum(len(v) for log in logs for v in log.latencies.values())
    figures = {"name": name, "clients": len(logs), "operations": ops, "wall_s": round(wall, 1),
               "ops_per_s": round(ops / wall, 1), "errors": sum(len(log.errors) for log in logs),
               "per_operation": percentiles(logs), **extra}
    (tmp_path / f"load_{name}.json").write_text(json.dumps(figures, indent=2))
    print(f"\nload {name}: {json.dumps(figures)}")
    return figures


# -- threads against one MemoryGraph ------------------------------------------------------------
def run_threads(tmp_path: Path, settings: Any, embedder: Any, clients: int, per_client: int) -> dict[str, Any]:
    graph = open_graph(settings, embedder)
    logs = [ClientLog(i, random.Random(1000 + i)) for i in range(clients)]

    def work(log: ClientLog) -> None:
        for _ in range(per_client):
            op, args = log.next_call()
            t0 = time.perf_counter()
            try:
                result = getattr(graph, op)(**args).dump()
            except Exception as exc:  # counted, not raised: the figure is "errors"
                log.errors.append(f"{op}({args}): {type(exc).__name__}: {exc}")
                continue
            log.record(op, args, result, time.perf_counter() - t0)

    t0 = time.monotonic()
    threads = [threading.Thread(target=work, args=(log,)) for log in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    try:
        assert [e for log in logs for e in log.errors] == []
        active = {r["id"] for r in graph.store.raw("MATCH (m:Memory) WHERE m.active RETURN m.id AS id")}

        def read(mid: str) -> dict[str, Any] | None:
            rows = graph.store.query("memory/get", id=mid)
            return rows[0]["m"] if rows else None

        kept = check_nothing_lost(logs, read, active)
        assert check_invariants(graph) == []
    finally:
        graph.close()
    return _report(tmp_path, f"threads_{clients}x{per_client}", logs, wall, {"memories_checked": kept})


def test_load_threads_small(tmp_path: Path, settings: Any, minilm_embedder: Any) -> None:
    f = run_threads(tmp_path, settings, minilm_embedder, 4, 30)
    assert f["operations"] == 120 and f["errors"] == 0


@pytest.mark.slow
def test_load_threads_full(tmp_path: Path, settings: Any, minilm_embedder: Any) -> None:
    f = run_threads(tmp_path, settings, minilm_embedder, 8, 250)
    assert f["operations"] == 2000 and f["errors"] == 0


# -- real MCP stdio clients through one daemon --------------------------------------------------
def run_mcp(tmp_path: Path, km: Any, minilm_embedder: Any, clients: int, per_client: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from keymem.server import client as daemon_client
    from tests.e2e.support import SERVER_CMD

    params = StdioServerParameters(command=SERVER_CMD[0], args=SERVER_CMD[1:], env=km.env)
    logs = [ClientLog(i, random.Random(2000 + i)) for i in range(clients)]

    async def one(log: ClientLog) -> None:
        async with Client(params, mode="legacy") as c:
            for _ in range(per_client):
                op, args = log.next_call()
                t0 = time.perf_counter()
                r = await c.call_tool(op, args)
                dt = time.perf_counter() - t0
                if r.is_error:
                    log.errors.append(f"{op}({args}): {r.content[0].text}")  # type: ignore[union-attr]
                    continue
                log.record(op, args, r.structured_content, dt)  # type: ignore[arg-type]

    async def main() -> None:
        await asyncio.gather(*(one(log) for log in logs))

    t0 = time.monotonic()
    asyncio.run(main())
    wall = time.monotonic() - t0
    assert [e for log in logs for e in log.errors] == []
    daemons = {km.daemon_pid()}
    assert None not in daemons, "no daemon serves the clients"
    # stop the shared daemon, then check the store in this process
    assert daemon_client.stop(km.settings(), timeout=30)
    settings = km.settings()
    graph = open_graph(settings, minilm_embedder)
    try:
        active = {r["id"] for r in graph.store.raw("MATCH (m:Memory) WHERE m.active RETURN m.id AS id")}

        def read(mid: str) -> dict[str, Any] | None:
            rows = graph.store.query("memory/get", id=mid)
            return rows[0]["m"] if rows else None

        kept = check_nothing_lost(logs, read, active)
        assert check_invariants(graph) == []
    finally:
        graph.close()
    return _report(tmp_path, f"mcp_{clients}x{per_client}", logs, wall, {"memories_checked": kept, "daemons": 1})


def test_load_mcp_small(tmp_path: Path, km: Any, minilm_embedder: Any) -> None:
    f = run_mcp(tmp_path, km, minilm_embedder, 4, 30)
    assert f["operations"] == 120 and f["errors"] == 0


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_load_mcp_full(tmp_path: Path, km: Any, minilm_embedder: Any) -> None:
    f = run_mcp(tmp_path, km, minilm_embedder, 8, 250)
    assert f["operations"] == 2000 and f["errors"] == 0
