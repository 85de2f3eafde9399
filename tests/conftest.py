"""Shared fixtures: an isolated environment for every test, and real graphs on real Kuzu stores."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from keymem.settings import Settings, env_names, load_settings

pytest_plugins = ["tests.conftest_models", "tests.conftest_engines"]


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test sees the developer's keymem configuration, home directory or host session."""
    for name in list(os.environ):
        if name.startswith("KEYMEM_") or name in env_names() or name.startswith("OPENAI_"):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    yield


@pytest.fixture
def settings(tmp_path: Path, minilm_dir: Path, store_url: str | None) -> Settings:
    """Settings for a fresh data dir with the real MiniLM model and no reranker, on ``store_url``'s
    engine (tests/conftest_engines.py: the embedded LadybugDB file unless a module asks for both)."""
    return load_settings(
        {},
        data_dir=tmp_path / "data",
        store_url=store_url,
        embedding_backend="local",
        local_embedding_model="minilm-l6-v2",
        local_embedding_model_path=minilm_dir,
        rerank=False,
        buffer_pool_mb=128,
        embed_threads=1,
    )


class Clock:
    """A settable clock for freshness and TTL tests."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def graph(settings: Settings, minilm_embedder, clock: Clock, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    from keymem.memory.graph import MemoryGraph

    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, clock=clock, progress=False)
    yield g
    if not g.store.failed and not g.store._closed and request.node.get_closest_marker("raw_writes") is None:
        assert_mirror_exact(g)
    g.close()


def assert_mirror_exact(g) -> None:  # type: ignore[no-untyped-def]
    """The in-memory mirror kept in step by every write equals one freshly read from the store."""
    from keymem.admin.invariants import mirror_problems

    assert mirror_problems(g) == []
