"""The MCP tool layer in-process, over a fake backend: schemas, argument passing, error mapping."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from keymem.errors import InvalidInput, NotFound
from keymem.memory.views import (
    KeyMemory,
    KeyRef,
    KeyView,
    MemoryPreview,
    MemoryView,
    ReadKeyResult,
    RecalledMemory,
    RecallResult,
    Validity,
)
from keymem.server import texts
from keymem.server.protocol import DaemonUnavailable
from keymem.server.tools import REMEMBER_ARGS, build_server
from keymem.settings import load_settings

TEN = ["recall", "browse_keys", "read_key", "read_memory", "confirm_memory",
       "remember", "correct", "dismiss", "forget", "remember_batch"]


class FakeBackend:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], Any]] = []
        self.result: Any = {}
        self.error: BaseException | None = None
        self.kicked = False

    def start(self) -> None:
        pass

    def kick(self) -> None:
        self.kicked = True

    async def call(self, method: str, params: dict[str, Any], source: Any, request_id: str | None = None) -> Any:
        self.calls.append((method, params, source))
        if self.error:
            raise self.error
        return self.result

    def counts(self, timeout: float) -> dict[str, Any] | None:
        return {"keys": 12, "memories": 5, "links": 20, "loading": False}

    def close(self) -> None:
        pass


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def fake() -> FakeBackend:
    return FakeBackend()


def server(fake: FakeBackend, **env: str) -> Any:
    return build_server(load_settings(env), fake)


def test_exactly_ten_tools_with_documented_arguments(fake: FakeBackend) -> None:
    tools = run(server(fake).list_tools())
    assert sorted(t.name for t in tools) == sorted(TEN)
    for t in tools:
        assert t.description and len(t.description) > 30, t.name
        assert t.output_schema and t.output_schema.get("type") == "object", t.name
        props = t.input_schema["properties"]
        for name, prop in props.items():
            described_once = ((t.name in ("correct", "remember_batch") and name in REMEMBER_ARGS)  # on remember
                              or (t.name == "read_key" and name in ("include_seen", "seen")))  # on recall
            if name not in ("limit", "offset", "namespace", "items") and not described_once:
                assert "description" in prop or "$ref" in prop or name in ("query",), (t.name, name)
    by_name = {t.name: t for t in tools}
    recall = by_name["recall"].input_schema["properties"]
    assert recall["top_k"]["maximum"] == 50 and recall["top_k"]["minimum"] == 1
    remember = by_name["remember"].input_schema
    assert remember["required"] == ["content", "keys"]
    assert remember["properties"]["keys"]["minItems"] == 1 and remember["properties"]["keys"]["maxItems"] == 32
    assert by_name["remember_batch"].input_schema["properties"]["items"]["maxItems"] == 1000
    assert by_name["recall"].annotations.read_only_hint is True
    assert by_name["forget"].annotations.destructive_hint is True


def test_arguments_reach_the_backend_without_nulls(fake: FakeBackend) -> None:
    fake.result = {"memory_id": "m_0123456789", "keys": [], "duplicate": False}

    async def main() -> None:
        async with Client(server(fake)) as c:
            r = await c.call_tool("remember", {"content": "fact", "keys": ["a", "b"], "key_types": {"b": "name"}})
            assert not r.is_error
            fake.result = {"results": [fake.result]}
            r = await c.call_tool("remember_batch", {"items": [{"content": "x", "keys": ["y"], "ttl_seconds": 60}]})
            assert not r.is_error, r.content

    run(main())
    method, params, _source = fake.calls[0]
    assert method == "remember" and params == {"content": "fact", "keys": ["a", "b"], "key_types": {"b": "name"}}
    assert fake.calls[1][1] == {"items": [{"content": "x", "keys": ["y"], "ttl_seconds": 60.0}]}


@pytest.mark.parametrize(
    ("error", "text"),
    [(InvalidInput("keys must hold at least one key"), "keys must hold at least one key"),
     (NotFound("memory m_00000000 does not exist"), "m_00000000 does not exist"),
     (DaemonUnavailable("no keymem daemon is running"), "keymem is unavailable: no keymem daemon is running")],
)
def test_domain_errors_become_tool_errors(fake: FakeBackend, error: BaseException, text: str) -> None:
    fake.error = error

    async def main() -> None:
        async with Client(server(fake)) as c:
            r = await c.call_tool("read_memory", {"memory_id": "m_00000000"})
            assert r.is_error and text in r.content[0].text  # type: ignore[union-attr]
            assert (await c.call_tool("recall", {"query": "still alive"})).is_error

    run(main())


def test_validation_errors_never_reach_the_backend(fake: FakeBackend) -> None:
    async def main() -> None:
        async with Client(server(fake)) as c:
            for tool, args in [("recall", {"query": ""}), ("recall", {"query": "x", "top_k": 0}),
                               ("remember", {"content": "x", "keys": []}), ("remember", {"keys": ["k"]}),
                               ("read_key", {"key_id": "k_1", "limit": 101}), ("remember_batch", {"items": []}),
                               ("remember", {"content": "x", "keys": ["k"], "decay_profile": "forever"})]:
                r = await c.call_tool(tool, args)
                assert r.is_error, (tool, args)

    run(main())
    assert fake.calls == []


def test_instructions_and_prompt(fake: FakeBackend) -> None:
    async def main() -> None:
        async with Client(server(fake, KEYMEM_HOOK_INSTALLED="true"), mode="legacy") as c:
            assert c.instructions and "12 keys, 5 memories and 20 links" in c.instructions
            prompts = await c.list_prompts()
            assert [p.name for p in prompts.prompts] == ["memory_system_prompt"]

    run(main())
    assert fake.kicked


def test_prompt_texts_follow_the_hook_setting() -> None:
    plain = texts.memory_system_prompt(False)
    hooked = texts.memory_system_prompt(True)
    for rule in texts.PROTOCOL_RULES:
        assert rule in plain and rule in hooked
    assert "three times" in plain and "three times" not in hooked
    assert "prompt hook" in hooked
    assert "counts are not known yet" in texts.instructions(None, False)
    assert "(models still loading)" in texts.instructions({"keys": 1, "memories": 2, "links": 3, "loading": True}, False)


def test_the_stdio_start_path_imports_nothing_heavy() -> None:
    """kuzu, onnxruntime, numpy and the domain load in the daemon (or later), never before initialize."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from keymem.settings import load_settings\n"
        "from keymem.server.backends import DaemonBackend, LocalBackend\n"
        "from keymem.server.tools import build_server\n"
        "import keymem.server.stdio, keymem.cli.main\n"
        "build_server(load_settings({}), DaemonBackend(load_settings({})))\n"
        "print([m for m in ('ladybug', 'onnxruntime', 'numpy', 'tokenizers', 'kiwipiepy', 'bm25s',\n"
        "                   'keymem.memory.graph', 'keymem.store.db') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


