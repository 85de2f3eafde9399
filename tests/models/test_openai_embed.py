"""OpenAIEmbedder against a loopback server that imitates POST /v1/embeddings."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from keymem.errors import ModelError
from keymem.models.base import EmbeddingBackend
from keymem.models.openai_embed import MAX_BATCH, OpenAIEmbedder

KEY = "sk-test-secret-123"


def fake_vector(text: str, dim: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return (np.random.default_rng(seed).normal(size=dim) * 3).tolist()  # deliberately not unit length


@dataclass
class FakeOpenAI:
    dim: int = 8
    fail: list[int] = field(default_factory=list)  # statuses to answer before succeeding
    calls: list[dict] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.calls.append(body)
            state.auth.append(self.headers.get("Authorization"))
            if self.path != "/v1/embeddings":
                return self._send(404, {"error": {"message": "not found"}})
            if self.headers.get("Authorization") != f"Bearer {KEY}":
                return self._send(401, {"error": {"message": "Incorrect API key provided"}})
            if state.fail:
                return self._send(state.fail.pop(0), {"error": {"message": "try later"}})
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, state.dim)}
                for i, t in enumerate(body["input"])
            ]
            data.reverse()  # the API may return rows in any order; index is what counts
            self._send(200, {"object": "list", "data": data, "model": body["model"]})

        def _send(self, status: int, payload: dict) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


def embedder(api: FakeOpenAI, model: str = "test-model", key: str = KEY) -> OpenAIEmbedder:
    return OpenAIEmbedder(key, model=model, base_url=api.url, timeout=5, backoff=0.0)


def test_embeds_normalises_and_keeps_order(api: FakeOpenAI) -> None:
    e = embedder(api)
    texts = ["car", "automobile", "banana"]
    out = e.embed(texts)
    assert out.shape == (3, 8) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    for row, t in zip(out, texts, strict=True):
        v = np.array(fake_vector(t, 8))
        np.testing.assert_allclose(row, v / np.linalg.norm(v), atol=1e-6)
    assert api.auth == [f"Bearer {KEY}"]
    assert api.calls[0]["model"] == "test-model"
    assert isinstance(e, EmbeddingBackend)


def test_identity_and_known_dimensions(api: FakeOpenAI) -> None:
    e = OpenAIEmbedder(KEY)
    assert e.fingerprint == "openai:text-embedding-3-small" and e.profile == "openai"
    assert e.dimension == 1536
    assert OpenAIEmbedder(KEY, model="text-embedding-3-large").dimension == 3072
    assert KEY not in repr(e)


def test_unknown_model_dimension_is_discovered(api: FakeOpenAI) -> None:
    e = embedder(api)
    assert e.dimension == 8
    assert len(api.calls) == 1


def test_empty_input_needs_no_request_when_dimension_known(api: FakeOpenAI) -> None:
    e = OpenAIEmbedder(KEY, model="text-embedding-3-small", base_url=api.url)
    assert e.embed([]).shape == (0, 1536)
    assert api.calls == []


def test_large_inputs_are_batched(api: FakeOpenAI) -> None:
    texts = [f"key {i}" for i in range(MAX_BATCH * 2 + 10)]
    out = embedder(api).embed(texts)
    assert out.shape == (len(texts), 8)
    assert [len(c["input"]) for c in api.calls] == [MAX_BATCH, MAX_BATCH, 10]
    v = np.array(fake_vector("key 300", 8))
    np.testing.assert_allclose(out[300], v / np.linalg.norm(v), atol=1e-6)


def test_empty_strings_are_sent_as_a_space(api: FakeOpenAI) -> None:
    embedder(api).embed(["", "x"])
    assert api.calls[0]["input"] == [" ", "x"]


def test_rate_limit_and_server_errors_are_retried(api: FakeOpenAI) -> None:
    api.fail = [429, 503]
    out = embedder(api).embed(["car"])
    assert out.shape == (1, 8)
    assert len(api.calls) == 3


def test_persistent_server_error_is_a_model_error(api: FakeOpenAI) -> None:
    api.fail = [500, 500, 500, 500]
    with pytest.raises(ModelError, match="after 3 tries: HTTP 500"):
        embedder(api).embed(["car"])
    assert len(api.calls) == 3


def test_bad_key_fails_fast_without_leaking_it(api: FakeOpenAI) -> None:
    with pytest.raises(ModelError) as err:
        embedder(api, key="sk-wrong-key").embed(["car"])
    assert "401" in str(err.value) and "Incorrect API key" in str(err.value)
    assert "sk-wrong-key" not in str(err.value)
    assert len(api.calls) == 1


def test_unreachable_server_is_a_model_error() -> None:
    e = OpenAIEmbedder(KEY, base_url="http://127.0.0.1:9/v1", timeout=2, backoff=0.0)
    with pytest.raises(ModelError, match="after 3 tries"):
        e.embed(["car"])


def test_missing_key_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("")
