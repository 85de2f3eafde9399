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
    assert s.buffer_pool_mb == 256
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