BAD_CALLS = [
    # an empty string, a wrong type, out-of-range numbers, a missing argument, an unknown one
    ("recall", {"query": ""},
     "recall: argument 'query' must be a string of 1 to 4000 characters (got an empty string)"),
    ("recall", {"query": 5}, "recall: argument 'query' must be a string of 1 to 4000 characters (got 5)"),
    ("recall", {"query": "x", "top_k": 500}, "recall: argument 'top_k' must be an integer from 1 to 50 (got 500)"),
    ("recall", {"query": "x", "top_k": "many"},
     "recall: argument 'top_k' must be an integer from 1 to 50 (got \"many\")"),
    ("recall", {}, "recall: missing required argument 'query' (a string of 1 to 4000 characters)"),
    ("recall", {"query": "x", "querry": "y"},
     "recall: unknown argument 'querry' (did you mean 'query'?); the arguments are query, top_k, namespace, "
     "context, explain, budget, include_seen, seen"),
    ("browse_keys", {"hubs_only": "maybe"}, "browse_keys: argument 'hubs_only' must be true or false (got \"maybe\")"),
    ("read_key", {"key_id": "k_1", "offset": -1},
     "read_key: argument 'offset' must be an integer from 0 to 1000000 (got -1)"),
    ("read_memory", {"memory_id": None}, "read_memory: argument 'memory_id' must be a string (got null)"),
    ("remember", {"content": "x", "keys": "python"},
     "remember: argument 'keys' must be a list of 1 to 32 items, each a string of 1 to 200 characters "
     "(got \"python\")"),
    ("remember", {"content": "x", "keys": ["ok", ""]},
     "remember: argument 'keys[1]' must be a string of 1 to 200 characters (got an empty string)"),
    ("remember", {"content": "x", "keys": ["k"], "ttl_seconds": 0},
     "remember: argument 'ttl_seconds' must be a number greater than 0 (got 0)"),  # <= 100 years: the domain's
    ("remember", {"content": "x", "keys": ["k"], "decay_profile": "forever"},
     "remember: argument 'decay_profile' must be one of \"transient\", \"standard\", \"stable\", \"permanent\" "
     "(got \"forever\")"),
    # a union (list or map): the branch the agent meant, not both
    ("remember", {"content": "x", "keys": ["k"], "key_types": ["nam"]},
     "remember: argument 'key_types[0]' must be one of \"concept\", \"name\", \"proper_noun\" (got \"nam\")"),
    ("remember", {"content": "x", "keys": ["Guido"], "key_types": {"Guido": "person"}},
     "remember: argument 'key_types[\"Guido\"]' must be one of \"concept\", \"name\", \"proper_noun\" "
     "(got \"person\")"),
    ("remember", {"content": "x" * 70, "keys": ["k"], "namespace": 7, "color": "red"},
     "remember: unknown argument 'color'; the arguments are content, keys, key_types, namespace, ttl_seconds, "
     "decay_profile, related_to; argument 'namespace' must be a string (got 7)"),
    ("remember_batch", {"items": [{"content": "a b", "keys": ["a"]}, {"content": ""}]},
     "remember_batch: argument 'items[1].content' must be a string of 1 to 100000 characters (got an empty "
     "string); missing required argument 'items[1].keys' (a list of 1 to 32 items, each a string of 1 to 200 "
     "characters)"),
    # a huge value or name is cut to 80 characters, with its length
    ("recall", {"query": "q" * 5000},
     f"recall: argument 'query' must be a string of 1 to 4000 characters (got \"{'q' * 80}…\" (5000 characters))"),
    ("recall", {"query": "x", "z" * 100_000: 1},
     f"recall: unknown argument '{'z' * 80}…' (100000 characters); the arguments are query, top_k, namespace, "
     "context, explain, budget, include_seen, seen"),
    ("remember", {"content": "x", "keys": ["k" * 300]},
     f"remember: argument 'keys[0]' must be a string of 1 to 200 characters (got \"{'k' * 80}…\" (300 characters))"),
    ("remember_batch", {"items": [{"content": "a b", "keys": ["a"], "ttl": 5}]},
     "remember_batch: 'items[0]' has an unknown field 'ttl'; its fields are content, keys, key_types, namespace, "
     "ttl_seconds, decay_profile, related_to"),
]


