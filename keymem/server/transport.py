"""The MCP stdio transport, with an answer for every line.

The mcp SDK's stdio transport parses each stdin line with pydantic and, when that fails,
hands the exception to the server, which logs it and answers nothing: a request with a lone
surrogate escape in any string (``"\\ud800"``, which JavaScript's ``JSON.stringify`` emits for
a broken pair) left its client waiting forever although its id was readable, and a line that
is not JSON got no parse error either. :func:`stdio_transport` reads stdin itself, checks
each line with :func:`check_line` and passes only lines the SDK will accept; for the others
it writes the JSON-RPC error:

* not JSON, or an id that is not valid Unicode: ``-32700`` (parse error), id null;
* JSON with a readable id and a string that is not valid Unicode (a lone surrogate, or bytes
  that are not UTF-8): ``-32602`` (invalid params) naming the field, e.g.
  ``params.arguments.content``;
* JSON that is no valid request otherwise: ``-32600`` (invalid request), with the id when it
  is readable, else null.

Blank lines are skipped; a malformed notification or response (no id to answer) is logged and
dropped, as JSON-RPC has no reply for it. Stdout is still the SDK's (``stdio_server``): the
errors go through its writer, so lines never interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from keymem.server.protocol import _bad_char, bad_unicode, parse_line

log = logging.getLogger("keymem.server")

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = types.PARSE_ERROR, types.INVALID_REQUEST, types.INVALID_PARAMS
DRAIN_S = 5.0  # how long a closing transport waits to write the errors still queued


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": rid, "code": code, "message": message}


def check_line(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """(the line for the SDK, or None; the error to answer, or None) for one stdin line."""
    line = raw.strip()
    if not line:
        return None, None
    reason: Any = None
    try:
        text = line.decode("utf-8")
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        return text, None
    except ValueError as exc:  # not UTF-8, or pydantic's ValidationError (a ValueError too)
        reason = exc
    try:
        obj = parse_line(line)
    except ValueError as exc:
        return None, _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc.__class__.__name__}: "
                                               f"{str(exc).encode('ascii', 'backslashreplace').decode()})")
    if not isinstance(obj, dict):
        return None, _error(None, INVALID_REQUEST,
                            "Invalid request: a message must be one JSON object (batches are not supported)")
    rid = obj.get("id")
    if "id" not in obj or ("method" not in obj and ("result" in obj or "error" in obj)):
        log.warning("dropped a malformed message with no id to answer (a notification or a response)")
        return None, None
    if isinstance(rid, str) and _bad_char(rid):
        return None, _error(None, PARSE_ERROR, "Parse error: the request id is not valid Unicode")
    if not (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        return None, _error(None, INVALID_REQUEST, "Invalid request: the id must be a string or an integer")
    found = bad_unicode(obj)
    if found:
        where, what = found
        return None, _error(rid, INVALID_PARAMS, f"Invalid params: {where} contains {what}; send valid Unicode")
    first = reason.errors()[0] if hasattr(reason, "errors") and reason.errors() else None  # type: ignore[union-attr]
    detail = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else str(reason)
    return None, _error(rid, INVALID_REQUEST, f"Invalid request: {detail.encode('ascii', 'backslashreplace').decode()}")


class CheckedLines:
    """Stdin lines for the SDK's reader: each one checked, the refused ones answered instead."""

    def __init__(self, source: Any, errors: MemoryObjectSendStream[dict[str, Any]]) -> None:
        self._source = source
        self._errors = errors

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await self._source.readline()
            if not raw:
                await self._errors.aclose()
                raise StopAsyncIteration
            text, error = check_line(raw)
            if error is not None:
                log.warning("answered a malformed line with JSON-RPC error %d: %s", error["code"], error["message"])
                await self._errors.send(error)
            if text is not None:
                return text


def _claim_stdin() -> tuple[int, int]:
    """(a private duplicate of fd 0, fd 0's original) with fd 0 pointed at the null device.

    Children and stray reads then get EOF instead of consuming the protocol (the SDK does the
    same for the stdin it reads itself).
    """
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return private, 0


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[tuple[Any, Any]]:
    """``stdio_server`` with :class:`CheckedLines` as its stdin: (read stream, write stream)."""
    private, fd = _claim_stdin()
    source = anyio.wrap_file(os.fdopen(private, "rb", buffering=1 << 16, closefd=False))
    send_errors, errors = anyio.create_memory_object_stream[dict[str, Any]](256)
    try:
        async with stdio_server(stdin=CheckedLines(source, send_errors)) as (read_stream, write_stream):  # type: ignore[arg-type]
            answers = write_stream.clone()  # its own handle: the server closes the original when it stops
            done = anyio.Event()

            async def answer() -> None:
                try:
                    async with errors:
                        async for e in errors:
                            await answers.send(SessionMessage(types.JSONRPCError(
                                jsonrpc="2.0", id=e["id"], error=types.ErrorData(code=e["code"], message=e["message"]))))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                finally:
                    answers.close()
                    done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(answer)
                yield read_stream, write_stream
                with anyio.move_on_after(DRAIN_S):
                    await done.wait()
                tg.cancel_scope.cancel()
    finally:  # the private fd stays open: a worker thread may still block reading it
        with contextlib.suppress(OSError):
            os.dup2(private, fd)


def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")`` over :func:`stdio_transport` (the SDK's ``run_stdio_async``, re-wired)."""
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async uses it the same way

    async def main() -> None:
        async with stdio_transport() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(main)
