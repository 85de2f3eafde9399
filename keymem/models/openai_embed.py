"""OpenAI (or OpenAI-compatible) embeddings over plain urllib: no SDK dependency.

Retries 429 and 5xx with exponential backoff (the API asks clients to), fails fast on other
4xx (a bad key or model will not fix itself), and never puts the API key in an error.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from keymem.errors import ModelError
from keymem.models.base import EmbedKind
from keymem.models.onnx_embed import l2_normalise

log = logging.getLogger("keymem.models")

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_BATCH = 256
_RETRY_STATUS = {429, 500, 502, 503, 504}


class OpenAIEmbedder:
    """An :class:`~keymem.models.base.EmbeddingBackend` calling ``POST {base_url}/embeddings``."""

    def __init__(
        self,
        api_key: str,
        model: str = "text-embedding-3-small",
        base_url: str = "https://api.openai.com/v1",
        timeout: float = 30,
        *,
        tries: int = 3,
        backoff: float = 1.0,
    ) -> None:
        if not api_key:
            raise ModelError("The OpenAI embedding backend needs OPENAI_API_KEY")
        self._api_key = api_key
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._timeout = timeout
        self._tries = max(1, tries)
        self._backoff = backoff
        self._dimension: int | None = KNOWN_DIMENSIONS.get(model)
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return f"openai:{self._model}"

    @property
    def profile(self) -> str:
        return "openai"

    @property
    def dimension(self) -> int:
        if self._dimension is None:  # a model we have no table entry for: ask once
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str], kind: EmbedKind = "query") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # The API rejects empty strings; a space embeds as "nothing" just as well.
        inputs = [t if t.strip() else " " for t in texts]
        parts = [self._request(inputs[i : i + MAX_BATCH]) for i in range(0, len(inputs), MAX_BATCH)]
        out = l2_normalise(np.concatenate(parts, axis=0))
        with self._lock:
            self._dimension = int(out.shape[1])
        return out

    def _request(self, batch: list[str]) -> np.ndarray:
        body = json.dumps({"model": self._model, "input": batch, "encoding_format": "float"}).encode()
        last = ""
        for attempt in range(self._tries):
            if attempt:
                time.sleep(self._backoff * (2 ** (attempt - 1)))
            req = urllib.request.Request(
                self._url,
                data=body,
                method="POST",
                headers={
                    "Authorization": f"Bearer {self._api_key}",
                    "Content-Type": "application/json",
                    "User-Agent": "keymem",
                },
            )
            try:
                with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                    payload = json.loads(resp.read())
                return self._parse(payload, len(batch))
            except urllib.error.HTTPError as exc:
                detail = _api_message(exc)
                last = f"HTTP {exc.code}{': ' + detail if detail else ''}"
                if exc.code not in _RETRY_STATUS:
                    raise ModelError(f"OpenAI embeddings request to {self._url} failed: {last}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except (ValueError, KeyError) as exc:  # not JSON, or not the expected shape
                raise ModelError(f"OpenAI embeddings response from {self._url} is malformed: {exc}") from None
            log.warning("OpenAI embeddings attempt %d/%d failed: %s", attempt + 1, self._tries, last)
        raise ModelError(f"OpenAI embeddings request to {self._url} failed after {self._tries} tries: {last}")

    @staticmethod
    def _parse(payload: Any, n: int) -> np.ndarray:
        data = payload["data"]
        if len(data) != n:
            raise ValueError(f"{len(data)} embeddings for {n} inputs")
        rows = sorted(data, key=lambda d: d.get("index", 0))
        return np.asarray([r["embedding"] for r in rows], dtype=np.float32)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIEmbedder(model={self._model!r}, url={self._url!r})"


def _api_message(exc: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(exc.read() or b"{}")
        message = payload.get("error", {}).get("message", "")
    except (ValueError, AttributeError, OSError):
        return ""
    return str(message)[:300]
