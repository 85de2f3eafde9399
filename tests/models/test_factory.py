"""build_embedder / build_reranker: which backend, which directory, which fallbacks."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

import keymem.models.download as download
from keymem.errors import ModelError
from keymem.models.factory import build_embedder, build_reranker
from keymem.models.onnx_embed import OnnxEmbedder
from keymem.models.openai_embed import OpenAIEmbedder
from keymem.models.profiles import ModelProfile, resolve_model
from keymem.models.rerank import OnnxReranker
from keymem.settings import Settings, load_settings
from tests.models.test_identify import MINILM_AS_BGE_M3, copy_dir, tiny_embedder_onnx


def make(tmp_path: Path, **overrides: object) -> Settings:
    return load_settings({}, data_dir=tmp_path / "data", embed_threads=1, rerank_threads=1, **overrides)


def test_openai_needs_a_key(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        build_embedder(make(tmp_path, embedding_backend="openai"))


def test_openai_is_chosen_by_the_key(tmp_path: Path) -> None:
    e = build_embedder(make(tmp_path, openai_api_key="sk-x", openai_embedding_model="text-embedding-3-large"))
    assert isinstance(e, OpenAIEmbedder)
    assert e.fingerprint == "openai:text-embedding-3-large" and e.dimension == 3072


def test_local_path_of_a_known_model_uses_its_profile(tmp_path: Path, minilm_dir: Path) -> None:
    e = build_embedder(
        make(
            tmp_path,
            embedding_backend="local",
            local_embedding_model="all-MiniLM-L6-v2",
            local_embedding_model_path=minilm_dir,
        )
    )
    assert isinstance(e, OnnxEmbedder)
    assert e.fingerprint == "local:minilm-l6-v2+nopad" and e.profile == "minilm" and e.pooling == "mean"
    assert e.embed(["car"]).shape == (1, 384)


def test_local_path_of_an_unknown_model_warns_and_mean_pools(
    tmp_path: Path, minilm_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="keymem.models"):
        e = build_embedder(
            make(
                tmp_path,
                embedding_backend="local",
                local_embedding_model="acme-embed",
                local_embedding_model_path=minilm_dir,
            )
        )
    assert isinstance(e, OnnxEmbedder)
    assert e.pooling == "mean" and e.profile == "acme-embed" and e.fingerprint == "local:acme-embed+nopad"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("acme-embed" in w and "LOCAL_EMBEDDING_MODEL=minilm-l6-v2" in w for w in warnings), warnings


def test_a_minilm_directory_left_named_bge_m3_is_refused(tmp_path: Path, minilm_dir: Path) -> None:
    """LOCAL_EMBEDDING_MODEL left at its default (bge-m3) over a MiniLM directory: one line, no embedder."""
    settings = make(tmp_path, embedding_backend="local", local_embedding_model_path=minilm_dir)
    assert settings.local_embedding_model == "bge-m3"
    with pytest.raises(ModelError) as err:
        build_embedder(settings, progress=False)
    assert str(err.value) == MINILM_AS_BGE_M3
    # named correctly it starts, with MiniLM's pooling and thresholds
    e = build_embedder(settings.with_overrides(local_embedding_model="minilm"), progress=False)
    assert isinstance(e, OnnxEmbedder)
    assert (e.fingerprint, e.pooling, e.profile, e.dimension) == ("local:minilm-l6-v2+nopad", "mean", "minilm", 384)


def test_nothing_is_fetched_into_a_directory_of_another_model(
    tmp_path: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal comes before the repair: bge-m3's tokenizer never lands in a MiniLM directory."""
    d = copy_dir(minilm_dir, tmp_path / "no-tokenizer", without=("tokenizer.json",))

    def no_download(*args: object, **kwargs: object) -> Path:
        raise AssertionError("ensure_model was called")

    monkeypatch.setattr(download, "ensure_model", no_download)
    with pytest.raises(ModelError, match="not bge-m3 .*1024 dims"):
        build_embedder(make(tmp_path, embedding_backend="local", local_embedding_model_path=d), progress=False)


def test_a_directory_without_config_is_checked_by_its_output_width(tmp_path: Path, minilm_dir: Path) -> None:
    d = copy_dir(minilm_dir, tmp_path / "bare", without=("config.json",))
    settings = make(tmp_path, embedding_backend="local", local_embedding_model="bge-m3", local_embedding_model_path=d)
    with pytest.raises(ModelError, match=r"holds a model \(384 dims, WordPiece tokenizer, no config.json\), not bge-m3"):
        build_embedder(settings, progress=False)
    e = build_embedder(settings.with_overrides(local_embedding_model="minilm-l6-v2"), progress=False)
    assert isinstance(e, OnnxEmbedder) and e.profile == "minilm" and e.embed(["car"]).shape == (1, 384)


