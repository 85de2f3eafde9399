"""Model profiles (names, aliases, download sources) and threshold profiles."""

from __future__ import annotations

import subprocess
import sys

import pytest

from keymem.errors import ModelError
from keymem.models.profiles import (
    RERANKER,
    THRESHOLD_PROFILES,
    ThresholdProfile,
    find_model,
    known_models,
    resolve_model,
    thresholds_for,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bge-m3", "bge-m3"),
        ("BGEM3", "bge-m3"),
        ("BAAI/bge-m3", "bge-m3"),
        (" fast-bge-m3 ", "bge-m3"),
        ("fast-multilingual-e5-large", "fast-multilingual-e5-large"),
        ("fast-bge-small-en-v1.5", "fast-bge-small-en-v1.5"),
        ("fast-bge-base-en-v1.5", "fast-bge-base-en-v1.5"),
        ("minilm-l6-v2", "minilm-l6-v2"),
        ("all-MiniLM-L6-v2", "minilm-l6-v2"),
    ],
)
def test_names_and_aliases_resolve(name: str, expected: str) -> None:
    assert resolve_model(name).name == expected


def test_unknown_model_lists_the_known_ones() -> None:
    assert find_model("gpt-embed-9000") is None
    with pytest.raises(ModelError) as err:
        resolve_model("gpt-embed-9000")
    for name in known_models():
        assert name in str(err.value)
    assert "LOCAL_EMBEDDING_MODEL_PATH" in str(err.value)


def test_profiles_carry_pooling_prefixes_and_dimensions() -> None:
    bge = resolve_model("bge-m3")
    assert (bge.pooling, bge.query_prefix, bge.passage_prefix, bge.dimension) == ("cls", "", "", 1024)
    assert bge.threshold_profile == "bge"
    e5 = resolve_model("fast-multilingual-e5-large")
    assert (e5.pooling, e5.query_prefix, e5.passage_prefix, e5.dimension) == (
        "mean",
        "query: ",
        "passage: ",
        1024,
    )
    assert e5.threshold_profile == "e5"
    assert resolve_model("fast-bge-small-en-v1.5").dimension == 384
    assert resolve_model("fast-bge-base-en-v1.5").dimension == 768
    assert resolve_model("fast-bge-base-en-v1.5").pooling == "cls"
    mini = resolve_model("minilm-l6-v2")
    assert (mini.pooling, mini.query_prefix, mini.dimension, mini.threshold_profile) == (
        "mean",
        "",
        384,
        "minilm",
    )


def test_bge_m3_files_come_from_two_repos() -> None:
    files = {f.local_name: f for f in resolve_model("bge-m3").files()}
    assert files["model.onnx"].repo_id == "onnx-community/bge-m3-ONNX"
    assert files["model.onnx"].path == "onnx/model_quantized.onnx"
    assert files["tokenizer.json"].repo_id == "BAAI/bge-m3"
    assert files["model.onnx"].required and files["tokenizer.json"].required
    assert not files["config.json"].required


def test_reranker_source() -> None:
    files = {f.local_name: f for f in RERANKER.files()}
    assert files["model.onnx"].repo_id == "onnx-community/bge-reranker-v2-m3-ONNX"
    assert files["model.onnx"].path == "onnx/model_quantized.onnx"
    assert "tokenizer.json" in files


def test_seed_numbers_for_bge_and_openai() -> None:
    bge, calibrated = thresholds_for("bge", {})
    assert calibrated and (bge.key_recall, bge.key_merge) == (0.60, 0.85)
    openai, _ = thresholds_for("openai", {})
    assert openai.key_recall == 0.28


@pytest.mark.parametrize("name", sorted(THRESHOLD_PROFILES))
def test_every_profile_is_ordered_sensibly(name: str) -> None:
    t = THRESHOLD_PROFILES[name]
    assert -1 < t.key_recall < t.key_merge <= t.key_autolink < 1
    if t.short_key_merge is not None:
        assert t.key_recall < t.short_key_merge <= 1


def test_overrides_apply_and_none_is_ignored() -> None:
    t, calibrated = thresholds_for("bge", {"key_recall": 0.5, "key_merge": None, "key_autolink": 0.9})
    assert calibrated
    assert t == ThresholdProfile(key_recall=0.5, key_merge=0.85, key_autolink=0.9, short_key_merge=0.93)
    assert THRESHOLD_PROFILES["bge"].key_recall == 0.60  # the table itself is untouched


def test_short_key_merge_above_one_turns_it_off() -> None:
    t, _ = thresholds_for("bge", {"short_key_merge": 1.5})
    assert t.short_key_merge is None
    t, _ = thresholds_for("openai", {"short_key_merge": 0.95})
    assert t.short_key_merge == 0.95


def test_unknown_profile_falls_back_to_bge_uncalibrated() -> None:
    t, calibrated = thresholds_for("some-custom-model", {"key_merge": 0.9})
    assert not calibrated
    assert t.key_recall == THRESHOLD_PROFILES["bge"].key_recall and t.key_merge == 0.9


def test_unknown_override_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="key_recal"):
        thresholds_for("bge", {"key_recal": 0.5})


def test_light_modules_do_not_import_onnxruntime() -> None:
    code = (
        "import sys, keymem.models, keymem.models.base, keymem.models.profiles, keymem.models.factory; "
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'huggingface_hub') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
