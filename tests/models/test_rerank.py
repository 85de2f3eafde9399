"""OnnxReranker over the tiny cross-encoder (score = query tokens found in the passage)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from keymem.errors import ModelError
from keymem.models.base import Reranker
from keymem.models.rerank import OnnxReranker, load_reranker


@pytest.fixture(scope="module")
def reranker(tiny_reranker_dir: Path) -> OnnxReranker:
    return OnnxReranker(tiny_reranker_dir, batch_size=4, max_length=64)


def test_shared_words_outrank_none(reranker: OnnxReranker) -> None:
    scores = reranker.score(
        "python programming language",
        ["bananas are yellow", "I write python every day", "the python programming language is popular"],
    )
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert scores[2] > scores[1] > scores[0]
    assert scores.tolist() == [0.0, 1.0, 3.0]
    assert isinstance(reranker, Reranker) and reranker.name == "bge-reranker-v2-m3"


def test_empty_passages(reranker: OnnxReranker) -> None:
    out = reranker.score("anything", [])
    assert out.shape == (0,) and out.dtype == np.float32


def test_batching_keeps_order(reranker: OnnxReranker) -> None:
    # 11 passages with batch_size 4, of varied lengths so that sorting reorders them
    passages = [("coffee " * (i % 5)) + ("tea " if i % 2 else "water ") * (i % 3 + 1) for i in range(11)]
    scores = reranker.score("coffee tea", passages)
    one_by_one = np.array([reranker.score("coffee tea", [p])[0] for p in passages], dtype=np.float32)
    np.testing.assert_array_equal(scores, one_by_one)
    expected = [float(("coffee" in p) + ("tea" in p)) for p in passages]
    assert scores.tolist() == expected


def test_long_passage_is_truncated_not_the_query(tiny_reranker_dir: Path) -> None:
    r = OnnxReranker(tiny_reranker_dir, max_length=16)
    # the query word "zebra" only appears after the truncation point: it must not be seen
    passage = "filler " * 500 + "zebra"
    assert r.score("zebra", [passage]).tolist() == [0.0]
    # but the query itself survives: a match early in the passage still counts
    assert r.score("zebra crossing", ["zebra " + "filler " * 500]).tolist() == [1.0]


def test_overlong_query_falls_back_to_truncating_both(tiny_reranker_dir: Path) -> None:
    r = OnnxReranker(tiny_reranker_dir, max_length=16)
    out = r.score("word " * 100, ["word", "other"])
    assert out.shape == (2,) and out[0] > out[1]


def test_missing_directory_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="Reranker"):
        OnnxReranker(tmp_path / "nowhere")


def test_load_reranker_returns_the_model(tiny_reranker_dir: Path) -> None:
    r = load_reranker(tiny_reranker_dir, threads=1)
    assert r is not None and r.score("a", ["a"]).tolist() == [1.0]


def test_load_reranker_falls_back_with_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="keymem.models"):
        assert load_reranker(tmp_path / "missing") is None
    warnings = [r for r in caplog.records if r.name == "keymem.models" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "falls back" in warnings[0].getMessage()


def test_load_reranker_survives_a_corrupt_model(
    tmp_path: Path, tiny_reranker_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shutil.copyfile(tiny_reranker_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"\x00garbage")
    with caplog.at_level(logging.WARNING, logger="keymem.models"):
        assert load_reranker(tmp_path) is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
