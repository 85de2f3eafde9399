"""The MCP surface: exactly ten tools, the ``memory_system_prompt`` prompt, live instructions.

Thin by design: pydantic argument models give agents types, bounds and descriptions; the
call goes to a backend (daemon or in-process graph) whose domain re-validates everything;
a :class:`~keymem.errors.KeymemError` becomes an ``isError`` result carrying its message.
Arguments that fail the model, and arguments the tool does not have, are refused with one
line naming the argument, what was wrong and what is allowed (:mod:`keymem.server.arguments`).
Results are the domain's view models: ``structuredContent`` plus the same JSON as text.

No ``from __future__ import annotations`` here: the tools are closures over the settings
(bounds such as the content limit come from them), and the SDK evaluates annotations.
"""

import asyncio
import contextvars
import time
from typing import Annotated, Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from keymem import __version__
from keymem.errors import KeymemError, shown
from keymem.memory.views import (
    MAX_SEEN,
    BatchResult,
    BrowseResult,
    CorrectResult,
    DismissResult,
    ForgetResult,
    MemoryView,
    ReadKeyResult,
    RecallResult,
    RememberResult,
)
from keymem.server import arguments as keymem_arguments
from keymem.server import provenance, texts
from keymem.server.backends import Backend
from keymem.server.protocol import WRITES, DaemonUnavailable
from keymem.server.render import render
from keymem.server.session import SEEN_TOOLS, Delivered, seen_arguments
from keymem.settings import Settings

KeyType = Literal["concept", "name", "proper_noun"]
DecayProfile = Literal["transient", "standard", "stable", "permanent"]
INIT_BUDGET_S = 1.0  # until when (s after start) `initialize` may wait for live counts

MemoryId = Annotated[str, Field(description="Memory id (m_...)")]
KeyId = Annotated[str, Field(description="Key id (k_...)")]
Namespace = Annotated[str | None, Field()]  # "default" when omitted; namespaces never mix
Query = Annotated[str, Field(min_length=1, max_length=4000, description="Short noun keywords, e.g. \"user pets\"")]
KeyTypes = Annotated[
    list[KeyType] | dict[str, KeyType] | None,
    Field(description="Per key: concept (default; by meaning), name (people), proper_noun (places, brands: exact)"),
]
Ttl = Annotated[float | None, Field(gt=0, description="Expire after this many seconds")]  # <= 100 years: domain
Decay = Annotated[
    DecayProfile | None,
    Field(description="Half-life: transient 7 d, standard 90 d (default), stable 365 d"),
]
Related = Annotated[
    list[str] | None,
    Field(max_length=32, description="Related memory ids"),
]
# A session does not pay twice (keymem/server/session.py): what the caller has is held back. Described on
# recall only: the agent reads them once.
IncludeSeen = Annotated[bool, Field(description="Repeat memories already shown")]
Seen = Annotated[list[str] | None, Field(max_length=MAX_SEEN, description="Memory ids you have")]
SeenAgain = Annotated[list[str] | None, Field(max_length=MAX_SEEN)]


class KeymemTool(Tool):
    """A tool whose errors read as one line, ``<tool>: <what was wrong>`` (see :mod:`keymem.server.arguments`).

    The SDK prefixes every error with ``Error executing tool <name>: ``; argument errors are
    rewritten from pydantic's, domain errors (raised as ToolError by ``call``) get the tool's
    name instead of the SDK's prefix, and a crash says only that it happened (details: the log).
    """

    # What the tool accepts, which is more than the published schema says (key_types as a map):
    # errors are worded from it. None: the published schema.
    accepted: dict[str, Any] | None = None

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        schema = self.accepted or self.parameters
        found = keymem_arguments.unknown_arguments(arguments, schema)
        found += keymem_arguments.strings_for_scalars(self.fn_metadata.pre_parse_json(arguments), schema)
        if found:
            try:
                self.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                found += keymem_arguments.problems(exc, arguments, schema)
            raise ToolError(keymem_arguments.join(self.name, found))
        try:
            return await super().run(arguments, context, convert_result)
        except UnexpectedToolError as exc:  # a crash: logged by the SDK with its traceback
            raise UnexpectedToolError(f"{self.name}: internal error (the keymem log has the details)") from (
                exc.__cause__ or exc)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                # from the ValidationError: the SDK logs the rejected field names (never the values)
                raise ToolError(keymem_arguments.describe(self.name, cause, arguments, schema)) from cause
            if isinstance(cause, ToolError):  # a domain error from call(): its own words after the tool's name
                text = str(cause)
                raise ToolError(text if text.startswith(f"{self.name}:") else f"{self.name}: {text}") from cause
            raise


