"""The MiniLM threshold profile still holds on the labelled key pairs (a regression guard).

If the model, the tokenizer handling or the pooling changes, cosines move: these checks fail
before the memory-layer tests start merging the wrong keys. Re-run bench/calibrate_keys.py
and update the "minilm" profile and docs/calibration.md together.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from keymem.models.onnx_embed import OnnxEmbedder
from keymem.models.profiles import thresholds_for

PAIRS = Path(__file__).resolve().parent.parent / "fixtures" / "key_pairs.json"


@pytest.fixture(scope="module")
def scored(minilm_embedder: OnnxEmbedder) -> list[dict]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    vecs = dict(zip(texts, minilm_embedder.embed(texts), strict=True))
    for p in pairs:
        p["cos"] = float(np.dot(vecs[p["a"]], vecs[p["b"]]))
        p["short"] = min(len(p["a"].strip()), len(p["b"].strip())) <= 3
    return pairs


def test_labelled_set_size_and_makeup(scored: list[dict]) -> None:
    labels = {p["label"] for p in scored}
    assert labels == {"merge", "related", "unrelated", "name"}
    assert len(scored) >= 120


def test_merge_threshold_has_no_false_merge(scored: list[dict]) -> None:
    t, calibrated = thresholds_for("minilm", {})
    assert calibrated
    long_kk = [p for p in scored if p["kind"] == "key-key" and not p["short"]]
    wrong = [
        (p["a"], p["b"], round(p["cos"], 3))
        for p in long_kk
        if p["label"] != "merge" and p["cos"] >= t.key_merge
    ]
    assert wrong == []
    merged = [p for p in long_kk if p["label"] == "merge" and p["cos"] >= t.key_merge]
    assert len(merged) >= 10  # it still merges plain paraphrases


def test_short_key_threshold_has_no_false_merge(scored: list[dict]) -> None:
    t, _ = thresholds_for("minilm", {})
    assert t.short_key_merge is not None
    short = [p for p in scored if p["kind"] == "key-key" and p["short"]]
    assert not [p for p in short if p["label"] != "merge" and p["cos"] >= t.short_key_merge]
    by_pair = {(p["a"], p["b"]): p["cos"] for p in short}
    assert by_pair[("car", "automobile")] >= t.short_key_merge
    assert by_pair[("dog", "puppy")] < t.short_key_merge


def test_recall_threshold_routes_most_and_few_strays(scored: list[dict]) -> None:
    t, _ = thresholds_for("minilm", {})
    pos = [p["cos"] for p in scored if p["label"] in ("merge", "related")]
    neg = [p["cos"] for p in scored if p["label"] == "unrelated"]
    recall = np.mean(np.array(pos) >= t.key_recall)
    stray = np.mean(np.array(neg) >= t.key_recall)
    assert recall >= 0.75 and stray <= 0.10
    assert t.key_recall > 0.45  # above the default KEYMEM_AUTOKEY_CONFIRM_FLOOR, so autokey has room


def test_names_never_merge(scored: list[dict]) -> None:
    t, _ = thresholds_for("minilm", {})
    for p in scored:
        if p["label"] == "name":
            limit = t.short_key_merge if p["short"] else t.key_merge
            assert limit is None or p["cos"] < limit, (p["a"], p["b"], p["cos"])
