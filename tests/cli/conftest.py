"""Fixtures for the CLI tests: a populated graph, and the environment for `keymem` subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from keymem.settings import Settings


def populate(graph: Any) -> dict[str, str]:
    """A small graph with a hub, a version chain, a relation, a TTL memory and two namespaces."""
    a = graph.remember(content="Python is a programming language loved for readability",
                       keys=["python", "language", "Guido"], key_types=["concept", "concept", "name"])
    b = graph.remember(content="The python tooling uses ruff for linting", keys=["python", "tooling"])
    c = graph.remember(content="Kuzu is an embedded graph database", keys=["kuzu", "database"],
                       related_to=[a.memory_id], source={"tool": "test"})
    d = graph.remember(content="Python 3.11 is the minimum version", keys=["python", "version"],
                       decay_profile="stable")
    e = graph.correct(memory_id=d.memory_id, content="Python 3.12 is the minimum version")
    f = graph.remember(content="Deploy on Fridays is forbidden", keys=["deploy"], ttl_seconds=86400)
    g = graph.remember(content="Work namespace note about python", keys=["python"], namespace="work")
    return {"a": a.memory_id, "b": b.memory_id, "c": c.memory_id, "old": d.memory_id, "new": e.memory_id,
            "ttl": f.memory_id, "work": g.memory_id}


def cli_env(settings: Settings, minilm_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `keymem` subprocess on the test's data dir (no daemon unless asked)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KEYMEM_", "OPENAI_"))}
    env.update({
        "KEYMEM_DATA_DIR": str(settings.data_dir), "EMBEDDING_BACKEND": "local",
        "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2", "LOCAL_EMBEDDING_MODEL_PATH": str(minilm_dir),
        "KEYMEM_RERANK": "false", "KEYMEM_DAEMON": "off", "KEYMEM_EMBED_THREADS": "1",
        "KEYMEM_BUFFER_POOL_MB": "128", "HF_HUB_OFFLINE": "1", "COLUMNS": "120", "LINES": "40",
    })
    if settings.store_url:  # the test's engine (tests/conftest_engines.py)
        env["KEYMEM_STORE_URL"] = settings.store_url
    env.update(extra)
    return env


KEYMEM = [sys.executable, "-m", "keymem.cli.main"]


@pytest.fixture
def populated(graph: Any) -> dict[str, str]:
    return populate(graph)


@pytest.fixture
def store_env(settings: Settings, minilm_dir: Path, minilm_embedder: Any, clock: Any) -> dict[str, Any]:
    """A populated store on disk, closed again so a `keymem` subprocess can open it."""
    from keymem.memory.graph import MemoryGraph

    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
    try:
        ids = populate(g)
    finally:
        g.close()
    return {"settings": settings, "env": cli_env(settings, minilm_dir), "ids": ids}


def run_cli(args: list[str], env: dict[str, str], *, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEYMEM, *args], env=env, input=input, capture_output=True, text=True, timeout=timeout)
