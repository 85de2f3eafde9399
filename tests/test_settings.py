"""Configuration: one module reads the environment; a bad value names its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from keymem.settings import VARS, SettingsError, load_settings


def test_defaults() -> None:
    s = load_settings({})
    assert s.backend == "local" and s.local_embedding_model == "bge-m3"
    assert s.decay_standard_days == 90 and s.half_life_days("permanent") is None
    assert s.rerank is True and s.rerank_pool == 30 and s.rerank_min_score is None
    assert 1 <= s.embed_threads <= 6
    assert s.buffer_pool_mb is None  # sized from the store at open (store.db.auto_pool_mb)
    assert load_settings({"KEYMEM_BUFFER_POOL_MB": "96"}).buffer_pool_mb == 96
    assert all(src == "default" for src in s.sources.values())


def test_openai_selected_by_key_unless_backend_set() -> None:
    assert load_settings({"OPENAI_API_KEY": "sk-x"}).backend == "openai"
    assert load_settings({"OPENAI_API_KEY": "sk-x", "EMBEDDING_BACKEND": "local"}).backend == "local"


def test_values_parsed_and_sources_recorded(tmp_path: Path) -> None:
    s = load_settings({
        "KEYMEM_DATA_DIR": str(tmp_path), "KEYMEM_RERANK": "false", "KEYMEM_RERANK_MIN_SCORE": "-1.5",
        "KEYMEM_DECAY_TRANSIENT_DAYS": "2.5", "KEYMEM_TRANSCRIPT_ACCESS": "true", "KEYMEM_DAEMON": "OFF",
    })
    assert s.data_dir == tmp_path and s.rerank is False and s.rerank_min_score == -1.5
    assert s.decay_transient_days == 2.5 and s.transcript_access is True and s.daemon == "off"
    assert s.sources["rerank"] == "env KEYMEM_RERANK" and s.sources["recall_hops"] == "default"
    assert s.db_path.parent == tmp_path


@pytest.mark.parametrize("env, name", [
    ({"KEYMEM_DECAY_STANDARD_DAYS": "-3"}, "KEYMEM_DECAY_STANDARD_DAYS"),
    ({"KEYMEM_DECAY_STABLE_DAYS": "0"}, "KEYMEM_DECAY_STABLE_DAYS"),
    ({"KEYMEM_DECAY_TRANSIENT_DAYS": "inf"}, "KEYMEM_DECAY_TRANSIENT_DAYS"),
    ({"KEYMEM_DECAY_TRANSIENT_DAYS": "nan"}, "KEYMEM_DECAY_TRANSIENT_DAYS"),
    ({"KEYMEM_RERANK_POOL": "many"}, "KEYMEM_RERANK_POOL"),
    ({"KEYMEM_BUFFER_POOL_MB": "32"}, "KEYMEM_BUFFER_POOL_MB"),
    ({"KEYMEM_BUFFER_POOL_MB": "big"}, "KEYMEM_BUFFER_POOL_MB"),
    ({"KEYMEM_RERANK": "maybe"}, "KEYMEM_RERANK"),
    ({"EMBEDDING_BACKEND": "cohere"}, "EMBEDDING_BACKEND"),
    ({"KEYMEM_RECALL_HOPS": "9"}, "KEYMEM_RECALL_HOPS"),
    ({"KEYMEM_KEY_RECALL": "1.5"}, "KEYMEM_KEY_RECALL"),
    ({"KEYMEM_CLEANUP_INTERVAL_MS": "10"}, "KEYMEM_CLEANUP_INTERVAL_MS"),
    ({"LOCAL_EMBEDDING_MODEL": "  "}, "LOCAL_EMBEDDING_MODEL"),
])
def test_bad_value_names_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(env)
    message = str(err.value)
    assert message.startswith(name) and "\n" not in message


def test_every_variable_is_documented_in_readme() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [v.env for v in VARS.values() if f"`{v.env}`" not in readme]
    assert not missing, f"README.md configuration table lacks {missing}"


def test_contract_variables_are_all_read() -> None:
    contract = (Path(__file__).resolve().parents[2] / "shared" / "spec" / "mcp-tools.md")
    if not contract.exists():  # the spec lives beside the checkout; CI has a copy
        pytest.skip("shared/spec not beside this checkout")
    import re

    named = set(re.findall(r"`((?:KEYMEM|LOCAL_EMBEDDING|OPENAI|EMBEDDING)_[A-Z_]+)`", contract.read_text()))
    named = {n for n in named if not n.endswith("_")}
    read = {v.env for v in VARS.values()}
    assert named <= read, named - read


# -- the config file ------------------------------------------------------------------------------


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_config_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.toml", (
        '# a comment\nLOCAL_EMBEDDING_MODEL = "minilm-l6-v2"\nKEYMEM_RERANK = false\nKEYMEM_RECALL_HOPS = 3\n'
        'KEYMEM_DECAY_STABLE_DAYS = 400\nKEYMEM_KEY_RECALL = 0.5\nKEYMEM_DAEMON = "OFF"\n'))
    s = load_settings({"KEYMEM_DATA_DIR": str(tmp_path)})
    assert s.config_file == path
    assert s.local_embedding_model == "minilm-l6-v2" and s.rerank is False and s.recall_hops == 3
    assert s.decay_stable_days == 400.0 and s.key_recall == 0.5 and s.daemon == "off"
    assert s.sources["recall_hops"] == f"config file {path}" and s.sources["rerank_pool"] == "default"
    assert s.sources["data_dir"] == "env KEYMEM_DATA_DIR"
    env_wins = load_settings({"KEYMEM_DATA_DIR": str(tmp_path), "KEYMEM_RECALL_HOPS": "4"})
    assert env_wins.recall_hops == 4 and env_wins.sources["recall_hops"] == "env KEYMEM_RECALL_HOPS"
    assert env_wins.rerank is False  # the rest still from the file
    assert load_settings({"KEYMEM_DATA_DIR": str(tmp_path)}, recall_hops=5).recall_hops == 5  # arguments win


def test_config_file_locations() -> None:
    """~/.keymem/config.toml by default; KEYMEM_CONFIG names another; the file may move the data dir."""
    home = Path.home()  # a temporary home (tests/conftest.py)
    default = write_config(home / ".keymem" / "config.toml", 'KEYMEM_DATA_DIR = "~/elsewhere"\nKEYMEM_INJECT_MAX = 2\n')
    s = load_settings({})
    assert s.config_file == default and s.data_dir == home / "elsewhere" and s.inject_max == 2
    assert s.sources["data_dir"] == f"config file {default}"
    other = write_config(home / "other.toml", "KEYMEM_INJECT_MAX = 7\n")
    s = load_settings({"KEYMEM_CONFIG": str(other)})
    assert s.config_file == other and s.inject_max == 7 and s.data_dir == home / ".keymem"
    missing = load_settings({"KEYMEM_CONFIG": str(home / "nope.toml")})  # no file: defaults
    assert missing.config_file == home / "nope.toml" and missing.inject_max == 4
    assert all(src == "default" for src in missing.sources.values())


@pytest.mark.parametrize("text, words", [
    ("KEYMEM_RERANK = ", "not valid TOML"),
    ("KEYMEM_RERANK = true\nKEYMEM_RERANK = false\n", "not valid TOML"),
    ("KEYMEM_RERANKER = true\n", "unknown setting 'KEYMEM_RERANKER' (did you mean KEYMEM_RERANK?)"),
    ('local_embedding_model = "minilm"\n', "unknown setting 'local_embedding_model' (did you mean LOCAL_EMBEDDING_MODEL?)"),
    ('KEYMEM_CONFIG = "x.toml"\n', "KEYMEM_CONFIG cannot be set in the config file"),
    ('KEYMEM_RERANK = "maybe"\n', 'KEYMEM_RERANK = "maybe" is not a boolean'),
    ("KEYMEM_RERANK = 1\n", "KEYMEM_RERANK = 1 is not true or false"),
    ("KEYMEM_RECALL_HOPS = 9\n", "KEYMEM_RECALL_HOPS = 9 must be at most 5"),
    ("KEYMEM_RECALL_HOPS = 2.5\n", "KEYMEM_RECALL_HOPS = 2.5 is not a whole number"),
    ("LOCAL_EMBEDDING_MODEL = 3\n", "LOCAL_EMBEDDING_MODEL = 3 is not a string"),
    ('KEYMEM_DAEMON = "sometimes"\n', 'KEYMEM_DAEMON = "sometimes" must be one of auto, off'),
    ("KEYMEM_MAX_KEYS = [1, 2]\n", "KEYMEM_MAX_KEYS must be a whole number, not a list"),
    ("[keymem]\nKEYMEM_RERANK = true\n", "unknown setting 'keymem'"),
])
def test_bad_config_file_is_one_line_naming_file_and_key(tmp_path: Path, text: str, words: str) -> None:
    path = write_config(tmp_path / "config.toml", text)
    with pytest.raises(SettingsError) as err:
        load_settings({"KEYMEM_CONFIG": str(path)})
    message = str(err.value)
    assert message.startswith(f"{path}: ") and words in message and "\n" not in message
    assert err.value.path == path
    with pytest.raises(SettingsError):  # a bad file is refused even where the environment overrides the key
        load_settings({"KEYMEM_CONFIG": str(path), "KEYMEM_RERANK": "true", "KEYMEM_RECALL_HOPS": "2"})


def test_config_files_written_by_format_config_read_back_the_same(tmp_path: Path) -> None:
    """The writer (keymem init) and the reader agree on every kind of setting."""
    from keymem.settings import Settings, format_config

    custom = Settings().with_overrides(
        data_dir=tmp_path / 'a "quoted"\\dir', local_embedding_model="minilm-l6-v2", rerank=False,
        rerank_min_score=-1.5, key_recall=0.61, recall_hops=3, autokey_prune_age=1e6, transcript_access=True,
        extension_repo='https://example.org/"ext"\tmirror', daemon="off", log_level="DEBUG")
    values = {var.env: getattr(custom, name) for name, var in VARS.items()}
    path = write_config(tmp_path / "config.toml", format_config(values, header="written by a test"))
    back = load_settings({"KEYMEM_CONFIG": str(path)})
    for name in VARS:
        assert getattr(back, name) == getattr(custom, name), name
        expected = "default" if getattr(custom, name) is None else f"config file {path}"
        assert back.sources[name] == expected, name
    assert path.read_text().startswith("# written by a test\n")


def test_the_daemon_reads_the_file_its_client_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon runs in its data dir with the client's environment and that client's config file,
    even when the file moved the data dir (the daemon would look for <data dir>/config.toml)."""
    from keymem.server import client

    path = write_config(Path.home() / ".keymem" / "config.toml", f'KEYMEM_DATA_DIR = "{tmp_path / "data"}"\n')
    settings = load_settings({})
    seen: dict[str, str] = {}

    class Proc:
        pid = 1

        def wait(self) -> int:
            return 0

    def popen(argv: list[str], **kwargs: object) -> Proc:
        seen.update(kwargs["env"])  # type: ignore[arg-type]
        return Proc()

    monkeypatch.setattr(client.subprocess, "Popen", popen)
    client.spawn_daemon(settings, env={"PATH": "/usr/bin"})
    assert seen["KEYMEM_CONFIG"] == str(path) and seen["KEYMEM_DATA_DIR"] == str(tmp_path / "data")
    daemon_side = load_settings(seen)
    assert daemon_side.config_file == path and daemon_side.data_dir == settings.data_dir
