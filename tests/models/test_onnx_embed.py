"""OnnxEmbedder with the real MiniLM int8 model: shapes, meaning, dynamic padding, pooling, errors."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from keymem.errors import ModelError
from keymem.models.base import EmbeddingBackend
from keymem.models.onnx_embed import OnnxEmbedder

TEXTS = [
    "car",
    "a considerably longer key phrase about programming languages and their compilers",
    "automobile",
    "",
    "favourite food",
    "coding language",
    "banana",
    "the user's home address in Seoul",
]


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_shape_dtype_and_unit_rows(minilm_embedder: OnnxEmbedder) -> None:
    out = minilm_embedder.embed(TEXTS)
    assert out.shape == (len(TEXTS), 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert isinstance(minilm_embedder, EmbeddingBackend)


def test_identity(minilm_embedder: OnnxEmbedder) -> None:
    assert minilm_embedder.fingerprint == "local:minilm-l6-v2+nopad"
    assert minilm_embedder.dimension == 384
    assert minilm_embedder.profile == "minilm"


def test_empty_input(minilm_embedder: OnnxEmbedder) -> None:
    out = minilm_embedder.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_one_string_is_rejected(minilm_embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        minilm_embedder.embed("car")  # type: ignore[arg-type]


def test_close_pairs_beat_unrelated_ones(minilm_embedder: OnnxEmbedder) -> None:
    e = dict(zip(TEXTS, minilm_embedder.embed(TEXTS), strict=True))
    assert cos(e["car"], e["automobile"]) > cos(e["car"], e["banana"]) + 0.3
    assert cos(e["coding language"], e[TEXTS[1]]) > cos(e["coding language"], e["favourite food"])
    assert cos(e["car"], e["automobile"]) > 0.8


def test_batch_equals_one_by_one(minilm_dir: Path) -> None:
    # batch_size 3 forces several sorted batches of different widths
    emb = OnnxEmbedder(minilm_dir, name="minilm-l6-v2", batch_size=3)
    batched = emb.embed(TEXTS)
    single = np.stack([emb.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batched, single, atol=1e-4)


def test_vector_does_not_depend_on_batch_mates(minilm_embedder: OnnxEmbedder) -> None:
    alone = minilm_embedder.embed(["car"])[0]
    with_long = minilm_embedder.embed(["word " * 200, "car"])[1]
    np.testing.assert_allclose(alone, with_long, atol=1e-4)


def test_mean_pooling_matches_a_manual_computation(minilm_dir: Path, minilm_embedder: OnnxEmbedder) -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tok.no_padding()
    enc = tok.encode("programming language")
    sess = ort.InferenceSession(str(minilm_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    ids = np.array([enc.ids], dtype=np.int64)
    hidden = sess.run(
        None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    )[0]
    manual = hidden[0].mean(axis=0)
    manual /= np.linalg.norm(manual)
    np.testing.assert_allclose(minilm_embedder.embed(["programming language"])[0], manual, atol=1e-5)


def test_cls_pooling_differs_from_mean(minilm_dir: Path, minilm_embedder: OnnxEmbedder) -> None:
    cls = OnnxEmbedder(minilm_dir, name="minilm-cls-test", pooling="cls")
    a = cls.embed(["programming language"])[0]
    b = minilm_embedder.embed(["programming language"])[0]
    assert abs(np.linalg.norm(a) - 1) < 1e-5
    assert cos(a, b) < 0.999


def test_prefixes_follow_the_kind(minilm_dir: Path, minilm_embedder: OnnxEmbedder) -> None:
    e5_like = OnnxEmbedder(minilm_dir, name="prefixed", query_prefix="query: ", passage_prefix="passage: ")
    np.testing.assert_allclose(
        e5_like.embed(["car"], kind="query"), minilm_embedder.embed(["query: car"]), atol=1e-5
    )
    np.testing.assert_allclose(
        e5_like.embed(["car"], kind="passage"), minilm_embedder.embed(["passage: car"]), atol=1e-5
    )
    # no prefix configured: the kinds are the same space
    np.testing.assert_allclose(
        minilm_embedder.embed(["car"], kind="passage"),
        minilm_embedder.embed(["car"], kind="query"),
        atol=1e-6,
    )


def test_long_text_is_truncated_not_an_error(minilm_dir: Path) -> None:
    short = OnnxEmbedder(minilm_dir, name="minilm-l6-v2", max_length=8)
    long_text = "alpha beta gamma delta epsilon zeta eta theta iota kappa " * 100
    out = short.embed([long_text])
    assert out.shape == (1, 384)
    # the first 6 word pieces + [CLS]/[SEP] are all the model sees
    np.testing.assert_allclose(out, short.embed(["alpha beta gamma delta epsilon zeta"]), atol=1e-5)


def test_unknown_model_name_gets_its_own_profile(minilm_dir: Path) -> None:
    assert OnnxEmbedder(minilm_dir, name="my-custom-model").profile == "my-custom-model"
    assert OnnxEmbedder(minilm_dir, name="x", profile="e5").profile == "e5"


def test_concurrent_embeds_agree(minilm_embedder: OnnxEmbedder) -> None:
    expected = minilm_embedder.embed(TEXTS)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(minilm_embedder.embed(TEXTS))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results:
        np.testing.assert_allclose(r, expected, atol=1e-5)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=str(tmp_path / "nope")):
        OnnxEmbedder(tmp_path / "nope", name="x")


def test_missing_model_file(tmp_path: Path, minilm_dir: Path) -> None:
    shutil.copyfile(minilm_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    with pytest.raises(ModelError, match="model.onnx"):
        OnnxEmbedder(tmp_path, name="x")


def test_missing_tokenizer(tmp_path: Path, minilm_dir: Path) -> None:
    (tmp_path / "model.onnx").symlink_to((minilm_dir / "model.onnx").resolve())
    with pytest.raises(ModelError, match="tokenizer.json"):
        OnnxEmbedder(tmp_path, name="x")


def test_custom_model_file_name(tmp_path: Path, minilm_dir: Path) -> None:
    shutil.copyfile(minilm_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "custom.onnx").symlink_to((minilm_dir / "model.onnx").resolve())
    assert OnnxEmbedder(tmp_path, name="x", model_file="custom.onnx").embed(["car"]).shape == (1, 384)


def test_corrupt_model_is_a_model_error(tmp_path: Path, minilm_dir: Path) -> None:
    shutil.copyfile(minilm_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.onnx").write_bytes(b"this is not an onnx file")
    with pytest.raises(ModelError, match="Cannot load ONNX model"):
        OnnxEmbedder(tmp_path, name="x")


def test_session_runs_without_the_cpu_memory_arena(minilm_embedder: OnnxEmbedder) -> None:
    # The arena would keep the largest call's buffers for the daemon's lifetime (bench/onnx_memory.py).
    opts = minilm_embedder._session.get_session_options()
    assert opts.enable_cpu_mem_arena is False
    assert opts.intra_op_num_threads >= 1 and opts.inter_op_num_threads == 1
    long_batch = minilm_embedder.embed([" ".join(TEXTS * 40)] * 8)
    assert long_batch.shape[0] == 8 and np.isfinite(long_batch).all()
