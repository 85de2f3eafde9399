"""Cross-encoder reranking (bge-reranker-v2-m3 in production) with onnxruntime.

Each (query, passage) pair is encoded together; the passage is truncated, never the query,
because the query is what the score is about. Batches are padded only to their longest
pair. The output is the raw logit (bge-reranker-v2-m3: ~+4 relevant, ~-5 unrelated); callers
that gate on it (KEYMEM_RERANK_MIN_SCORE) use that scale.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keymem.errors import ModelError
from keymem.models._onnx import (
    check_model_dir,
    open_session,
    open_tokenizer,
    pad_batch,
    pad_id_of,
    session_feed,
)
from keymem.models.base import Reranker

log = logging.getLogger("keymem.models")


class OnnxReranker:
    """A :class:`~keymem.models.base.Reranker` over a directory with model.onnx + tokenizer.json."""

    def __init__(
        self,
        model_dir: Path,
        *,
        model_file: str = "model.onnx",
        threads: int = 1,
        max_length: int = 512,
        batch_size: int = 16,
        name: str = "bge-reranker-v2-m3",
    ) -> None:
        model_dir = Path(model_dir)
        self._model_path, tokenizer_path = check_model_dir(model_dir, model_file, "Reranker model")
        self._name = name
        self._max_length = max_length
        self._batch_size = max(1, batch_size)
        self._tokenizer = open_tokenizer(tokenizer_path, max_length, strategy="only_second")
        # Used only when the query alone does not fit: then both sides have to give way.
        self._fallback_tokenizer = open_tokenizer(tokenizer_path, max_length, strategy="longest_first")
        self._pad_id = pad_id_of(self._tokenizer)
        self._session = open_session(self._model_path, threads)
        names = [o.name for o in self._session.get_outputs()]
        self._output = "logits" if "logits" in names else names[0]
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        if isinstance(passages, str):
            raise TypeError("score() takes a sequence of passages, not one string")
        if len(passages) == 0:
            return np.zeros((0,), dtype=np.float32)
        encodings = self._encode(query, list(passages))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings),), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            out[idx] = self._run([encodings[i] for i in idx])
        return out

    def _encode(self, query: str, passages: list[str]) -> list[Any]:
        pairs = [(query, p) for p in passages]
        try:
            return list(self._tokenizer.encode_batch(pairs))
        except Exception:
            # only_second cannot truncate when the query alone is too long (or a passage is
            # empty): encode pair by pair and let the longest side give way where needed.
            out = []
            for pair in pairs:
                try:
                    out.append(self._tokenizer.encode(*pair))
                except Exception:
                    out.append(self._fallback_tokenizer.encode(*pair))
            return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        arrays = pad_batch(encodings, self._pad_id)
        feed = session_feed(self._session, arrays, self._model_path)
        with self._lock:
            logits = self._session.run([self._output], feed)[0]
        logits = np.asarray(logits, dtype=np.float32)
        if logits.ndim == 2 and logits.shape[1] == 1:
            logits = logits[:, 0]
        if logits.ndim != 1 or logits.shape[0] != len(encodings):
            raise ModelError(
                f"Reranker {self._model_path} returned logits of shape {logits.shape}; expected [batch] or [batch, 1]"
            )
        return logits

    def __repr__(self) -> str:
        return f"OnnxReranker({self._name!r}, path={str(self._model_path)!r})"


def load_reranker(
    model_dir: Path | None,
    *,
    model_file: str = "model.onnx",
    threads: int = 1,
    max_length: int = 512,
    batch_size: int = 16,
) -> Reranker | None:
    """The reranker, or None with one warning when it cannot be loaded (recall then falls back)."""
    if model_dir is None:
        log.warning("Reranker disabled: no model directory; recall uses the fused ranking")
        return None
    try:
        return OnnxReranker(
            Path(model_dir),
            model_file=model_file,
            threads=threads,
            max_length=max_length,
            batch_size=batch_size,
        )
    except ModelError as exc:
        log.warning("Reranker unavailable, recall falls back to the fused ranking: %s", exc)
        return None
    except Exception as exc:  # a broken model must never take recall down
        log.warning(
            "Reranker unavailable, recall falls back to the fused ranking: %s: %s", type(exc).__name__, exc
        )
        return None
