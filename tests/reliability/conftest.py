"""Helpers shared by the reliability tests (issue 7): populated stores, digests, reopening."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants, store_digest
from keymem.settings import Settings


def open_graph(settings: Settings, embedder: Any, clock: Any = None) -> Any:
    from keymem.memory.graph import MemoryGraph

    kw = {"clock": clock} if clock is not None else {}
    return MemoryGraph.open(settings, embedder=embedder, reranker=None, progress=False, **kw)


@dataclass
class World:
    """A small populated store: two namespaces, a corrected memory, related memories, aliases."""

    ids: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)


def populate(graph: Any) -> World:
    w = World()
    r = graph.remember(content="Python is a programming language", keys=["python", "programming language"])
    w.ids["python"] = r.memory_id
    w.keys["python"] = r.keys[0].key_id
    r = graph.remember(content="Alice prefers green tea in the morning", keys=["Alice", "tea"],
                       key_types=["name", "concept"])
    w.ids["alice"] = r.memory_id
    w.keys["alice"] = r.keys[0].key_id
    r = graph.remember(content="The deploy runs on Fridays", keys=["deploy", "schedule"], decay_profile="transient",
                       related_to=[w.ids["python"]])
    w.ids["deploy"] = r.memory_id
    c = graph.correct(memory_id=w.ids["python"], content="Python is a popular programming language")
    w.ids["python_old"], w.ids["python"] = w.ids["python"], c.memory_id
    r = graph.remember(content="Bob's secret project is called Falcon", keys=["Bob", "Falcon"],
                       key_types=["name", "proper_noun"], namespace="private")
    w.ids["secret"] = r.memory_id
    w.keys["secret"] = r.keys[0].key_id
    graph.remember_batch([
        {"content": "Falcon launches in March", "keys": ["Falcon", "launch"], "namespace": "private"},
        {"content": "Tea should steep for three minutes", "keys": ["tea", "brewing"]},
    ])
    return w


def healthy(graph: Any) -> None:
    problems = check_invariants(graph)
    assert problems == [], "\n".join(problems)


def digest(graph: Any) -> dict[str, Any]:
    return store_digest(graph)


@pytest.fixture
def world(graph: Any) -> Iterator[World]:
    yield populate(graph)


def reopen(graph: Any, settings: Settings, embedder: Any, clock: Any = None) -> Any:
    graph.close()
    return open_graph(settings, embedder, clock)


def data_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.rglob("*") if p.is_file())


# Real processes (daemon, stdio servers) on a short private data dir: the e2e suite's fixtures.
from tests.e2e.support import daemon, km, short_dir  # noqa: E402,F401
