"""A model directory is identified from its own files against the model it is named (issue 12, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from keymem.models import identify
from keymem.models.identify import ModelFacts
from keymem.models.profiles import MODELS, find_model, resolve_model

MINILM_AS_BGE_M3 = (
    "LOCAL_EMBEDDING_MODEL_PATH holds all-MiniLM-L6-v2 (BERT, 384 dims), not bge-m3 (XLM-RoBERTa, 1024 dims): "
    "set LOCAL_EMBEDDING_MODEL=minilm-l6-v2"
)


def copy_dir(src: Path, dest: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A copy of a model directory (model.onnx stays a symlink) lacking some files."""
    dest.mkdir()
    for f in src.iterdir():
        if f.name in without:
            continue
        if f.name == "model.onnx":
            (dest / f.name).symlink_to(f.resolve())
        else:
            shutil.copyfile(f, dest / f.name)
    return dest


def tiny_embedder_onnx(path: Path, *, width: int, symbolic: bool, vocab: int = 30522) -> Path:
    """input_ids -> Gather(table) = [batch, sequence, width]; the output width declared or symbolic."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((vocab, width)).astype(np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])],
        "tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "sequence", "hidden" if symbolic else width])],
        initializer=[table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


# -- reading the files ------------------------------------------------------------------------------


def test_graph_io_is_read_from_the_file_as_onnxruntime_declares_it(minilm_dir: Path) -> None:
    import onnxruntime as ort

    inputs, outputs = identify.onnx_io(minilm_dir / "model.onnx")
    session = ort.InferenceSession(str(minilm_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    assert inputs == [(i.name, tuple(i.shape)) for i in session.get_inputs()]
    assert outputs == [(o.name, tuple(o.shape)) for o in session.get_outputs()]
    assert outputs == [("last_hidden_state", ("batch", "sequence", 384))]
    assert identify.onnx_output_dim(minilm_dir / "model.onnx") == 384


def test_a_symbolic_output_width_is_not_guessed(tmp_path: Path) -> None:
    declared = tiny_embedder_onnx(tmp_path / "declared.onnx", width=8, symbolic=False, vocab=50)
    symbolic = tiny_embedder_onnx(tmp_path / "symbolic.onnx", width=8, symbolic=True, vocab=50)
    assert identify.onnx_io(symbolic)[1] == [("last_hidden_state", ("batch", "sequence", "hidden"))]
    assert identify.onnx_output_dim(declared) == 8
    assert identify.onnx_output_dim(symbolic) is None


@pytest.mark.parametrize("content", [b"", b"not an onnx model at all", b"\x3a\xff\xff\xff\xff\x0f"])
def test_a_file_that_is_not_onnx_says_nothing(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(content)
    with pytest.raises(ValueError):
        identify.onnx_io(bad)
    assert identify.onnx_output_dim(bad) is None
    assert identify.onnx_output_dim(tmp_path / "missing.onnx") is None


def test_facts_of_the_minilm_directory(minilm_dir: Path) -> None:
    facts = identify.read_facts(minilm_dir)
    assert facts == ModelFacts(model_type="bert", architecture="BertModel", hidden_size=384, layers=6,
                               vocab_size=30522, max_positions=512, tokenizer="WordPiece", tokenizer_vocab=30522,
                               output_dim=384, has_config=True)
    assert identify.describe(facts) == "BERT, 384 dims, 6 layers, 30,522 tokens"
    assert identify.fitting(facts) == (resolve_model("minilm-l6-v2"),)


def test_an_empty_directory_says_nothing(tmp_path: Path) -> None:
    facts = identify.read_facts(tmp_path)
    assert not facts.says_anything() and identify.fitting(facts) == MODELS
    assert all(identify.check(p, facts) is None for p in MODELS)


# -- comparing ---------------------------------------------------------------------------------------


def test_minilm_named_bge_m3_says_which_name_fits(minilm_dir: Path) -> None:
    mismatch = identify.check(resolve_model("bge-m3"), identify.read_facts(minilm_dir))
    assert mismatch is not None and mismatch.line == MINILM_AS_BGE_M3
    assert "\n" not in mismatch.line


@pytest.mark.parametrize("name", ["minilm-l6-v2", "minilm", "all-MiniLM-L6-v2"])
def test_minilm_named_as_itself_passes(minilm_dir: Path, name: str) -> None:
    assert identify.check(resolve_model(name), identify.read_facts(minilm_dir)) is None


def test_same_family_and_width_are_told_apart_by_layers(minilm_dir: Path) -> None:
    mismatch = identify.check(resolve_model("fast-bge-small-en-v1.5"), identify.read_facts(minilm_dir))
    assert mismatch is not None
    assert mismatch.line == (
        "LOCAL_EMBEDDING_MODEL_PATH holds all-MiniLM-L6-v2 (BERT, 384 dims, 6 layers), not "
        "fast-bge-small-en-v1.5 (BERT, 384 dims, 12 layers): set LOCAL_EMBEDDING_MODEL=minilm-l6-v2"
    )


def test_every_profile_is_identified_by_its_own_config() -> None:
    """Each known model's config facts fit that model only (bge-m3 and e5-large differ in positions)."""
    for profile in MODELS:
        shape = profile.shape
        assert shape is not None and profile.display
        facts = ModelFacts(model_type=shape.model_type, hidden_size=profile.dimension, layers=shape.layers,
                           vocab_size=shape.vocab_size, max_positions=shape.max_positions, tokenizer=shape.tokenizer,
                           tokenizer_vocab=shape.vocab_size, output_dim=profile.dimension, has_config=True)
        assert identify.fitting(facts) == (profile,), profile.name
        for other in MODELS:
            mismatch = identify.check(other, facts)
            assert (mismatch is None) == (other is profile)
            if mismatch is not None:
                assert mismatch.fix == f"set LOCAL_EMBEDDING_MODEL={profile.name}"


