"""The memory from a shell: ``keymem remember``, ``recall``, ``read``, ``read-key``, ``forget``, ``keys``.

Each command calls the MCP tool of its name in this process (:func:`keymem.server.tools.build_server`)
over the backend an MCP session uses: the shared daemon, started when none runs, or the store
opened here with ``KEYMEM_DAEMON=off``. So a person gets what an agent gets: the same argument
checks and one-line errors (exit 2 for a refused argument, 1 for anything else, nothing written),
and the same compact text; ``--json`` prints the structured result instead.

The MCP SDK is imported only when a command runs (``--help`` stays light).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from keymem.cli.common import fail, settings_or_exit

KEY_TYPES = ("concept", "name", "proper_noun")
JsonOption = Annotated[bool, typer.Option("--json", help="Print the structured result (JSON) instead of the text")]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace (default: default)")]


class _Watched:
    """A backend that remembers whether the call reached it and how it failed (for the exit code)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.reached = False
        self.error: BaseException | None = None

    def start(self) -> None:
        self.backend.start()

    def kick(self) -> None:
        self.backend.kick()

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None = None) -> Any:
        self.reached = True
        try:
            return await self.backend.call(method, params, source, request_id)
        except BaseException as exc:
            self.error = exc
            raise

    def counts(self, timeout: float) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self.backend.counts(timeout)
        return result

    def close(self) -> None:
        self.backend.close()

    def __getattr__(self, name: str) -> Any:  # what a backend may add (the daemon bridge's session notes)
        return getattr(self.backend, name)


def call_tool(tool: str, arguments: dict[str, Any], *, as_json: bool) -> None:
    """Run one MCP tool as a session would and print its text (or its structured result)."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult

    from keymem.errors import InvalidInput
    from keymem.server.backends import DaemonBackend, LocalBackend
    from keymem.server.tools import build_server

    settings = settings_or_exit()
    quiet_logging()
    backend = _Watched(LocalBackend(settings) if settings.daemon == "off" else DaemonBackend(settings))
    try:
        server = build_server(settings, backend)
        result = asyncio.run(server.call_tool(tool, {k: v for k, v in arguments.items() if v is not None}))
    except ToolError as exc:
        refused = not backend.reached or isinstance(backend.error, InvalidInput)
        raise fail(str(exc), code=2 if refused else 1) from None
    finally:
        backend.close()
    if not isinstance(result, CallToolResult):  # keymem's tools ask the client nothing
        raise fail(f"{tool}: unexpected answer {type(result).__name__}")
    if as_json:  # the notes a session's first result carries go to stderr
        for block in result.content:
            for line in getattr(block, "text", "").splitlines():
                if line.startswith("note: "):
                    typer.echo(f"keymem: {line}", err=True)
        typer.echo(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    else:
        typer.echo("\n".join(getattr(block, "text", "") for block in result.content))


def quiet_logging() -> None:
    """Only errors from the loggers, as one ``keymem:`` line each: what the daemon needs to say reaches
    the user in the tool's notes (the MCP SDK would otherwise show its INFO lines in Rich boxes)."""
    import logging

    logging.basicConfig(level=logging.ERROR, format="keymem: %(message)s", force=True)


def _key_types(items: list[str] | None) -> dict[str, str] | None:
    """``--key-type KEY=TYPE`` options as the tool's key -> type map."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, kind = item.rpartition("=")
        if not sep or not key:
            from keymem.errors import shown

            raise fail(f"--key-type {shown(item)}: give KEY=TYPE, TYPE one of {', '.join(KEY_TYPES)}", code=2)
        out[key] = kind
    return out


def remember(
    content: Annotated[str, typer.Argument(help="The fact, self-contained; - reads it from stdin")],
    key: Annotated[list[str] | None, typer.Option("--key", "-k", help="A key to store it under (repeat: 3-6 "
                                                                      "diverse keys)")] = None,
    key_type: Annotated[list[str] | None, typer.Option(
        "--key-type", metavar="KEY=TYPE", help="A key's type: concept (default; by meaning), name (people), "
                                               "proper_noun (places, brands: exact); repeatable")] = None,
    namespace: NamespaceOption = None,
    ttl: Annotated[float | None, typer.Option("--ttl", help="Expire after this many seconds")] = None,
    decay: Annotated[str | None, typer.Option(
        "--decay", help="Half-life: transient 7 d, standard 90 d (default), stable 365 d, permanent")] = None,
    related: Annotated[list[str] | None, typer.Option("--related", help="A related memory id; repeatable")] = None,
    as_json: JsonOption = False,
) -> None:
    """Store a fact under keys, as the remember tool does (an identical active fact: its id)."""
    if content == "-":
        content = sys.stdin.read().strip()
    call_tool("remember", {"content": content, "keys": key, "key_types": _key_types(key_type),
                           "namespace": namespace, "ttl_seconds": ttl, "decay_profile": decay,
                           "related_to": related}, as_json=as_json)


def recall(
    query: Annotated[str, typer.Argument(help="Short noun keywords, e.g. \"user pets\"")],
    top_k: Annotated[int | None, typer.Option("--top-k", help="Most keys (default 5)")] = None,
    namespace: NamespaceOption = None,
    context: Annotated[str | None, typer.Option("--context", help="The raw question, to rank by")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Also show per-namespace counts")] = False,
    budget: Annotated[int | None, typer.Option("--budget", help="Most tokens of the result (default 500)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Keys and memories for a query: the lines an agent's recall gets. Changes nothing."""
    call_tool("recall", {"query": query, "top_k": top_k, "namespace": namespace, "context": context,
                         "explain": explain or None, "budget": budget}, as_json=as_json)


def read(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id (m_...)")],
    via: Annotated[str | None, typer.Option("--via", help="Key id you came through (strengthens that link)")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """A memory's full text, keys and validity (read_memory; records the access, confirms nothing)."""
    call_tool("read_memory", {"memory_id": memory_id, "via_key_id": via, "namespace": namespace}, as_json=as_json)


def read_key(
    key: Annotated[str, typer.Argument(metavar="KEY", help="Key id (k_...) or a key's exact text")],
    query: Annotated[str | None, typer.Option("--query", "-q", help="The question, to rank by")] = None,
    namespace: NamespaceOption = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Most memories (default 10)")] = None,
    offset: Annotated[int | None, typer.Option("--offset", help="Memories to skip")] = None,
    as_json: JsonOption = False,
) -> None:
    """One key's memories, best first, each with its other keys (read_key)."""
    call_tool("read_key", {"key_id": key, "query": query, "namespace": namespace, "limit": limit,
                           "offset": offset}, as_json=as_json)


def forget(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id (m_...)")],
    as_json: JsonOption = False,
) -> None:
    """Delete a memory permanently, with its previous versions (forget)."""
    call_tool("forget", {"memory_id": memory_id}, as_json=as_json)


def keys(
    namespace: NamespaceOption = None,
    hubs: Annotated[bool, typer.Option("--hubs", help="Only hub keys")] = False,
    limit: Annotated[int | None, typer.Option("--limit", help="Most keys (default 50)")] = None,
    offset: Annotated[int | None, typer.Option("--offset", help="Keys to skip")] = None,
    as_json: JsonOption = False,
) -> None:
    """A namespace's key vocabulary, hubs first (browse_keys)."""
    call_tool("browse_keys", {"namespace": namespace, "hubs_only": hubs or None, "limit": limit,
                              "offset": offset}, as_json=as_json)
