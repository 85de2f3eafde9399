"""Hostile input, property-based, across all ten tools (domain level and through the MCP tool layer).

Arguments mix valid values with arbitrary Unicode (NUL, lone surrogates, RTL marks, 1 MB
strings), NaN/inf/negative/huge numbers, wrong types, unknown ids, ids from another
namespace and Cypher-injection strings in content, keys and namespace. Every call must:

* raise keymem.errors.KeymemError (InvalidInput / NotFound) with a message, leaving the
  store byte-for-byte unchanged (store_digest: counts + sha256 over every node, edge and
  vector, before/after), or
* succeed, and then what it stored reads back verbatim (content, namespace);
* and the process keeps answering; at the end check_invariants() is empty.

Anything else (TypeError, a Kuzu RuntimeError, a changed store after a refusal) fails.
The number of inputs tried is printed (``-s``) and written to ``hostile_inputs.json``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from keymem.admin.invariants import check_invariants, store_digest
from keymem.errors import KeymemError
from keymem.settings import load_settings
from keymem.text.tokenize import normalize_text
from tests.reliability.conftest import World, open_graph, populate
from tests.reliability.hostile import TOOLS, resolve, short

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "40"))  # per tool (domain); half of it per tool through MCP
TRIED: Counter[str] = Counter()
# Fixed inputs by default (a reproducible CI run); HOSTILE_RANDOM=1 explores new ones each run.
DERANDOMIZE = os.environ.get("HOSTILE_RANDOM") != "1"
HYPO = settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                                       HealthCheck.function_scoped_fixture])


def _settings(data_dir: Path, model_dir: Path) -> Any:
    return load_settings({}, data_dir=data_dir, embedding_backend="local", local_embedding_model="minilm-l6-v2",
                         local_embedding_model_path=model_dir, rerank=False, buffer_pool_mb=128, embed_threads=1)


class Arena:
    """One store shared by all examples of the module, kept populated."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.world: World = populate(graph)
        self.fresh = 0

    def refresh(self) -> None:
        """Follow corrections to the current version; re-create what hostile calls forgot."""
        g, w = self.graph, self.world
        for name, mid in list(w.ids.items()):
            rows = g.store.query("memory/get", id=mid)
            m = rows[0]["m"] if rows else None
            if m is not None and (m["active"] or name == "python_old"):
                continue
            if m is not None and m["superseded_by"]:
                w.ids[name] = m["superseded_by"]
                continue
            self.fresh += 1
            ns = "private" if name == "secret" else "default"
            r = g.remember(content=f"{name} re-created {self.fresh}", keys=[f"{name} key", "refill"], namespace=ns)
            w.ids[name] = r.memory_id
        for name in list(w.keys):
            if not g.store.query("key/get", id=w.keys[name]):
                rows = g.store.query("memory/keys", id=w.ids.get(name, w.ids["alice"]))
                if rows:
                    w.keys[name] = rows[0]["key_id"]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path, minilm_embedder: Any) -> Iterator[Arena]:
    s = _settings(tmp_path_factory.mktemp("hostile") / "data", minilm_dir)
    g = open_graph(s, minilm_embedder)
    a = Arena(g)
    yield a
    problems = check_invariants(g)
    g.close()
    assert problems == [], problems


@pytest.fixture(scope="module", autouse=True)
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    figures = {"inputs_tried": sum(TRIED.values()), "by_outcome": dict(sorted(TRIED.items()))}
    path = tmp_path_factory.mktemp("hostile_report") / "hostile_inputs.json"
    path.write_text(json.dumps(figures, indent=2))
    print(f"\nhostile inputs: {json.dumps(figures)}")


def _check_stored(graph: Any, tool: str, args: dict[str, Any], result: dict[str, Any]) -> None:
    def same(mid: str, content: str, namespace: Any, duplicate: bool) -> None:
        rows = graph.store.query("memory/get", id=mid)
        assert rows, f"{tool}: {mid} reported stored but cannot be read"
        m = rows[0]["m"]
        if duplicate:
            assert normalize_text(m["content"]) == normalize_text(content)
        else:
            assert m["content"] == content, f"{tool}: content not stored verbatim: {short(m['content'])} != {short(content)}"
        if namespace is not None:
            assert m["namespace"] == namespace

    if tool == "remember":
        same(result["memory_id"], args["content"], args.get("namespace"), result["duplicate"])
    elif tool == "remember_batch":
        for it, r in zip(args["items"], result["results"], strict=True):
            same(r["memory_id"], it["content"], it.get("namespace"), r["duplicate"])
    elif tool == "correct":
        same(result["memory_id"], args["content"], None, False)


def call_domain(arena: Arena, tool: str, raw: dict[str, Any]) -> str:
    graph, w = arena.graph, arena.world
    arena.refresh()
    args = resolve(raw, w.ids, w.keys)
    before = store_digest(graph)
    if os.environ.get("KM_TRACE"):
        with open(os.environ["KM_TRACE"], "a") as fh:
            fh.write(f"{tool}\t{raw!r}\n")
    try:
        if tool == "remember_batch":
            result = graph.remember_batch(args["items"]).dump()
        else:
            result = getattr(graph, tool)(**args).dump()
    except KeymemError as exc:
        assert str(exc).strip(), f"{tool}: empty error message"
        after = store_digest(graph)
        assert after == before, f"{tool}({short(args)}) was refused ({exc}) but changed the store"
        outcome = f"{type(exc).__name__}"
    except Exception as exc:
        raise AssertionError(f"{tool}({short(args)}) raised {type(exc).__name__}: {exc}") from exc
    else:
        _check_stored(graph, tool, args, result)
        outcome = "accepted"
    assert graph.counts()["memories"] >= 0  # still answering
    TRIED[f"domain:{tool}:{outcome}"] += 1
    return outcome


