"""`keymem init` writes the config file every process reads; `keymem doctor` shows it and tells the truth."""

from __future__ import annotations

import re
import socket
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keymem.settings import load_settings
from tests.cli.conftest import KEYMEM, run_cli


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def invoke(*args: str) -> Any:
    from keymem.cli.main import app

    return CliRunner().invoke(app, list(args))


def test_init_writes_the_file_and_downloads_what_is_missing(fake_hub: Any) -> None:
    from keymem.models.profiles import RERANKER, resolve_model
    from tests.models.test_download import publish

    minilm = resolve_model("minilm")
    publish(fake_hub, minilm.files())
    publish(fake_hub, RERANKER.files())
    home = Path.home()  # a temporary home (tests/conftest.py)
    path = home / ".keymem" / "config.toml"

    result = invoke("init", "--model", "minilm", "--rerank", "--endpoint", fake_hub.url)
    assert result.exit_code == 0, result.output
    written = tomllib.loads(path.read_text())
    assert written == {"EMBEDDING_BACKEND": "local", "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2", "KEYMEM_RERANK": True}
    assert "reranker: on (--rerank: bge-reranker-v2-m3, ~570 MB)" in result.output
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    models = home / ".keymem" / "models"
    assert (models / "minilm-l6-v2" / "model.onnx").is_file() and (models / "reranker" / "model.onnx").is_file()
    assert mode(models) == 0o700
    assert f"wrote {path}:" in result.output and 'LOCAL_EMBEDDING_MODEL = "minilm-l6-v2"' in result.output
    assert "embedding: minilm-l6-v2 ready" in result.output and "reranker: ready" in result.output
    assert "Next: start (or restart) your agent" in result.output
    s = load_settings()  # what the server, the daemon, the hook and the CLI now read
    assert s.local_embedding_model == "minilm-l6-v2" and s.sources["local_embedding_model"] == f"config file {path}"

    fetched = len(fake_hub.fetched())
    again = invoke("init", "--model", "bge-m3", "--endpoint", fake_hub.url)
    assert again.exit_code == 1 and "already exists; nothing was changed" in again.output and "--force" in again.output
    assert tomllib.loads(path.read_text())["LOCAL_EMBEDDING_MODEL"] == "minilm-l6-v2"

    forced = invoke("init", "--force", "-m", "minilm-l6-v2", "--no-rerank", "--set", "KEYMEM_RECALL_HOPS=3",
                    "--data-dir", str(home / "store"), "--endpoint", fake_hub.url)
    assert forced.exit_code == 0, forced.output
    assert tomllib.loads(path.read_text()) == {
        "KEYMEM_DATA_DIR": str(home / "store"), "EMBEDDING_BACKEND": "local", "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2",
        "KEYMEM_RERANK": False, "KEYMEM_RECALL_HOPS": 3}
    assert "reranker: skipped (KEYMEM_RERANK=false)" in forced.output
    assert (home / "store" / "models" / "minilm-l6-v2" / "model.onnx").is_file()  # the new data dir's models
    assert len(fake_hub.fetched()) > fetched
    s = load_settings()
    assert s.config_file == path and s.data_dir == home / "store" and s.recall_hops == 3