def test_e5_large_named_bge_m3() -> None:
    facts = ModelFacts(model_type="xlm-roberta", hidden_size=1024, layers=24, vocab_size=250002, max_positions=514,
                       tokenizer="Unigram", tokenizer_vocab=250002, output_dim=1024, has_config=True)
    mismatch = identify.check(resolve_model("bge-m3"), facts)
    assert mismatch is not None and mismatch.line == (
        "LOCAL_EMBEDDING_MODEL_PATH holds multilingual-e5-large (XLM-RoBERTa, 1024 dims, 514 positions), not "
        "bge-m3 (XLM-RoBERTa, 1024 dims, 8194 positions): set LOCAL_EMBEDDING_MODEL=fast-multilingual-e5-large"
    )


def test_an_unknown_model_is_told_how_to_be_named(minilm_dir: Path, tmp_path: Path) -> None:
    d = copy_dir(minilm_dir, tmp_path / "distil")
    config = json.loads((d / "config.json").read_text())
    config.update(model_type="distilbert", architectures=["DistilBertModel"])
    (d / "config.json").write_text(json.dumps(config))
    mismatch = identify.check(resolve_model("bge-m3"), identify.read_facts(d))
    assert mismatch is not None and mismatch.fits == ()
    assert mismatch.what == (
        "LOCAL_EMBEDDING_MODEL_PATH holds a model (DistilBERT, 384 dims) that is neither bge-m3 "
        "(XLM-RoBERTa, 1024 dims) nor another known model"
    )
    assert mismatch.fix.startswith("set LOCAL_EMBEDDING_MODEL to a name of your own (e.g. LOCAL_EMBEDDING_MODEL=my-model")
    assert identify.suggestion(identify.read_facts(d)) is None


def test_without_config_the_output_width_decides(minilm_dir: Path, tmp_path: Path) -> None:
    d = copy_dir(minilm_dir, tmp_path / "bare", without=("config.json",))
    facts = identify.read_facts(d)
    assert not facts.has_config and facts.output_dim == 384 and facts.model_type is None
    assert identify.check(resolve_model("minilm-l6-v2"), facts) is None
    assert identify.check(resolve_model("fast-bge-small-en-v1.5"), facts) is None  # nothing tells them apart
    mismatch = identify.check(resolve_model("bge-m3"), facts)
    assert mismatch is not None and mismatch.line == (
        "LOCAL_EMBEDDING_MODEL_PATH holds a model (384 dims, WordPiece tokenizer, no config.json), not bge-m3 "
        "(XLM-RoBERTa, 1024 dims): set LOCAL_EMBEDDING_MODEL to the one it is (fast-bge-small-en-v1.5 or minilm-l6-v2)"
    )
    bge_base = identify.check(resolve_model("fast-bge-base-en-v1.5"), facts)
    assert bge_base is not None and "not fast-bge-base-en-v1.5 (BERT, 768 dims)" in bge_base.what


def test_a_config_and_graph_that_disagree_are_both_checked(minilm_dir: Path, tmp_path: Path) -> None:
    """A bge-m3 config.json dropped next to MiniLM weights does not make them bge-m3."""
    d = copy_dir(minilm_dir, tmp_path / "mixed")
    config = {"architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "hidden_size": 1024,
              "num_hidden_layers": 24, "vocab_size": 250002, "max_position_embeddings": 8194}
    (d / "config.json").write_text(json.dumps(config))
    facts = identify.read_facts(d)
    assert identify.contradictions(resolve_model("bge-m3"), facts) == ["output_dim", "tokenizer", "tokenizer_vocab"]
    mismatch = identify.check(resolve_model("bge-m3"), facts)
    assert mismatch is not None and mismatch.fits == ()


def test_names_are_the_profiles_own() -> None:
    assert find_model("minilm") is resolve_model("minilm-l6-v2")
    assert identify.VAR == "LOCAL_EMBEDDING_MODEL_PATH"
