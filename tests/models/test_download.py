"""ensure_model / ensure_reranker against a loopback Hub: full fetch, repair, no-op, failures, progress."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
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


# -- an unreachable hub fails fast (offline first use) -------------------------------------------

FAST = 2.0  # seconds: the budget for reporting an unreachable hub (huggingface_hub alone retries ~25 s)


def _fails_fast(endpoint: str, dest: Path) -> str:
    """The ModelError message of a download from ``endpoint``, checked to come within FAST seconds."""
    started = time.monotonic()
    with pytest.raises(ModelError) as err:
        ensure_model(PROFILE, dest, endpoint=endpoint, progress=False)
    elapsed = time.monotonic() - started
    assert elapsed < FAST, f"took {elapsed:.1f} s"
    msg = str(err.value)
    # the message still says where the files go by hand
    assert "Could not download onnx/model_quantized.onnx" in msg and "LOCAL_EMBEDDING_MODEL_PATH" in msg
    assert f"{endpoint}/onnx-community/bge-m3-ONNX/resolve/main/onnx/model_quantized.onnx" in msg
    assert str(dest / "model.onnx") in msg
    return msg


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of huggingface_hub's offline mode (tests/conftest.py sets it) and without proxies."""
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once closed


def test_closed_port_fails_fast(online: None, tmp_path: Path) -> None:
    msg = _fails_fast(f"http://127.0.0.1:{_closed_port()}", tmp_path / "m")
    assert "cannot connect to 127.0.0.1:" in msg
    assert not (tmp_path / "m").exists()  # nothing created for a download that cannot start


def test_unresolvable_host_fails_fast(online: None, tmp_path: Path) -> None:
    msg = _fails_fast("https://keymem-no-such-hub.invalid", tmp_path / "m")  # .invalid never resolves
    assert "keymem-no-such-hub.invalid:443" in msg and "resolved" in msg


def test_hanging_name_resolution_is_cut_short(online: None, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = socket.getaddrinfo

    def hang(host: str, *args: object, **kwargs: object) -> object:
        if host == "hub.example":
            release.wait(30)  # a DNS server that never answers
            raise socket.gaierror("released")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    try:
        msg = _fails_fast("https://hub.example", tmp_path / "m")
    finally:
        release.set()
    assert "could not be resolved within" in msg


def test_silent_host_fails_fast(online: None, tmp_path: Path) -> None:
    """A host that never answers the connection (a listener whose backlog is full drops SYNs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    filler: list[socket.socket] = []
    try:
        for _ in range(4):  # fill the accept queue; later connections hang
            c = socket.socket()
            c.settimeout(0.2)
            with contextlib.suppress(OSError):
                c.connect(("127.0.0.1", port))
            filler.append(c)
        probe = socket.socket()
        probe.settimeout(0.3)
        try:
            probe.connect(("127.0.0.1", port))
            pytest.skip("this kernel accepts connections beyond the backlog")
        except TimeoutError:
            pass
        finally:
            probe.close()
        msg = _fails_fast(f"http://127.0.0.1:{port}", tmp_path / "m")
        assert "did not accept a connection within" in msg
    finally:
        for c in filler:
            c.close()
        server.close()


def test_unreachable_proxy_fails_fast(online: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    msg = _fails_fast("https://hub.example", tmp_path / "m")  # never resolved: the proxy does that
    assert "the proxy 127.0.0.1:" in msg
    monkeypatch.setenv("NO_PROXY", "hub.example")
    assert "the proxy" not in _fails_fast(f"https://hub.example:{_closed_port()}", tmp_path / "m")


def test_reachability_is_checked_once_per_directory(fake_hub: FakeHub, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import keymem.models.download as download

    calls: list[str | None] = []
    real = download.check_reachable
    monkeypatch.setattr(download, "check_reachable", lambda endpoint: calls.append(endpoint) or real(endpoint))
    publish(fake_hub, PROFILE.files())
    ensure_model(PROFILE, tmp_path / "m", endpoint=fake_hub.url, progress=False)
    ensure_model(PROFILE, tmp_path / "m", endpoint=fake_hub.url, progress=False)  # complete: no probe
    assert calls == [fake_hub.url]


# -- progress ------------------------------------------------------------------------------------


def test_progress_lines_without_a_terminal(fake_hub: FakeHub, tmp_path: Path,
                                           capfd: pytest.CaptureFixture[str]) -> None:
    expected = publish(fake_hub, PROFILE.files())
    ensure_model(PROFILE, tmp_path / "bge-m3", endpoint=fake_hub.url, progress=True)
    out, err = capfd.readouterr()
    assert out == ""
    size = len(expected["model.onnx"])
    assert f"bge-m3/model.onnx: {size / 1024:.2f}kB of {size / 1024:.2f}kB (100%)" in err, err
    assert "bge-m3/tokenizer.json:" in err and "\r" not in err  # plain lines, no bar redraws


def test_progress_lines_while_a_file_downloads(fake_hub: FakeHub, tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants as hf_constants

    import keymem.models.download as download

    monkeypatch.setattr(download, "LINE_INTERVAL", 0.0)  # a line at every chunk
    monkeypatch.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 1024)
    data = b"m" * (8 * 1024)
    for f in PROFILE.files():
        fake_hub.add(f.repo_id, f.path, data if f.local_name == "model.onnx" else b"{}")
    ensure_model(PROFILE, tmp_path / "bge-m3", endpoint=fake_hub.url, progress=True)
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("bge-m3/model.onnx:")]
    assert "bge-m3/model.onnx: 1.00kB of 8.00kB (12%)" in lines
    assert lines[-1] == "bge-m3/model.onnx: 8.00kB of 8.00kB (100%)"


@pytest.mark.parametrize("size", [(40, 100), (0, 0)])  # (0, 0): a terminal that reports no size
def test_models_download_draws_bars_on_a_terminal(fake_hub: FakeHub, tmp_path: Path,
                                                  size: tuple[int, int]) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.conftest import KEYMEM

    publish(fake_hub, PROFILE.files())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KEYMEM_", "OPENAI_", "HF_", "LOCAL_EMBEDDING", "COLUMNS", "LINES"))}
    env.update({"KEYMEM_DATA_DIR": str(tmp_path / "data"), "EMBEDDING_BACKEND": "local",
                "LOCAL_EMBEDDING_MODEL": "bge-m3", "KEYMEM_RERANK": "false", "KEYMEM_DAEMON": "off",
                "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1"})
    child = pexpect.spawn(KEYMEM[0], [*KEYMEM[1:], "models", "download", "--endpoint", fake_hub.url],
                          env=env, encoding="utf-8", timeout=60, dimensions=size)
    child.expect(r"bge-m3/model\.onnx: 100%\|█+\| [\d.]+k/[\d.]+k")
    child.expect("embedding: bge-m3 ready")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