# A number or a boolean given as a string is refused like "five" is (pydantic would convert it).
BAD_CALLS += [
    ("recall", {"query": "x", "top_k": "5"}, "recall: argument 'top_k' must be an integer from 1 to 50 (got \"5\")"),
    ("recall", {"query": "x", "explain": "true", "budget": "100"},
     "recall: argument 'explain' must be true or false (got \"true\"); argument 'budget' must be an integer from "
     "50 to 4000 (got \"100\")"),
    ("remember", {"content": "x", "keys": ["k"], "ttl_seconds": "60"},
     "remember: argument 'ttl_seconds' must be a number greater than 0 (got \"60\")"),
    ("remember_batch", {"items": [{"content": "x", "keys": ["k"], "ttl_seconds": "60"}]},
     "remember_batch: argument 'items[0].ttl_seconds' must be a number greater than 0 (got \"60\")"),
    ("remember_batch", {"items": '[{"content": "x", "keys": ["k"], "ttl_seconds": "60"}]'},  # a list sent as JSON text
     "remember_batch: argument 'items[0].ttl_seconds' must be a number greater than 0 (got \"60\")"),
    # what the caller has already (a session does not pay twice)
    ("recall", {"query": "x", "seen": "m_0123456789"},
     "recall: argument 'seen' must be a list of at most 2000 items, each a string (got \"m_0123456789\")"),
    ("read_key", {"key_id": "k_1", "seen": ["m_0123456789", 5]}, "read_key: argument 'seen[1]' must be a string (got 5)"),
    ("read_key", {"key_id": "k_1", "include_seen": "yes"},
     "read_key: argument 'include_seen' must be true or false (got \"yes\")"),
    # a tool the server does not have
    ("recal", {"query": "x"},
     "recal: unknown tool (did you mean 'recall'?); the tools are recall, browse_keys, read_key, read_memory, "
     "confirm_memory, remember, correct, dismiss, forget, remember_batch"),
]


def test_argument_errors_are_one_line_an_agent_can_act_on(fake: FakeBackend) -> None:
    got: list[str] = []

    async def main() -> None:
        async with Client(server(fake)) as c:
            for tool, args, _expected in BAD_CALLS:
                r = await c.call_tool(tool, args)
                assert r.is_error, (tool, args)
                got.append(r.content[0].text)  # type: ignore[union-attr]

    run(main())
    assert fake.calls == []  # refused before the backend
    for (tool, args, expected), text in zip(BAD_CALLS, got, strict=True):
        assert text == expected, (tool, args)
        assert "\n" not in text and "pydantic" not in text


