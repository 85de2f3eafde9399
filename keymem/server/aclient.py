"""The event loop's own connections to the shared daemon: a tool call with no bridge thread.

A front that serves many clients in one process (``keymem serve --http``) handed each call to a
bridge thread that blocked on the daemon's socket; under load every answer then waited for that
thread, then for the event loop, to get the GIL back (5 ms at the median, 11 at p95, measured
in docs/BENCHMARKS.md 0h). Here the call is written and its answer read on the loop itself.

Only the ordinary case runs here: a daemon that is up and answers. Anything else (no daemon yet,
a connection refused or reset, a daemon restarted under us) goes to the blocking
:class:`~keymem.server.client.DaemonClient` on a thread, which starts a daemon and retries the
call once with the same request id, so a write that committed is answered, not redone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

from keymem.server.protocol import (
    MAX_MESSAGE_BYTES,
    ProtocolError,
    Unauthorized,
    parse_line,
    read_token,
    request_line,
    settle,
    socket_address,
)
from keymem.settings import Settings

IDLE_CONNECTIONS = 8


class Fallback(Exception):
    """The fast path cannot answer this call; the blocking client must (it restarts and retries)."""


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str) -> None:
        self.reader, self.writer, self.token = reader, writer, token

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class AsyncDaemonConnections:
    """A pool of asyncio connections to one daemon, used from one event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._idle: list[_Conn] = []
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None) -> Any:
        """The daemon's result, or its error raised as keymem's exception; :class:`Fallback` when the
        daemon could not be reached or was lost (``request_id`` then says whether a write ran)."""
        conn = await self._checkout()
        try:
            conn.writer.write(request_line(next(self._ids), conn.token, method, params, source, request_id))
            await conn.writer.drain()
            line = await conn.reader.readuntil(b"\n")
            resp = parse_line(line[:-1])
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            conn.close()
            self.close()  # the others point at the same (lost) daemon
            raise Fallback(f"{type(exc).__name__}: {exc}") from None
        except BaseException:  # cancelled mid-call: this connection's state is unknown
            conn.close()
            raise
        if not isinstance(resp, dict):
            conn.close()
            raise ProtocolError("the daemon answered with something that is not a JSON object")
        try:
            return settle(resp, lambda: self._checkin(conn), conn.close)
        except Unauthorized:  # a daemon restarted between connect and token read
            raise Fallback("the daemon did not know this connection's token") from None

    async def _checkout(self) -> _Conn:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections belong to the loop that opened them
            self.close()
            self._loop = loop
        if self._idle:
            return self._idle.pop()
        try:
            reader, writer = await asyncio.open_unix_connection(
                socket_address(self.settings.socket_path), limit=MAX_MESSAGE_BYTES)
        except OSError as exc:
            raise Fallback(f"{type(exc).__name__}: {exc}") from None
        try:
            token = read_token(self.settings.data_dir)  # after connecting: the live daemon wrote it before binding
        except BaseException as exc:
            writer.close()
            raise Fallback(f"no daemon token: {exc}") from None
        return _Conn(reader, writer, token)

    def _checkin(self, conn: _Conn) -> None:
        if len(self._idle) < IDLE_CONNECTIONS:
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