def test_init_refuses_what_it_cannot_write(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path.home() / ".keymem" / "config.toml"
    out = invoke("init", "--model", "no-such-model", "--no-download")
    assert out.exit_code == 1 and "'no-such-model' is not a model keymem knows" in out.output
    assert "minilm-l6-v2" in out.output and not path.exists()
    out = invoke("init", "--set", "local_embedding_model=minilm", "--no-download")
    assert out.exit_code == 2 and "did you mean LOCAL_EMBEDDING_MODEL?" in out.output and not path.exists()
    out = invoke("init", "--set", "KEYMEM_RECALL_HOPS=9", "--no-download")
    assert out.exit_code == 2 and "KEYMEM_RECALL_HOPS='9' must be at most 5" in out.output and not path.exists()
    out = invoke("init", "--backend", "openai", "--model", "minilm", "--no-download")
    assert out.exit_code == 2 and not path.exists()

    # an environment variable still wins, and init says so
    monkeypatch.setenv("LOCAL_EMBEDDING_MODEL", "bge-m3")
    out = invoke("init", "--model", "minilm", "--no-download")
    assert out.exit_code == 0, out.output
    assert "this environment sets LOCAL_EMBEDDING_MODEL=bge-m3, which wins over the file" in out.output
    assert "models: not checked (--no-download)" in out.output


def test_init_writes_where_keymem_config_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "conf" / "keymem.toml"
    monkeypatch.setenv("KEYMEM_CONFIG", str(path))
    out = invoke("init", "--backend", "openai", "--no-rerank", "--no-download")
    assert out.exit_code == 0, out.output
    assert tomllib.loads(path.read_text()) == {"EMBEDDING_BACKEND": "openai", "KEYMEM_RERANK": False}
    assert "KEYMEM_CONFIG is set in this shell" in out.output


def test_doctor_shows_the_config_file_and_where_each_value_came_from(store_env: dict[str, Any]) -> None:
    env, settings = store_env["env"], store_env["settings"]
    path = settings.data_dir / "config.toml"  # KEYMEM_DATA_DIR is set: its config.toml
    out = run_cli(["doctor"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"config file: {path} (none; `keymem init` writes one)" in out.stdout
    path.write_text('KEYMEM_RECALL_HOPS = 3\nLOCAL_EMBEDDING_MODEL = "bge-m3"\n')
    out = run_cli(["doctor"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert f"config file: {path} (1 value)" in lines
    row = next(ln for ln in lines if ln.strip().startswith("KEYMEM_RECALL_HOPS"))
    assert row.split()[1] == "3" and row.endswith("(config file)")
    row = next(ln for ln in lines if ln.strip().startswith("LOCAL_EMBEDDING_MODEL "))
    assert "minilm-l6-v2" in row and row.endswith("(env LOCAL_EMBEDDING_MODEL)")  # the environment wins
    assert next(ln for ln in lines if ln.strip().startswith("KEYMEM_RERANK_POOL")).endswith("(default)")

    path.write_text("KEYMEM_RECALL_HOPS = 7\n")
    out = run_cli(["doctor"], env)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [f"keymem: {path}: KEYMEM_RECALL_HOPS = 7 must be at most 5",
                                       "  fix: correct that line of the config file"]
    stats = run_cli(["stats"], env)  # every command reads the same file
    assert stats.returncode == 2 and f"{path}: KEYMEM_RECALL_HOPS = 7" in stats.stderr


def test_doctor_reports_a_missing_reranker_with_its_fix(store_env: dict[str, Any]) -> None:
    env, settings = {**store_env["env"], "KEYMEM_RERANK": "true"}, store_env["settings"]
    rdir = settings.data_dir / "models" / "reranker"
    for args in (["doctor"], ["doctor", "--check"]):
        out = run_cli(args, env)
        assert out.returncode == 1, out.stdout + out.stderr
        assert f"reranker: bge-reranker-v2-m3 in {rdir} (missing)" in out.stdout
        assert (f"  - KEYMEM_RERANK is on but the reranker files are missing (model.onnx, tokenizer.json in {rdir}): "
                "recall ranks without it until a download succeeds\n"
                "    fix: the Hugging Face Hub cannot be reached from here (HF_HUB_OFFLINE is set), so no download "
                "can work: on a machine that reaches it, fetch these files and place them here by hand:\n"
                "      save https://huggingface.co/onnx-community/bge-reranker-v2-m3-ONNX/resolve/main/onnx/"
                f"model_quantized.onnx as {rdir}/model.onnx\n"
                "      save https://huggingface.co/onnx-community/bge-reranker-v2-m3-ONNX/resolve/main/tokenizer.json "
                f"as {rdir}/tokenizer.json\n"
                "      then run `keymem doctor` again, or set KEYMEM_RERANK=false") in out.stderr
        assert "keymem models download" not in out.stderr
    assert "all invariants hold" in out.stdout  # --check ran the checker too
    assert run_cli(["doctor"], {**env, "KEYMEM_RERANK": "false"}).returncode == 0


def test_a_bare_health_check_creates_the_data_dir_owner_only(tmp_path: Path, minilm_dir: Path) -> None:
    """The MCP server's start (initialize, tools/list: it ends at EOF here) makes the data dir 0700, not 0755."""
    from tests.cli.conftest import cli_env

    data = tmp_path / "fresh" / "data"
    env = cli_env(load_settings({}, data_dir=data), minilm_dir)
    env.pop("KEYMEM_DAEMON")  # the default: the plugin's configuration
    p = subprocess.run(KEYMEM, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert mode(data) == 0o700 and mode(data / "logs") == 0o700 and mode(tmp_path / "fresh") == 0o700
    assert mode(data / "logs" / "keymem.log") == 0o600
    assert not (data / "keymem.lbug").exists()  # a health check opens nothing


def new_user_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's shell: a private HOME and data dir, no model setting, the Hugging Face Hub out of reach."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KEYMEM_", "OPENAI_"))
           and k not in ("EMBEDDING_BACKEND", "LOCAL_EMBEDDING_MODEL", "LOCAL_EMBEDDING_MODEL_PATH")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), KEYMEM_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1", COLUMNS="200", **extra)
    return env


def place_minilm(models: Path, minilm_dir: Path) -> Path:
    """The MiniLM files placed by hand where keymem looks for them (the offline route)."""
    dest = models / "minilm-l6-v2"
    dest.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        (dest / name).symlink_to((minilm_dir / name).resolve())
    return dest


def test_init_minilm_leaves_the_reranker_off_and_needs_no_network(tmp_path: Path, minilm_dir: Path) -> None:
    """A small setup stays small: the profile decides the reranker, init says so, and offline nothing fails."""
    env = new_user_env(tmp_path)
    path = tmp_path / "data" / "config.toml"
    place_minilm(tmp_path / "data" / "models", minilm_dir)
    path.write_text('EMBEDDING_BACKEND = "local"\nLOCAL_EMBEDDING_MODEL = "bge-m3"\nKEYMEM_RERANK = true\n')

    out = run_cli(["init", "--force", "--model", "minilm"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert tomllib.loads(path.read_text()) == {"EMBEDDING_BACKEND": "local", "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2",
                                               "KEYMEM_RERANK": False}
    assert ("reranker: off (the minilm-l6-v2 profile leaves it off; --rerank turns it on: bge-reranker-v2-m3, "
            "~570 MB)") in out.stdout.splitlines()
    assert "reranker: skipped (KEYMEM_RERANK=false)" in out.stdout
    assert not (tmp_path / "data" / "models" / "reranker").exists()

    # bge-m3's profile turns it on; --no-rerank and --set win over the profile
    out = run_cli(["init", "--force", "--no-download"], env)
    assert out.returncode == 0 and tomllib.loads(path.read_text())["KEYMEM_RERANK"] is True, out.stderr
    assert "reranker: on (the bge-m3 profile turns it on: bge-reranker-v2-m3, ~570 MB; --no-rerank turns it off)" \
        in out.stdout
    out = run_cli(["init", "--force", "--no-download", "--no-rerank"], env)
    assert out.returncode == 0 and tomllib.loads(path.read_text())["KEYMEM_RERANK"] is False, out.stderr
    out = run_cli(["init", "--force", "--no-download", "-m", "minilm", "--set", "KEYMEM_RERANK=true"], env)
    assert out.returncode == 0 and tomllib.loads(path.read_text())["KEYMEM_RERANK"] is True, out.stderr
    assert "reranker: on (--set KEYMEM_RERANK)" in out.stdout


SAVE = re.compile(r"save (https?://\S+) as (/\S+?)(?=[;,]?\s|$)", re.M)


def test_offline_the_messages_name_every_file_and_where_it_goes(tmp_path: Path, minilm_dir: Path) -> None:
    """Offline, init's error and doctor's fix name each file with its URL and destination, and placing the
    files there as told is all it takes."""
    env = new_user_env(tmp_path)
    dest = tmp_path / "data" / "models" / "minilm-l6-v2"
    base = "https://huggingface.co/Xenova/all-MiniLM-L6-v2/resolve/main"
    expected = [(f"{base}/onnx/model_quantized.onnx", str(dest / "model.onnx")),
                (f"{base}/tokenizer.json", str(dest / "tokenizer.json"))]

    out = run_cli(["init", "--model", "minilm"], env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert SAVE.findall(out.stderr) == expected, out.stderr
    assert "(plus tokenizer.json)" not in out.stderr

    # doctor: in offline mode, and with a hub that does not answer
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    online_env = {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}
    for doctor_env, why in ((env, "HF_HUB_OFFLINE is set"),
                            ({**online_env, "HF_ENDPOINT": f"http://127.0.0.1:{port}"}, "cannot connect to 127.0.0.1")):
        out = run_cli(["doctor"], doctor_env)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "the embedding model files are missing (model.onnx, tokenizer.json)" in out.stderr
        assert f"the Hugging Face Hub cannot be reached from here ({why}" in out.stderr
        assert "keymem models download" not in out.stderr
        found = SAVE.findall(out.stderr)
        if why == "HF_HUB_OFFLINE is set":
            assert found == expected, out.stderr
        else:
            assert [p for _u, p in found] == [p for _u, p in expected]
            assert found[0][0] == f"http://127.0.0.1:{port}/Xenova/all-MiniLM-L6-v2/resolve/main/onnx/model_quantized.onnx"

    # follow the fix: each file where it says (the same model's files, from the test fixture)
    for url, where in expected:
        Path(where).parent.mkdir(parents=True, exist_ok=True)
        Path(where).symlink_to((minilm_dir / Path(where).name).resolve())
        assert url.endswith(("model_quantized.onnx", Path(where).name))
    out = run_cli(["doctor"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    out = run_cli(["init", "--force", "--model", "minilm"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"embedding: minilm-l6-v2 ready in {dest}" in out.stdout
