"""A daemon killed while HTTP clients write: no acknowledged write is lost, and the clients see no error.

The HTTP server is a front of the daemon: when the daemon dies it starts a new one and retries the
call in flight with the same request id (docs/reliability.md, "HTTP clients").
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import anyio

from keymem.server import client
from tests.e2e.http_support import http_server, make_token, mcp_session
from tests.e2e.support import Keymem


def test_a_daemon_kill_during_http_writes_loses_no_acknowledged_write(km: Keymem) -> None:
    token = make_token(km, "writer")
    acked: list[str] = []
    errors: list[str] = []
    killed: list[int] = []

    async def writer(url: str, who: int) -> None:
        async def go(s: Any) -> None:
            for i in range(12):
                try:
                    res = await s.call_tool("remember", {"content": f"writer {who} fact {i} about the harbour crane",
                                                         "keys": ["harbour crane", f"writer {who}"]})
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                if res.is_error:
                    errors.append(res.content[0].text)
                else:
                    acked.append(res.structured_content["memory_id"])

        await mcp_session(url, token, go)

    async def kill_after(n: int) -> None:
        while len(acked) < n:
            await anyio.sleep(0.01)
        pid = km.daemon_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    async def main(url: str) -> None:
        async with anyio.create_task_group() as tg:
            for who in range(3):
                tg.start_soon(writer, url, who)
            tg.start_soon(kill_after, 8)

    with http_server(km) as (url, _):
        km.wait_daemon_ready()
        t0 = time.monotonic()
        anyio.run(main, url)
        elapsed = time.monotonic() - t0
        assert killed, "the daemon was not killed"
        assert errors == [], errors
        assert len(acked) == 36 and len(set(acked)) == 36
        new_pid = km.wait_daemon_ready()["pid"]
        assert new_pid != killed[0]
        c = client.DaemonClient(km.settings(), start=False)
        try:
            for mid in acked:
                assert c.call("read_memory", {"memory_id": mid})["memory_id"] == mid
            assert c.call("counts")["memories"] == 36  # each write applied once
        finally:
            c.close()
    assert elapsed < 120
