"""Export / import: full content, validation before writing, idempotency, round trip (both engines)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.admin import io
from keymem.admin.invariants import check_invariants, store_digest
from keymem.memory.graph import MemoryGraph
from keymem.settings import Settings
from tests.conftest_engines import ENGINES, engine_url


@pytest.fixture(params=ENGINES)
def store_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    yield from engine_url(request)


def _second_graph(settings: Settings, tmp_path: Path, embedder: Any, clock: Any) -> MemoryGraph:
    """Another store on the same engine: a second data dir, or a second graph beside the test's own
    (named ``<graph>.other``, deleted with it)."""
    other = settings.with_overrides(data_dir=tmp_path / "other")
    if settings.store_url:
        other = other.with_overrides(store_url=settings.store_url + ".other")
    return MemoryGraph.open(other, embedder=embedder, reranker=None, clock=clock, progress=False)


def test_export_holds_every_record_kind(graph: MemoryGraph, populated: dict[str, str]) -> None:
    lines = io.export_lines(graph.store, None, graph.now())
    recs = [json.loads(x) for x in lines]
    assert recs[0]["type"] == "header" and recs[0]["format"] == io.FORMAT
    kinds = {r["type"] for r in recs}
    assert kinds == {"header", "key", "memory", "link", "related"}
    mems = {r["id"]: r for r in recs if r["type"] == "memory"}
    assert mems[populated["old"]]["active"] is False
    assert mems[populated["old"]]["superseded_by"] == populated["new"]
    assert mems[populated["new"]]["supersedes"] == populated["old"]
    assert mems[populated["ttl"]]["ttl_seconds"] == 86400 and mems[populated["ttl"]]["expires_at"]
    assert json.loads(mems[populated["c"]]["source"]) == {"tool": "test"}
    keys = [r for r in recs if r["type"] == "key"]
    assert {k["key_type"] for k in keys} >= {"concept", "name"}
    assert all("vec" not in k for k in keys)
    links = [r for r in recs if r["type"] == "link"]
    assert all(r["weight"] > 0 for r in links)
    work = io.export_lines(graph.store, "work", graph.now())
    assert {json.loads(x).get("namespace", "work") for x in work[1:]} == {"work"}
    assert any(json.loads(x)["type"] == "link" for x in work)


def test_round_trip_and_idempotent(graph: MemoryGraph, populated: dict[str, str], settings: Settings,
                                   tmp_path: Path, minilm_embedder: Any, clock: Any) -> None:
    first = io.export_lines(graph.store, None, graph.now())
    other = _second_graph(settings, tmp_path, minilm_embedder, clock)
    try:
        report = io.import_lines(other, first)
        assert report["memories_created"] == len([x for x in first if '"type": "memory"' in x])
        assert check_invariants(other) == []
        assert io.export_lines(other.store, None, other.now()) == first
        assert store_digest(other) == store_digest(graph)
        assert report["links_created"] == sum('"type": "link"' in x for x in first) and report["links_existing"] == 0
        assert report["related_created"] == 1 and report["related_existing"] == 0
        again = io.import_lines(other, first)
        assert again["memories_created"] == 0 and again["keys_created"] == 0
        # a re-import creates no link: it counts them as existing
        assert again["links_created"] == 0 and again["links_existing"] == report["links_created"]
        assert again["related_created"] == 0 and again["related_existing"] == 1
        assert io.export_lines(other.store, None, other.now()) == first
        assert check_invariants(other) == []
        # the imported store works: recall finds the memory through its re-embedded keys
        hits = other.recall(query="python")
        assert hits.dump()["keys"][0]["key"] == "python"
    finally:
        other.close()


def test_pending_aliases_move_with_their_key(graph: MemoryGraph, populated: dict[str, str], settings: Settings,
                                             tmp_path: Path, minilm_embedder: Any, clock: Any) -> None:
    """A query counted towards a learned alias (recall routed it to a key, then a read) is exported with
    its key and imported as it was, so the two stores digest alike."""
    routed = graph.recall(query="snake coding language").dump()["keys"][0]
    graph.read_memory(memory_id=populated["a"], via_key_id=routed["key_id"])
    lines = io.export_lines(graph.store, None, graph.now())
    key = next(json.loads(x) for x in lines if f'"id": "{routed["key_id"]}"' in x)
    assert [p["query"] for p in key["pending"]] == ["snake coding language"] and key["pending"][0]["count"] == 1
    other = _second_graph(settings, tmp_path, minilm_embedder, clock)
    try:
        io.import_lines(other, lines)
        assert io.export_lines(other.store, None, other.now()) == lines
        assert store_digest(other) == store_digest(graph)
        assert check_invariants(other) == []
    finally:
        other.close()
    key["pending"][0]["count"] = 0
    bad = [json.dumps(key) if f'"id": "{routed["key_id"]}"' in x else x for x in lines]
    at = next(i for i, x in enumerate(bad, start=1) if f'"id": "{routed["key_id"]}"' in x)
    with pytest.raises(io.ImportError_, match=f"line {at}: pending\\[0\\]: count must be at least 1"):
        io.parse_lines(bad)


def test_import_into_populated_store_merges_by_name(graph: MemoryGraph, populated: dict[str, str],
                                                     settings: Settings, tmp_path: Path,
                                                     minilm_embedder: Any, clock: Any) -> None:
    lines = io.export_lines(graph.store, None, graph.now())
    other = _second_graph(settings, tmp_path, minilm_embedder, clock)
    try:
        other.remember(content="Python is a programming language loved for readability", keys=["python"])
        report = io.import_lines(other, lines)
        assert report["keys_merged"] >= 1 and report["memories_existing"] == 1
        assert check_invariants(other) == []
    finally:
        other.close()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda recs: recs.__setitem__(2, "{not json"), "line 3: not JSON"),
        (lambda recs: recs.insert(1, json.dumps({"type": "martian"})), "line 2: unknown record type"),
        (lambda recs: recs.__setitem__(0, json.dumps({"type": "key"})), "line 1: the first record"),
    ],
)
def test_bad_line_is_reported_and_nothing_written(graph: MemoryGraph, populated: dict[str, str], settings: Settings,
                                                  tmp_path: Path, minilm_embedder: Any, clock: Any,
                                                  mutate: Any, message: str) -> None:
    recs = io.export_lines(graph.store, None, graph.now())
    mutate(recs)
    other = _second_graph(settings, tmp_path, minilm_embedder, clock)
    try:
        with pytest.raises(io.ImportError_, match=message):
            io.import_lines(other, recs)
        assert other.counts() == {"keys": 0, "memories": 0, "links": 0}
    finally:
        other.close()


def test_dangling_reference_is_refused(graph: MemoryGraph, populated: dict[str, str]) -> None:
    recs = io.export_lines(graph.store, None, graph.now())
    last_link = max(i for i, x in enumerate(recs) if '"type": "link"' in x)
    rec = json.loads(recs[last_link])
    rec["memory_id"] = "m_" + "0" * 20
    recs[last_link] = json.dumps(rec)
    with pytest.raises(io.ImportError_, match=f"line {last_link + 1}: link names memory"):
        io.parse_lines(recs)
