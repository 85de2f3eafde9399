"""stats, doctor, export/import, snapshot and models download as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from keymem.store import migrations
from tests.cli.conftest import KEYMEM, cli_env, run_cli

HEAVY = ("ladybug", "numpy", "onnxruntime", "tokenizers", "huggingface_hub", "bm25s", "kiwipiepy", "mcp")
COMMANDS = [[], ["cypher"], ["stats"], ["doctor"], ["export"], ["import"], ["snapshot"], ["viz"],
            ["models"], ["models", "download"], ["remember"], ["recall"], ["read"], ["read-key"], ["forget"],
            ["keys"]]


def test_help_is_fast_everywhere() -> None:
    """--help of every command imports none of the heavy modules (the start-up budget)."""
    code = (
        "import sys\n"
        "from keymem.cli.main import app\n"
        f"for args in {COMMANDS!r}:\n"
        "    try:\n"
        "        app(args + ['--help'], prog_name='keymem')\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (args, e.code)\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    assert "Cypher console" in out.stdout and "--namespace" in out.stdout
    # flags read as flags: Typer's rich help would print "--help <bool>", "--json <bool>"
    assert "--json" in out.stdout and "--version" in out.stdout and "<bool>" not in out.stdout
    assert "<int range>" in out.stdout  # options that take a value still show its type


def test_version_is_the_package_metadata_and_loads_nothing_heavy() -> None:
    from importlib.metadata import version

    code = (
        "import sys\n"
        "from keymem.cli.main import app\n"
        "try:\n"
        "    app(['--version'], prog_name='keymem')\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"keymem {version('keymem')}", "HEAVY []"]
    real = subprocess.run([*KEYMEM, "--version"], capture_output=True, text=True, timeout=60)
    assert real.returncode == 0 and real.stdout == f"keymem {version('keymem')}\n", real.stderr


def test_docs_cli_md_is_up_to_date() -> None:
    from keymem.cli import docs

    assert docs.DOC.read_text(encoding="utf-8") == docs.generate(), "run `python -m keymem.cli.docs`"


def test_stats(store_env: dict[str, Any]) -> None:
    out = run_cli(["stats", "--json"], store_env["env"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["counts"]["memories"] == 6 and data["counts"]["superseded"] == 1
    assert data["hubs"][0]["text"] == "python" and data["hubs"][0]["hub"] is True
    assert {r["namespace"] for r in data["namespaces"]} == {"default", "work"}
    assert data["model"]["stored_fingerprint"].startswith("local:minilm")
    assert data["store"]["bytes"] > 0 and data["served_by"] == "direct"
    proc = data["process"]
    assert proc["rss_kb"] > 20_000 and proc["peak_rss_kb"] >= proc["rss_kb"]
    assert 0 < proc["buffer_pool"]["used_bytes"] <= proc["buffer_pool"]["capacity_bytes"]
    text = run_cli(["stats"], store_env["env"]).stdout
    assert "python" in text and "HUB" in text and "001_init" in text
    assert "now," in text and "peak (this command, no daemon running)" in text
    assert "LadybugDB buffer pool" in text and "Kuzu" not in text  # the engine by its name


def test_export_import_round_trip_through_the_cli(store_env: dict[str, Any], tmp_path: Path,
                                                 minilm_dir: Path) -> None:
    env = store_env["env"]
    first = tmp_path / "a.jsonl"
    assert run_cli(["export", str(first)], env).returncode == 0
    other = cli_env(store_env["settings"].with_overrides(data_dir=tmp_path / "other"), minilm_dir)
    out = run_cli(["import", str(first)], other)
    assert out.returncode == 0, out.stderr
    assert "memories created 7" in out.stdout
    again = run_cli(["import", str(first)], other)
    assert "memories created 0" in again.stdout and "keys created 0" in again.stdout
    assert "links created 0" in again.stdout and "related created 0" in again.stdout, again.stdout
    assert re.search(r"links existing [1-9]", again.stdout) and "related existing 1" in again.stdout
    second = tmp_path / "b.jsonl"
    assert run_cli(["export", str(second)], other).returncode == 0
    assert second.read_text() == first.read_text()
    check = run_cli(["doctor", "--check"], other)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all invariants hold" in check.stdout
    ns = run_cli(["export", "--namespace", "work", "-"], env)
    assert sum(1 for line in ns.stdout.splitlines() if '"type": "memory"' in line) == 1


def test_import_reports_the_bad_line_and_writes_nothing(store_env: dict[str, Any], tmp_path: Path,
                                                       minilm_dir: Path) -> None:
    good = run_cli(["export", "-"], store_env["env"]).stdout.splitlines()
    i = next(n for n, line in enumerate(good) if '"key_type": "concept"' in line and n > 2)
    good[i] = good[i].replace('"key_type": "concept"', '"key_type": "wish"')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(good) + "\n")
    other_settings = store_env["settings"].with_overrides(data_dir=tmp_path / "other")
    other = cli_env(other_settings, minilm_dir)
    out = run_cli(["import", str(bad)], other)
    assert out.returncode == 1
    assert f"line {i + 1}: key_type 'wish'" in out.stderr and "nothing was imported" in out.stderr
    assert not other_settings.db_path.exists()


def test_snapshot_is_a_consistent_openable_copy(store_env: dict[str, Any], tmp_path: Path) -> None:
    import ladybug

    dest = tmp_path / "snap"
    out = run_cli(["snapshot", str(dest)], store_env["env"])
    assert out.returncode == 0, out.stderr
    assert "ghcr.io/ladybugdb/explorer:latest" in out.stdout and "LBUG_FILE=keymem.lbug" in out.stdout
    db = ladybug.Database(str(dest / "keymem.lbug"), read_only=True)
    try:
        conn = ladybug.Connection(db)
        result = conn.execute("MATCH (m:Memory) RETURN count(m)")
        assert not isinstance(result, list) and result.get_all() == [[7]]
    finally:
        db.close()
    again = run_cli(["snapshot", str(dest)], store_env["env"])
    assert again.returncode == 1 and "--force" in again.stderr
    assert run_cli(["snapshot", str(dest), "--force"], store_env["env"]).returncode == 0


def test_doctor_reports_config_sources_and_problems(store_env: dict[str, Any], tmp_path: Path) -> None:
    env = store_env["env"]
    out = run_cli(["doctor"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    from importlib.metadata import version

    assert out.stdout.startswith(f"keymem {version('keymem')} (Python ")
    assert "KEYMEM_DATA_DIR" in out.stdout and "(env KEYMEM_DATA_DIR)" in out.stdout
    latest = migrations.available()[-1]
    assert "(default)" in out.stdout and "opens cleanly" in out.stdout and f"schema: {latest} (up to date)" in out.stdout
    assert "not running" in out.stdout
    # the engine's state in keymem's words, not LadybugDB's exception text
    engine_line = next(line for line in out.stdout.splitlines() if "engine: LadybugDB" in line)
    assert re.search(r"VECTOR extension: (installed|not installed|does not load \(.+\))$", engine_line), engine_line
    assert "exception" not in out.stdout.lower()
    broken = {**env, "LOCAL_EMBEDDING_MODEL": "no-such-model", "LOCAL_EMBEDDING_MODEL_PATH": ""}
    out = run_cli(["doctor"], broken)
    assert out.returncode == 1
    assert "no-such-model" in out.stderr and "fix:" in out.stderr
    bad_var = run_cli(["doctor"], {**env, "KEYMEM_RERANK_POOL": "lots"})
    assert bad_var.returncode == 1 and "KEYMEM_RERANK_POOL" in bad_var.stderr


def test_doctor_reports_a_directory_of_another_model(store_env: dict[str, Any], minilm_dir: Path,
                                                     tmp_path: Path) -> None:
    """A MiniLM directory under LOCAL_EMBEDDING_MODEL=bge-m3 is a problem (issue 12, item 4)."""
    from tests.models.test_identify import copy_dir

    env = store_env["env"]
    named = run_cli(["doctor"], env)
    assert named.returncode == 0, named.stdout + named.stderr
    assert "files: BERT, 384 dims, 6 layers, 30,522 tokens" in named.stdout
    misnamed = {**env, "LOCAL_EMBEDDING_MODEL": "bge-m3"}
    out = run_cli(["doctor"], misnamed)
    assert out.returncode == 1
    assert ("  - LOCAL_EMBEDDING_MODEL_PATH holds all-MiniLM-L6-v2 (BERT, 384 dims), not bge-m3 (XLM-RoBERTa, "
            "1024 dims)\n    fix: set LOCAL_EMBEDDING_MODEL=minilm-l6-v2") in out.stderr
    bare = copy_dir(minilm_dir, tmp_path / "bare", without=("config.json",))
    out = run_cli(["doctor"], {**misnamed, "LOCAL_EMBEDDING_MODEL_PATH": str(bare)})
    assert out.returncode == 1 and "no config.json), not bge-m3 (XLM-RoBERTa, 1024 dims)" in out.stderr
    assert "files: 384 dims, WordPiece tokenizer, no config.json" in out.stdout
    checked = run_cli(["doctor", "--check"], misnamed)  # the store does not open with the wrong model
    assert checked.returncode == 1 and "set LOCAL_EMBEDDING_MODEL=minilm-l6-v2" in checked.stderr
    download = run_cli(["models", "download", "--no-reranker"], misnamed)  # nothing of bge-m3 is added
    assert download.returncode == 1 and "not bge-m3" in download.stderr and "minilm-l6-v2" in download.stderr


def test_models_download_fetches_only_missing_files(fake_hub: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from keymem.cli.main import app
    from keymem.models.profiles import RERANKER, resolve_model
    from tests.models.test_download import publish

    profile = resolve_model("bge-m3")
    publish(fake_hub, profile.files())
    publish(fake_hub, RERANKER.files())
    monkeypatch.setenv("KEYMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EMBEDDING_BACKEND", "local")
    monkeypatch.setenv("LOCAL_EMBEDDING_MODEL", "bge-m3")
    result = CliRunner().invoke(app, ["models", "download", "--endpoint", fake_hub.url])
    assert result.exit_code == 0, result.output
    models = tmp_path / "data" / "models"
    assert (models / "bge-m3" / "model.onnx").is_file() and (models / "reranker" / "tokenizer.json").is_file()
    assert "reranker: ready" in result.output
    fetched = len(fake_hub.fetched())
    result = CliRunner().invoke(app, ["models", "download", "--endpoint", fake_hub.url])
    assert result.exit_code == 0 and len(fake_hub.fetched()) == fetched  # complete: no request
    monkeypatch.setenv("LOCAL_EMBEDDING_MODEL", "nope")
    result = CliRunner().invoke(app, ["models", "download", "--endpoint", fake_hub.url])
    assert result.exit_code == 1 and "not a known model" in result.output


def test_progress_bar_only_on_a_terminal(store_env: dict[str, Any], tmp_path: Path, minilm_dir: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.conftest import KEYMEM

    dump = tmp_path / "a.jsonl"
    assert run_cli(["export", str(dump)], store_env["env"]).returncode == 0
    env = cli_env(store_env["settings"].with_overrides(data_dir=tmp_path / "tty"), minilm_dir)
    child = pexpect.spawn(KEYMEM[0], [*KEYMEM[1:], "import", str(dump)], env=env, encoding="utf-8", timeout=90)
    child.expect(r"writing +\[#+\] \d+/\d+")
    child.expect("memories created 7")
    child.expect(pexpect.EOF)
    piped = run_cli(["import", str(dump)], cli_env(store_env["settings"].with_overrides(data_dir=tmp_path / "pipe"),
                                                    minilm_dir))
    assert piped.returncode == 0 and "[#" not in piped.stderr