@pytest.mark.parametrize(("error", "text"), [
    # the domain's words after the tool's name, never the SDK's "Error executing tool recall: "
    (InvalidInput("query must not be empty"), "recall: query must not be empty"),
    (InvalidInput("key_types has 1 entries for 2 keys"), "recall: key_types has 1 entries for 2 keys"),
    (InvalidInput("recall: unknown argument(s) x"), "recall: unknown argument(s) x"),  # named once
    (DaemonUnavailable("no keymem daemon is running"), "recall: keymem is unavailable: no keymem daemon is running"),
    (RuntimeError("a bug"), "recall: internal error (the keymem log has the details)"),
])
def test_every_tool_error_is_one_line_naming_the_tool(fake: FakeBackend, error: BaseException, text: str) -> None:
    fake.error = error

    async def main() -> str:
        async with Client(server(fake)) as c:
            r = await c.call_tool("recall", {"query": "   "})
            assert r.is_error
            return str(r.content[0].text)  # type: ignore[union-attr]

    assert run(main()) == text


def test_one_session_holds_back_what_it_delivered_unless_asked(fake: FakeBackend) -> None:
    """stdio (``one_session``): recall, read_key and read_memory results are recorded and sent as ``seen``
    with later recall and read_key calls; include_seen=true sends none; the caller's seen comes first."""
    a, b, c, d = (f"m_{ch * 12}" for ch in "abcd")
    fresh = Validity(freshness=1.0, status="fresh", age_days=0.0, last_confirmed_at="2026-01-01T00:00:00Z",
                     confirmation_count=0, decay_profile="standard", verification_recommended=False,
                     verification_required=False)
    key = KeyView(key_id="k_1", key="k", key_type="concept", aliases=[], memory_count=1, is_hub=False, specificity=1.0)
    results = {
        "recall": RecallResult(
            keys=[], memory=MemoryPreview(memory_id=a, content="x", matched_key=KeyRef(key_id="k_1", key="k"),
                                          validity=fresh, connected_keys=[]),
            memories=[RecalledMemory(memory_id=m, content="x", hops=0, via=[], validity=fresh) for m in (a, b)]),
        "read_key": ReadKeyResult(key=key, total=1, offset=0, limit=10, memories=[KeyMemory(
            memory_id=c, preview="z", within_key_rank=1, score=1.0, score_kind="link_weight", link_weight=1.0,
            validity=fresh)]),
        "read_memory": MemoryView(memory_id=d, content="x", namespace="default", keys=[], validity=fresh, depth=0.0,
                                  depth_stage="shallow", access_count=1, supersedes=None, superseded_by=None,
                                  active=True, source=None, related_to=[], expires_at=None),
    }

    class Recording(FakeBackend):
        async def call(self, method: str, params: dict[str, Any], source: Any, request_id: str | None = None) -> Any:
            self.calls.append((method, params, source))
            return results[method].dump()

    def seen_sent(one_session: bool) -> list[Any]:
        backend = Recording()

        async def main() -> None:
            async with Client(build_server(load_settings({}), backend, one_session=one_session)) as client:
                for tool, args in [("recall", {"query": "q"}), ("read_key", {"key_id": "k_1"}),
                                   ("read_memory", {"memory_id": d}), ("recall", {"query": "q"}),
                                   ("read_key", {"key_id": "k_1", "seen": [f"m_{'e' * 12}"]}),
                                   ("recall", {"query": "q", "include_seen": True, "seen": [a]})]:
                    r = await client.call_tool(tool, args)
                    assert not r.is_error, r.content

        run(main())
        assert all("include_seen" not in params for _, params, _ in backend.calls)
        return [params.get("seen") for method, params, _ in backend.calls if method != "read_memory"]

    # most recent first (the fake answers every recall with a and b: the second one made them recent again)
    assert seen_sent(True) == [None, [b, a], [d, c, b, a], [f"m_{'e' * 12}", b, a, d, c], None]
    # HTTP (stateless): no record, only what the caller passes; include_seen drops that too
    assert seen_sent(False) == [None, None, None, [f"m_{'e' * 12}"], None]


def test_the_session_record_keeps_the_most_recent_ids() -> None:
    from keymem.server.session import Delivered

    record = Delivered(limit=3)
    for mid in ("m_1", "m_2", "m_3"):
        record.record("read_memory", {"memory_id": mid})
    record.record("read_key", {"memories": [{"memory_id": "m_1"}, {"memory_id": "m_4"}]})  # m_1 again: recent
    record.record("remember", {"memory_id": "m_5"})  # the agent wrote it: not a delivery
    assert record.ids() == ["m_3", "m_1", "m_4"]


def test_input_schemas_say_unknown_arguments_are_refused(fake: FakeBackend) -> None:
    for t in run(server(fake).list_tools()):
        assert t.input_schema.get("additionalProperties") is False, t.name


def test_server_info_carries_the_package_version(fake: FakeBackend) -> None:
    from importlib.metadata import version

    async def main() -> None:
        async with Client(server(fake), mode="legacy") as c:
            assert c.server_info is not None
            assert c.server_info.name == "keymem" and c.server_info.version == version("keymem")

    run(main())
