"""ensure_model / ensure_reranker against a loopback Hub: full fetch, repair, no-op, failures."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from keymem.errors import ModelError
from keymem.models.download import ensure_model, ensure_reranker, is_complete
from keymem.models.profiles import RERANKER, ModelProfile, resolve_model
from tests.models.fake_hub import FakeHub

PROFILE: ModelProfile = resolve_model("bge-m3")  # model and tokenizer come from two repos


def publish(hub: FakeHub, files, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Serve distinct fake content for every file of a profile; returns local name -> bytes."""
    out = {}
    for f in files:
        data = f"{f.repo_id}/{f.path} ".encode() * 50
        out[f.local_name] = data
        if f.local_name not in skip:
            hub.add(f.repo_id, f.path, data)
    return out


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub backs off with time.sleep between retries; tests need not wait."""
    monkeypatch.setattr(time, "sleep", lambda _s: None)


def test_full_download_places_every_file(fake_hub: FakeHub, tmp_path: Path) -> None:
    expected = publish(fake_hub, PROFILE.files())
    dest = tmp_path / "bge-m3"
    assert ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False) == dest
    for name, data in expected.items():
        assert (dest / name).read_bytes() == data
    assert (
        (dest / "model.onnx").read_bytes().startswith(b"onnx-community/bge-m3-ONNX/onnx/model_quantized.onnx")
    )
    assert (dest / "tokenizer.json").read_bytes().startswith(b"BAAI/bge-m3/tokenizer.json")
    # nothing temporary is left behind
    assert not [p for p in dest.iterdir() if p.name.startswith(".download-") or p.suffix == ".part"]
    assert "onnx-community/bge-m3-ONNX:onnx/model_quantized.onnx" in fake_hub.fetched()


def test_complete_directory_makes_no_request(fake_hub: FakeHub, tmp_path: Path) -> None:
    publish(fake_hub, PROFILE.files())
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "model.onnx").write_bytes(b"x" * 10)
    (dest / "tokenizer.json").write_bytes(b"{}")
    assert is_complete(PROFILE.files(), dest)
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert fake_hub.requests == []
    assert (dest / "model.onnx").read_bytes() == b"x" * 10  # untouched


def test_repair_fetches_only_missing_files(fake_hub: FakeHub, tmp_path: Path) -> None:
    expected = publish(fake_hub, PROFILE.files())
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "model.onnx").write_bytes(b"already here")
    for name in ("config.json", "tokenizer_config.json", "special_tokens_map.json"):
        (dest / name).write_bytes(b"{}")
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert fake_hub.fetched() == ["BAAI/bge-m3:tokenizer.json"]
    assert (dest / "tokenizer.json").read_bytes() == expected["tokenizer.json"]
    assert (dest / "model.onnx").read_bytes() == b"already here"


def test_empty_file_counts_as_missing(fake_hub: FakeHub, tmp_path: Path) -> None:
    expected = publish(fake_hub, PROFILE.files())
    dest = tmp_path / "m"
    dest.mkdir()
    (dest / "model.onnx").write_bytes(b"")
    (dest / "tokenizer.json").write_bytes(b"{}")
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert (dest / "model.onnx").read_bytes() == expected["model.onnx"]


def test_missing_optional_file_is_tolerated(fake_hub: FakeHub, tmp_path: Path) -> None:
    publish(fake_hub, PROFILE.files(), skip=("special_tokens_map.json",))
    dest = tmp_path / "m"
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert (dest / "model.onnx").is_file() and (dest / "tokenizer.json").is_file()
    assert not (dest / "special_tokens_map.json").exists()


def test_missing_required_file_is_a_model_error(fake_hub: FakeHub, tmp_path: Path) -> None:
    publish(fake_hub, PROFILE.files(), skip=("model.onnx",))
    with pytest.raises(ModelError) as err:
        ensure_model(PROFILE, tmp_path / "m", endpoint=fake_hub.url, progress=False)
    msg = str(err.value)
    assert "onnx/model_quantized.onnx" in msg and "onnx-community/bge-m3-ONNX" in msg
    assert "LOCAL_EMBEDDING_MODEL_PATH" in msg


def test_failing_server_is_a_model_error(fake_hub: FakeHub, tmp_path: Path, no_sleep: None) -> None:
    fake_hub.fail_status = 500
    dest = tmp_path / "m"
    with pytest.raises(ModelError) as err:
        ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    msg = str(err.value)
    assert "model_quantized.onnx" in msg and "LOCAL_EMBEDDING_MODEL_PATH" in msg
    assert not (dest / "model.onnx").exists()


def test_unreachable_endpoint_is_a_model_error(fake_hub: FakeHub, tmp_path: Path, no_sleep: None) -> None:
    hub = FakeHub().start()
    url = hub.url
    hub.stop()  # nothing listens there any more
    with pytest.raises(ModelError, match="Could not download"):
        ensure_model(PROFILE, tmp_path / "m", endpoint=url, progress=False)


def test_offline_mode_is_a_model_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelError, match="offline mode"):
        ensure_model(PROFILE, tmp_path / "m", endpoint="http://127.0.0.1:9", progress=False)


def test_cut_download_never_leaves_a_model_file(fake_hub: FakeHub, tmp_path: Path, no_sleep: None) -> None:
    publish(fake_hub, PROFILE.files())
    fake_hub.truncate.add("onnx/model_quantized.onnx")
    dest = tmp_path / "m"
    with pytest.raises(ModelError):
        ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert not (dest / "model.onnx").exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(".download-") or p.suffix == ".part"]
    # the next start repairs it
    fake_hub.truncate.clear()
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert is_complete(PROFILE.files(), dest)


def test_stale_leftovers_of_a_crash_are_cleaned(fake_hub: FakeHub, tmp_path: Path) -> None:
    publish(fake_hub, PROFILE.files())
    dest = tmp_path / "m"
    (dest / ".download-crashed").mkdir(parents=True)
    (dest / ".download-crashed" / "blob").write_bytes(b"half")
    (dest / "model.onnx.part").write_bytes(b"half")
    ensure_model(PROFILE, dest, endpoint=fake_hub.url, progress=False)
    assert not (dest / ".download-crashed").exists() and not (dest / "model.onnx.part").exists()


def test_nothing_reaches_stdout(fake_hub: FakeHub, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    publish(fake_hub, PROFILE.files())
    logging.getLogger("keymem.models").setLevel(logging.INFO)
    ensure_model(PROFILE, tmp_path / "m", endpoint=fake_hub.url, progress=True)
    out, _err = capfd.readouterr()
    assert out == ""


def test_reranker_download(fake_hub: FakeHub, tmp_path: Path) -> None:
    expected = publish(fake_hub, RERANKER.files())
    dest = ensure_reranker(tmp_path / "reranker", endpoint=fake_hub.url, progress=False)
    assert (dest / "model.onnx").read_bytes() == expected["model.onnx"]
    assert (dest / "tokenizer.json").read_bytes() == expected["tokenizer.json"]
    assert "onnx-community/bge-reranker-v2-m3-ONNX:onnx/model_quantized.onnx" in fake_hub.fetched()


def test_reranker_failure_names_its_variable(fake_hub: FakeHub, tmp_path: Path, no_sleep: None) -> None:
    fake_hub.fail_status = 503
    with pytest.raises(ModelError, match="KEYMEM_RERANK_MODEL_PATH"):
        ensure_reranker(tmp_path / "reranker", endpoint=fake_hub.url, progress=False)