@pytest.mark.parametrize("tool", list(TOOLS))
def test_domain_hostile(arena: Arena, tool: str) -> None:
    @HYPO
    @given(args=TOOLS[tool])
    def run(args: dict[str, Any]) -> None:
        call_domain(arena, tool, args)

    run()


INJECT_TARGETS = ["content", "keys", "namespace"]


@pytest.mark.parametrize("payload", ["'}) DETACH DELETE n //", "') MATCH (n) DETACH DELETE n //",
                                     "x\"}) DETACH DELETE n RETURN 1 //", "$id", "{{dim}}"])
def test_injection_strings_are_data(arena: Arena, payload: str) -> None:
    """Injection text in content and keys is stored verbatim; in a namespace it is refused. Nothing else moves."""
    g = arena.graph
    before = g.counts()
    r = g.remember(content=f"{payload} is just text", keys=[payload, f"{payload} key"])
    m = g.read_memory(memory_id=r.memory_id)
    assert m.content == f"{payload} is just text"
    assert payload.strip() in [k.key for k in m.keys] or r.duplicate or any(k.key_id for k in m.keys)
    assert g.counts()["memories"] == before["memories"] + 1
    with pytest.raises(KeymemError):
        g.remember(content="namespace injection", keys=["x"], namespace=payload)
    rec = g.recall(query=payload)
    assert rec.memory is None or isinstance(rec.memory.content, str)
    g.forget(memory_id=r.memory_id)
    assert g.counts()["memories"] == before["memories"]
    TRIED["domain:injection"] += 4


def test_one_megabyte_content_round_trips(tmp_path: Path, minilm_dir: Path, minilm_embedder: Any) -> None:
    """With the limit raised, a 1 MB content with NUL, RTL marks and astral characters is stored verbatim."""
    s = _settings(tmp_path / "data", minilm_dir).with_overrides(max_content_chars=1_100_000)
    g = open_graph(s, minilm_embedder)
    try:
        content = ("\x00\u202eabc\U0001f642 " * 100_000)[:1_000_000]
        r = g.remember(content=content, keys=["megabyte"])
        assert g.read_memory(memory_id=r.memory_id).content == content
        assert check_invariants(g) == []
        TRIED["domain:1MB"] += 1
    finally:
        g.close()


# -- through the MCP tool layer (in-process MCP client, LocalBackend) -------------------------------
def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=True)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [_jsonable(v) for v in value]
        return repr(value)


@pytest.fixture(scope="module")
def mcp_arena(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> Iterator[Any]:
    from keymem.server.backends import LocalBackend
    from keymem.server.tools import build_server

    s = _settings(tmp_path_factory.mktemp("hostile_mcp") / "data", minilm_dir)
    backend = LocalBackend(s)
    graph = backend.open().wait(120)
    arena = Arena(graph)
    server = build_server(s, backend)
    yield server, arena
    problems = check_invariants(graph)
    backend.close()
    assert problems == [], problems


@pytest.mark.parametrize("tool", list(TOOLS))
def test_mcp_hostile(mcp_arena: Any, tool: str) -> None:
    from mcp import Client

    server, arena = mcp_arena
    seen: list[tuple[dict[str, Any], Any]] = []

    @settings(max_examples=EXAMPLES // 2, deadline=None, database=None, derandomize=DERANDOMIZE,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                                     HealthCheck.function_scoped_fixture])
    @given(args=TOOLS[tool])
    def collect(args: dict[str, Any]) -> None:
        seen.append((args, None))

    collect()

    async def main() -> None:
        async with Client(server) as c:
            for raw, _ in seen:
                arena.refresh()
                args = _jsonable(resolve(raw, arena.world.ids, arena.world.keys))
                before = store_digest(arena.graph)
                r = await c.call_tool(tool, args)
                text = r.content[0].text if r.content else ""  # type: ignore[union-attr]
                if r.is_error:
                    assert text.strip(), f"{tool}: an error without a message"
                    assert "Traceback" not in text and "internal error" not in text.lower(), text
                    assert store_digest(arena.graph) == before, f"{tool}({short(args)}) refused ({text}) but changed the store"
                    TRIED[f"mcp:{tool}:error"] += 1
                else:
                    _check_stored(arena.graph, tool, args, r.structured_content)  # type: ignore[arg-type]
                    TRIED[f"mcp:{tool}:accepted"] += 1
            names = {t.name for t in (await c.list_tools()).tools}
            assert tool in names  # still answering

    asyncio.run(main())


def test_nan_inf_never_reach_the_store(arena: Arena) -> None:
    g = arena.graph
    for bad in (math.nan, math.inf, -math.inf, -1, 0, -0.0):
        with pytest.raises(KeymemError):
            g.remember(content="ttl check", keys=["ttl"], ttl_seconds=bad)
        for field in ("top_k",):
            with pytest.raises(KeymemError):
                g.recall(query="tea", **{field: bad})
        TRIED["domain:numbers"] += 2


def test_totals_are_reported() -> None:
    assert sum(TRIED.values()) > 0


@pytest.mark.parametrize("call", ["confirm_str", "confirm_dict", "remember_dict"])
def test_source_values_are_validated(graph: Any, call: str) -> None:
    g = graph
    w = populate(g)
    before = store_digest(g)
    with pytest.raises(KeymemError):
        if call == "confirm_str":
            g.confirm_memory(memory_id=w.ids["alice"], evidence="ok", source="\ud800")
        elif call == "confirm_dict":
            g.confirm_memory(memory_id=w.ids["alice"], evidence="ok", source={"url": "x\udfff"})
        else:
            g.remember(content="source check", keys=["source check"], source={"host": "\ud800"})
    assert store_digest(g) == before
