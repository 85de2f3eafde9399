"""Moving a store between engines with the real CLI: `keymem export` from LadybugDB, `keymem import` into
FalkorDB (KEYMEM_STORE_URL), and back into a fresh LadybugDB, each step printing the same store digest."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from keymem.memory.graph import MemoryGraph
from keymem.memory.namespace_graphs import open_memory
from keymem.settings import Settings
from tests.cli.conftest import cli_env, populate, run_cli
from tests.conftest_engines import FalkorServer, drop_graphs

QUERIES = ["python version", "graph databases", "deploy friday", "snake coding language"]


def _write_everything(settings: Settings, embedder: Any) -> dict[str, str]:
    """Keys of every type, links, a relation, a version chain, a TTL, two namespaces, an alias (a near
    spelling merged into its key) and a pending alias (a query that routed to a key, then a read)."""
    g = MemoryGraph.open(settings, embedder=embedder, reranker=None, progress=False)
    try:
        ids = populate(g)
        g.remember(content="FalkorDB is a graph database served by Redis", keys=["graph database", "redis"])
        g.remember(content="Neo4j is another graph databases product", keys=["graph databases", "neo4j"])
        first = g.recall(query="snake coding language").dump()["keys"][0]
        g.read_memory(memory_id=ids["a"], via_key_id=first["key_id"])  # "language", a key of memory a
    finally:
        g.close()
    return ids


def _digest(out: Any) -> str:
    lines = [x for x in out.stderr.splitlines() if x.startswith("store digest ")]
    assert len(lines) == 1, out.stderr
    return lines[0]


def _recalls(settings: Settings, embedder: Any, store_url: str | None = None, graphs: str = "one") -> list[Any]:
    """What recall answers for QUERIES on a store (in this process: the model is loaded once)."""
    g = open_memory(settings.with_overrides(store_url=store_url, falkordb_graphs=graphs), embedder=embedder,
                    reranker=None, progress=False)
    try:
        return [g.recall(query=q).dump() for q in QUERIES]
    finally:
        g.close()


@pytest.mark.parametrize("graphs", ["one", "namespace"])
def test_export_import_between_engines_keeps_the_digest(settings: Settings, minilm_dir: Path, minilm_embedder: Any,
                                                        falkordb_server: FalkorServer, tmp_path: Path,
                                                        graphs: str) -> None:
    """Into FalkorDB with every namespace in one graph, or a graph per namespace, and back."""
    _write_everything(settings, minilm_embedder)
    ladybug = cli_env(settings, minilm_dir)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    falkor = cli_env(settings.with_overrides(data_dir=tmp_path / "falkor"), minilm_dir,
                     KEYMEM_STORE_URL=falkordb_server.url(prefix), KEYMEM_FALKORDB_GRAPHS=graphs)
    back = cli_env(settings.with_overrides(data_dir=tmp_path / "back"), minilm_dir)
    try:
        out = run_cli(["export", str(tmp_path / "from-ladybug.jsonl")], ladybug)
        assert out.returncode == 0, out.stderr
        source = _digest(out)
        exported = (tmp_path / "from-ladybug.jsonl").read_text(encoding="utf-8")
        assert '"pending": [' in exported and '"aliases": [{' in exported and '"superseded_by": "m_' in exported

        out = run_cli(["import", str(tmp_path / "from-ladybug.jsonl")], falkor)
        assert out.returncode == 0, out.stderr
        assert _digest(out) == source
        assert "memories created 9" in out.stdout and "aliases created 1" in out.stdout
        made = falkordb_server.graphs()
        if graphs == "namespace":  # each namespace its own graph, none for the whole store
            assert {f"{prefix}:default", f"{prefix}:work"} <= set(made) and prefix not in made
        else:
            assert prefix in made and f"{prefix}:work" not in made

        out = run_cli(["export", str(tmp_path / "from-falkordb.jsonl")], falkor)
        assert out.returncode == 0, out.stderr
        assert _digest(out) == source
        out = run_cli(["import", str(tmp_path / "from-falkordb.jsonl")], back)
        assert out.returncode == 0, out.stderr
        assert _digest(out) == source

        expected = _recalls(settings, minilm_embedder)
        assert all(a["keys"] for a in expected)
        assert _recalls(settings.with_overrides(data_dir=tmp_path / "falkor"), minilm_embedder,
                        falkordb_server.url(prefix), graphs) == expected
        assert _recalls(settings.with_overrides(data_dir=tmp_path / "back"), minilm_embedder) == expected
    finally:
        drop_graphs(falkordb_server, prefix)