class KeymemServer(MCPServer):
    """The MCP server; a call of a tool it does not have is refused naming its tools."""

    tool_names: tuple[str, ...] = ()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in self.tool_names:
            import difflib

            close = difflib.get_close_matches(name, self.tool_names, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ToolError(f"{shown(name, quoted=False)}: unknown tool{hint}; the tools are {', '.join(self.tool_names)}")
        return await super().call_tool(name, arguments, context)


def _keys(settings: Settings, required: bool) -> Any:
    item = Annotated[str, Field(min_length=1, max_length=200)]
    desc = "3-6 diverse keys: concepts, names, places; add other languages the user uses."
    if not required:
        desc += " Omit to keep the current keys."
    if required:
        return Annotated[list[item], Field(min_length=1, max_length=settings.max_keys, description=desc)]  # type: ignore[valid-type]
    return Annotated[list[item] | None, Field(min_length=1, max_length=settings.max_keys, description=desc)]  # type: ignore[valid-type]


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every local ``$ref`` replaced by its definition (the views are not recursive).

    Clients validate ``structuredContent`` against the output schema on every call, and a
    ``$ref``-free schema is much cheaper for them to check (10x for the Python SDK's jsonschema).
    """
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**defs[ref.removeprefix("#/$defs/")], **siblings})
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def compact_schema(node: Any) -> Any:
    """An input schema without what an agent reads for nothing in every session's context.

    Pydantic's generated titles go, and an optional argument's ``anyOf [T, null]`` with
    ``default: null`` becomes ``T`` (leaving it out is how a client passes null); a flag's
    ``default: false`` goes (a flag is off unless set); bounds, enums, defaults that say
    something and descriptions stay.
    """
    if isinstance(node, list):
        return [compact_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: ({name: compact_schema(p) for name, p in v.items()} if k == "properties" and isinstance(v, dict)
               else compact_schema(v))  # an argument may be named "title"; a schema's title goes
           for k, v in node.items() if k != "title"}
    if out.get("type") == "boolean" and out.get("default", True) is False:
        out.pop("default")
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and out.get("default", 0) is None:
        rest = [o for o in options if o != {"type": "null"}]
        out.pop("anyOf")
        out.pop("default")
        out = {**rest[0], **out} if len(rest) == 1 else {"anyOf": rest, **out}
    return out


REMEMBER_ARGS = ("content", "keys", "key_types", "namespace", "ttl_seconds", "decay_profile", "related_to")


def _arguments(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The argument properties of a tool's input schema and of the models it defines (batch items)."""
    return [node.get("properties", {}) for node in [schema, *schema.get("$defs", {}).values()]]


def undescribe(schema: dict[str, Any], names: tuple[str, ...]) -> None:
    for props in _arguments(schema):
        for name, prop in props.items():
            if name in names:
                prop.pop("description", None)


def publish_key_types_as_list(schema: dict[str, Any]) -> dict[str, Any]:
    """``key_types`` is published as a list aligned with ``keys``; a key -> type map is still accepted."""
    for props in _arguments(schema):
        prop = props.get("key_types")
        if prop and "anyOf" in prop:
            listed = next(o for o in prop.pop("anyOf") if o.get("type") == "array")
            prop.update(listed)
    return schema


def build_server(settings: Settings, backend: Backend, *, started: float | None = None, auth: Any = None,
                 token_verifier: Any = None, one_session: bool = False) -> MCPServer:
    """The MCP server for one process; ``started`` (monotonic) bounds the wait for live counts; ``auth`` and
    ``token_verifier`` (the SDK's) make the HTTP server require bearer tokens (keymem/server/http.py);
    ``one_session``: the process serves one MCP session (stdio), which records the memories it delivered
    and holds them back from later recall and read_key results (keymem/server/session.py)."""
    t0 = time.monotonic() if started is None else started
    content_max = settings.max_content_chars
    Content = Annotated[str, Field(min_length=1, max_length=content_max, description="The fact, self-contained")]
    Keys = _keys(settings, True)
    OptKeys = _keys(settings, False)

    tools: list[Tool] = []

    def tool(annotations: ToolAnnotations, as_remember: bool = False) -> Any:
        """Register a tool; ``as_remember``: its arguments shared with remember go without descriptions
        (the agent reads them once, on remember)."""

        def register(fn: Any) -> Any:
            t = cast(KeymemTool, KeymemTool.from_function(fn, annotations=annotations))
            t.description = " ".join((t.description or "").split())  # a docstring's indentation is not for the model
            t.accepted = compact_schema(t.parameters)
            t.parameters = publish_key_types_as_list(compact_schema(t.parameters))
            if as_remember:
                undescribe(t.parameters, REMEMBER_ARGS)
            t.parameters["additionalProperties"] = False  # unknown arguments are refused (KeymemTool.run)
            if t.fn_metadata.output_schema is not None:  # read live by the SDK (documented)
                t.fn_metadata.output_schema = inline_refs(t.fn_metadata.output_schema)
            tools.append(t)
            return fn

        return register

    session_notes: list[str] | None = None  # said once, in the session's first tool result
    delivered = Delivered() if one_session else None

    async def run(method: str, args: dict[str, Any], *, with_source: bool = False) -> CallToolResult:
        """The call on the backend: compact lines as text (what the model reads), the full result as
        structuredContent (what programs read; keymem/server/render.py)."""
        nonlocal session_notes
        if method in SEEN_TOOLS:
            args = seen_arguments(args, delivered)
        data = await call(method, args, with_source=with_source)
        if delivered is not None:
            delivered.record(method, data)
        text = render(method, data)
        if session_notes is None:  # checked at the first call, not at start: the start path stays light
            session_notes = texts.unavailable_components(settings)
            daemon_notes = getattr(backend, "session_notes", None)  # a stdio bridge's; not over HTTP (no own settings)
            if daemon_notes is not None:
                session_notes += daemon_notes()
            if session_notes:
                text = "\n".join(f"note: {n}" for n in session_notes) + "\n" + text
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    async def call(method: str, args: dict[str, Any], *, with_source: bool = False) -> Any:
        params = {k: v for k, v in args.items() if v is not None}
        request_id = _request_id.get() if method in WRITES else None
        source = None
        if with_source:  # file I/O (transcript line count): off the event loop
            source = await asyncio.get_running_loop().run_in_executor(
                None, provenance.resolve_source, settings.transcript_access
            )
        try:
            if request_id is not None:
                from keymem.memory.requests import check_request_id

                check_request_id(request_id)
            return await backend.call(method, params, source, request_id)
        except KeymemError as exc:
            raise ToolError(str(exc)) from None
        except DaemonUnavailable as exc:
            raise ToolError(f"keymem is unavailable: {exc}") from None

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @tool(read_only)
    async def recall(
        query: Query,
        top_k: Annotated[int, Field(ge=1, le=50, description="Most keys")] = 5,
        namespace: Namespace = None,
        context: Annotated[
            str | None, Field(max_length=20_000, description="The raw question or conversation, to rank by")
        ] = None,
        explain: Annotated[bool, Field(description="Also return per-namespace counts")] = False,
        budget: Annotated[int | None, Field(ge=50, le=4000, description="Most tokens of the result (default 500)")] = None,
        include_seen: IncludeSeen = False,
        seen: Seen = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Keys the query routes to, and the best memories within a token budget: direct matches, then
        memories associated through shared keys (marked "via" their key path). Changes nothing. Need
        more? read_key a key."""
        return await run("recall", dict(query=query, top_k=top_k, namespace=namespace, context=context, explain=explain,
                                        budget=budget, include_seen=include_seen, seen=seen))

    @tool(read_only)
    async def browse_keys(
        namespace: Namespace = None,
        hubs_only: Annotated[bool, Field(description="Only hub keys")] = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        offset: Annotated[int, Field(ge=0, le=1_000_000)] = 0,
    ) -> Annotated[CallToolResult, BrowseResult]:
        """A namespace's key vocabulary, hubs first: when recall finds nothing."""
        return await run("browse_keys", dict(namespace=namespace, hubs_only=hubs_only, limit=limit, offset=offset))

    @tool(read_only)
    async def read_key(
        key_id: Annotated[str, Field(description="Key id (k_...) or a key's exact text")],
        query: Annotated[str | None, Field(max_length=4000, description="The question, to rank by")] = None,
        namespace: Namespace = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        offset: Annotated[int, Field(ge=0, le=1_000_000)] = 0,
        include_seen: bool = False,
        seen: SeenAgain = None,
    ) -> Annotated[CallToolResult, ReadKeyResult]:
        """One key's memories, best first, each with its other keys (the next hop); paged."""
        return await run("read_key", dict(key_id=key_id, query=query, namespace=namespace, limit=limit, offset=offset,
                                          include_seen=include_seen, seen=seen))

    @tool(writes)
    async def read_memory(
        memory_id: MemoryId,
        via_key_id: Annotated[str | None, Field(description="Key you came through (strengthens that link)")] = None,
        namespace: Namespace = None,
    ) -> Annotated[CallToolResult, MemoryView]:
        """A memory's full text, keys and validity. Records the access; never confirms the fact."""
        return await run("read_memory", dict(memory_id=memory_id, via_key_id=via_key_id, namespace=namespace))

    @tool(writes)
    async def confirm_memory(
        memory_id: MemoryId,
        evidence: Annotated[str, Field(min_length=1, max_length=4000, description="What confirms the fact now")],
        namespace: Namespace = None,
        source: Annotated[str | None, Field(max_length=500, description="user, a URL, an observation")] = None,
    ) -> Annotated[CallToolResult, MemoryView]:
        """Refresh a memory on explicit current evidence (the user, an authoritative source, direct
        observation). A successful read is not evidence."""
        return await run("confirm_memory", dict(memory_id=memory_id, evidence=evidence, namespace=namespace, source=source))

    @tool(writes)
    async def remember(
        content: Content,
        keys: Keys,  # type: ignore[valid-type]
        key_types: KeyTypes = None,
        namespace: Namespace = None,
        ttl_seconds: Ttl = None,
        decay_profile: Decay = None,
        related_to: Related = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a durable fact under keys (an identical active fact: its id, duplicate=true)."""
        return await run("remember", dict(content=content, keys=keys, key_types=key_types, namespace=namespace,
                                          ttl_seconds=ttl_seconds, decay_profile=decay_profile, related_to=related_to),
                         with_source=True)

    @tool(writes, as_remember=True)
    async def correct(
        memory_id: MemoryId,
        content: Content,
        keys: OptKeys = None,  # type: ignore[valid-type]
        key_types: KeyTypes = None,
        ttl_seconds: Ttl = None,
        decay_profile: Decay = None,
        related_to: Related = None,
        namespace: Namespace = None,
    ) -> Annotated[CallToolResult, CorrectResult]:
        """Replace a fact that changed: the old version stays readable by id but leaves search. Omitted
        keys, TTL and profile carry over."""
        return await run("correct", dict(memory_id=memory_id, content=content, keys=keys, key_types=key_types,
                                         ttl_seconds=ttl_seconds, decay_profile=decay_profile, related_to=related_to,
                                         namespace=namespace), with_source=True)

    @tool(writes)
    async def dismiss(memory_id: MemoryId, key_id: KeyId, namespace: Namespace = None) -> Annotated[CallToolResult, DismissResult]:
        """The fact is right but should not surface from this key: weakens that link."""
        return await run("dismiss", dict(memory_id=memory_id, key_id=key_id, namespace=namespace))

    @tool(ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    async def forget(memory_id: MemoryId) -> Annotated[CallToolResult, ForgetResult]:
        """Delete a memory permanently (with its previous version)."""
        return await run("forget", dict(memory_id=memory_id))

    class RememberItem(BaseModel):
        model_config = ConfigDict(extra="forbid")
        content: Content  # type: ignore[valid-type]
        keys: Keys  # type: ignore[valid-type]
        key_types: KeyTypes = None
        namespace: Namespace = None
        ttl_seconds: Ttl = None
        decay_profile: Decay = None
        related_to: Related = None

    @tool(writes, as_remember=True)
    async def remember_batch(
        items: Annotated[list[RememberItem], Field(min_length=1, max_length=1000)],
    ) -> Annotated[CallToolResult, BatchResult]:
        """Store several facts (each as remember takes it); results in input order."""
        payload = [item.model_dump(exclude_none=True) for item in items]
        return await run("remember_batch", {"items": payload}, with_source=True)

    server = KeymemServer(
        "keymem",
        version=__version__,
        instructions=texts.instructions(None, settings.hook_installed),
        tools=tools,
        auth=auth,
        token_verifier=token_verifier,
    )

    server.tool_names = tuple(t.name for t in tools)

    @server.prompt(name="memory_system_prompt", description="System-prompt template: the keymem recall/remember protocol")
    def memory_system_prompt() -> str:
        return texts.memory_system_prompt(settings.hook_installed)

    async def live_instructions(ctx: Any, call_next: Any) -> Any:
        """Put the store's current counts into the instructions of initialize / server/discover."""
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            budget = min(0.5, max(0.05, INIT_BUDGET_S - (time.monotonic() - t0)))
            loop = asyncio.get_running_loop()
            counts = await loop.run_in_executor(None, backend.counts, budget)
            result["instructions"] = texts.instructions(counts, settings.hook_installed)
            backend.kick()
        return result

    server.middleware.append(live_instructions)
    server.middleware.append(request_ids)
    return server


REQUEST_ID_META = "keymem/request_id"
_request_id: contextvars.ContextVar[Any] = contextvars.ContextVar("keymem_call_request_id", default=None)


async def request_ids(ctx: Any, call_next: Any) -> Any:
    """A ``tools/call`` whose ``_meta`` carries ``keymem/request_id`` (8-128 of ``A-Za-z0-9_.:-``) runs
    a mutating tool at most once per id: a client that lost the answer (a dropped connection, a
    restarted HTTP server) sends the same call with the same id and gets the recorded result."""
    meta = getattr(ctx, "meta", None)
    rid = meta.get(REQUEST_ID_META) if isinstance(meta, dict) and ctx.method == "tools/call" else None
    bound = _request_id.set(rid)
    try:
        return await call_next(ctx)
    finally:
        _request_id.reset(bound)
