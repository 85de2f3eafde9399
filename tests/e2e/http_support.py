"""A real ``keymem serve --http`` for tests: started on a free loopback port, stopped with its daemon.

    with http_server(km) as (url, proc):          # url: http://127.0.0.1:PORT/mcp
        token = make_token(km, "alice", "--read-only")

The server's stdout and stderr go to ``<km.data_dir.parent>/serve-PORT.log`` (a file, so a chatty
server never blocks on a full pipe); a server that exits or does not answer ``GET /health`` in time
fails the test with the end of that log.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from tests.conftest_engines import stop_process
from tests.e2e.support import SERVER_CMD, Keymem


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_token(km: Keymem, name: str, *flags: str) -> str:
    """``keymem token create NAME FLAGS...`` in ``km``'s data dir; the secret (its last stdout line)."""
    out = subprocess.run([*SERVER_CMD, "token", "create", name, *flags], env=km.env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return out.strip().splitlines()[-1]


def log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


@contextlib.contextmanager
def http_server(km: Keymem, *args: str, port: int | None = None, extra_args: Sequence[str] = (),
                env: dict[str, str] | None = None, timeout: float = 60.0,
                stop_daemon: bool = True) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``keymem serve --http 127.0.0.1:PORT ARGS... EXTRA_ARGS...`` until ``GET /health`` answers 200.

    Yields the MCP endpoint's URL (``https`` when ``--tls-cert`` is among the options) and the
    process. Afterwards the server is terminated (SIGKILL if it lingers) and, with ``stop_daemon``,
    the daemon it started (``km.stop_all()``).
    """
    port = port or free_port()
    options = [*args, *extra_args]
    scheme = "https" if "--tls-cert" in options else "http"
    base = f"{scheme}://127.0.0.1:{port}"
    log = km.data_dir.parent / f"serve-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    context = ssl._create_unverified_context() if scheme == "https" else None  # a test's self-signed cert
    with open(log, "wb") as sink:
        proc = subprocess.Popen([*SERVER_CMD, "serve", "--http", f"127.0.0.1:{port}", *options],
                                env=env or km.env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"keymem serve exited with {proc.returncode}:\n{log_tail(log)}")
            with contextlib.suppress(OSError), \
                    urllib.request.urlopen(f"{base}/health", timeout=2, context=context) as answer:
                if answer.status == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"keymem serve did not answer GET /health in {timeout:.0f} s:\n{log_tail(log)}")
            time.sleep(0.1)
        yield f"{base}/mcp", proc
    finally:
        stop_process(proc, timeout=15)
        if stop_daemon:
            km.stop_all()


async def mcp_session(url: str, token: str | None, fn: Callable[[Any], Awaitable[Any]], verify: Any = True) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (httpx2.AsyncClient(headers=headers, timeout=120, verify=verify) as hc,
                streamable_http_client(url, http_client=hc) as (read, write, *_),
                ClientSession(read, write) as session):
        await session.initialize()
        return await fn(session)


def call(url: str, token: str, tool: str, args: dict[str, Any], verify: Any = True) -> Any:
    """One tool call on a new connection (a new MCP session): (is_error, text, structured)."""
    async def go(s: Any) -> Any:
        return await s.call_tool(tool, args)

    res = anyio.run(mcp_session, url, token, go, verify)
    return res.is_error, res.content[0].text, res.structured_content