def test_an_undeclared_output_width_is_measured_at_start(tmp_path: Path, minilm_dir: Path) -> None:
    """An export whose graph leaves the width symbolic is run once; an 8-dim model is not MiniLM."""
    d = tmp_path / "symbolic"
    d.mkdir()
    shutil.copyfile(minilm_dir / "tokenizer.json", d / "tokenizer.json")
    tiny_embedder_onnx(d / "model.onnx", width=8, symbolic=True)
    with pytest.raises(ModelError) as err:
        build_embedder(make(tmp_path, embedding_backend="local", local_embedding_model="minilm-l6-v2",
                            local_embedding_model_path=d), progress=False)
    assert str(err.value).startswith(
        "LOCAL_EMBEDDING_MODEL_PATH holds a model (8 dims, WordPiece tokenizer, no config.json) that is neither "
        "minilm-l6-v2 (BERT, 384 dims) nor another known model: set LOCAL_EMBEDDING_MODEL to a name of your own"
    )
    # under a name of its own it runs (mean pooling, uncalibrated thresholds)
    e = build_embedder(make(tmp_path, embedding_backend="local", local_embedding_model="tiny-8",
                            local_embedding_model_path=d), progress=False)
    assert e.dimension == 8


def test_a_misnamed_directory_stops_the_store_from_opening(tmp_path: Path, minilm_dir: Path) -> None:
    """What the daemon and the stdio server do at start: the load fails with the line, no store is made."""
    from keymem.memory.graph import MemoryGraph
    from keymem.server.host import GraphHost

    settings = make(tmp_path, embedding_backend="local", local_embedding_model_path=minilm_dir, rerank=False)
    with pytest.raises(ModelError) as err:
        MemoryGraph.open(settings, progress=False)
    assert str(err.value) == MINILM_AS_BGE_M3
    host = GraphHost(settings).start()
    with pytest.raises(ModelError) as err:
        host.wait(timeout=60)
    assert str(err.value) == MINILM_AS_BGE_M3 and host.state == "failed"
    assert not settings.db_path.exists()


def test_local_path_with_a_custom_file_name(tmp_path: Path, minilm_dir: Path) -> None:
    d = tmp_path / "custom"
    d.mkdir()
    shutil.copyfile(minilm_dir / "tokenizer.json", d / "tokenizer.json")
    (d / "weights.onnx").symlink_to((minilm_dir / "model.onnx").resolve())
    e = build_embedder(
        make(
            tmp_path,
            embedding_backend="local",
            local_embedding_model="minilm-l6-v2",
            local_embedding_model_path=d,
            local_embedding_model_file="weights.onnx",
        )
    )
    assert e.embed(["car"]).shape == (1, 384)


def test_named_model_is_ensured_under_models_dir(
    tmp_path: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, Path]] = []

    def fake_ensure(
        profile: ModelProfile, dest: Path, *, endpoint: str | None = None, progress: bool = True
    ) -> Path:
        seen.append((profile.name, dest))
        shutil.copytree(minilm_dir, dest, symlinks=True)
        return dest

    monkeypatch.setattr(download, "ensure_model", fake_ensure)
    settings = make(tmp_path, embedding_backend="local", local_embedding_model="MINILM-L6-V2")
    e = build_embedder(settings, progress=False)
    assert seen == [("minilm-l6-v2", settings.models_dir / "minilm-l6-v2")]
    assert isinstance(e, OnnxEmbedder) and e.profile == "minilm"


def test_unknown_named_model_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="Known models"):
        build_embedder(make(tmp_path, embedding_backend="local", local_embedding_model="nope-model"))


def test_bge_m3_profile_is_what_the_factory_would_run(
    tmp_path: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the MiniLM weights stand in for bge-m3: only the wiring (name, pooling, profile) is checked
    monkeypatch.setattr(
        download, "ensure_model", lambda p, d, **k: shutil.copytree(minilm_dir, d, symlinks=True)
    )
    e = build_embedder(make(tmp_path, embedding_backend="local", local_embedding_model="bgem3"))
    assert isinstance(e, OnnxEmbedder)
    assert e.fingerprint == "local:bge-m3+nopad" and e.pooling == "cls" and e.profile == "bge"
    assert resolve_model("bge-m3").max_length == 512


def test_reranker_disabled(tmp_path: Path) -> None:
    assert build_reranker(make(tmp_path, rerank=False)) is None


def test_reranker_from_a_path(tmp_path: Path, tiny_reranker_dir: Path) -> None:
    r = build_reranker(make(tmp_path, rerank_model_path=tiny_reranker_dir))
    assert isinstance(r, OnnxReranker)


def test_reranker_download_failure_falls_back_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(dest: Path, *, endpoint: str | None = None, progress: bool = True) -> Path:
        raise ModelError("Could not download onnx/model_quantized.onnx")

    monkeypatch.setattr(download, "ensure_reranker", failing)
    with caplog.at_level(logging.WARNING, logger="keymem.models"):
        assert build_reranker(make(tmp_path)) is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_reranker_bad_path_falls_back_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="keymem.models"):
        assert build_reranker(make(tmp_path, rerank_model_path=tmp_path / "missing")) is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
