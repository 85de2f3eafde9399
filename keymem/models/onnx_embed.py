"""Local sentence embeddings with onnxruntime + tokenizers (no fastembed, no torch).

Inputs use real token lengths: each batch is padded only to its longest member (texts are
sorted by length first), so a short key never carries hundreds of pad tokens and a vector
does not depend on which other texts shared its batch. That is what ``+nopad`` in the
fingerprint records.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

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
from keymem.models.base import EmbedKind
from keymem.models.profiles import find_model


def l2_normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: np.ndarray = (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return out


class OnnxEmbedder:
    """An :class:`~keymem.models.base.EmbeddingBackend` over a directory with model.onnx + tokenizer.json."""

    def __init__(
        self,
        model_dir: Path,
        *,
        name: str,
        model_file: str = "model.onnx",
        pooling: Literal["mean", "cls"] = "mean",
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int = 1,
        max_length: int = 512,
        batch_size: int = 32,
        profile: str | None = None,
    ) -> None:
        if pooling not in ("mean", "cls"):
            raise ModelError(f"Unknown pooling {pooling!r} (expected 'mean' or 'cls')")
        model_dir = Path(model_dir)
        self._model_path, tokenizer_path = check_model_dir(model_dir, model_file, "Embedding model")
        self._name = name
        self._pooling = pooling
        self._prefixes = {"query": query_prefix, "passage": passage_prefix}
        self._batch_size = max(1, batch_size)
        # An unknown model gets its own name as profile: thresholds_for() then falls back
        # to "bge" and reports it uncalibrated, so the caller warns.
        known = find_model(name)
        self._profile = profile or (known.threshold_profile if known else name)
        self._tokenizer = open_tokenizer(tokenizer_path, max_length)
        self._pad_id = pad_id_of(self._tokenizer)
        self._session = open_session(self._model_path, threads)
        self._output = self._session.get_outputs()[0].name
        self._lock = threading.Lock()
        declared = self._session.get_outputs()[0].shape
        self._dimension: int | None = declared[-1] if declared and isinstance(declared[-1], int) else None

    @property
    def fingerprint(self) -> str:
        return f"local:{self._name}+nopad"

    @property
    def name(self) -> str:
        return self._name

    @property
    def profile(self) -> str:
        return self._profile

    @property
    def pooling(self) -> str:
        return self._pooling

    @property
    def dimension(self) -> int:
        if self._dimension is None:  # symbolic output shape: ask the model once
            self._dimension = int(self._embed_batch(["dimension probe"]).shape[1])
        return self._dimension

    def prefixed(self, texts: Sequence[str], kind: EmbedKind) -> list[str]:
        prefix = self._prefixes[kind]
        return [prefix + t for t in texts]

    def embed(self, texts: Sequence[str], kind: EmbedKind = "query") -> np.ndarray:
        if kind not in self._prefixes:
            raise ValueError(f"kind must be 'query' or 'passage', not {kind!r}")
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        inputs = self.prefixed(texts, kind)
        encodings = self._tokenizer.encode_batch(inputs)
        order = sorted(range(len(inputs)), key=lambda i: len(encodings[i].ids))
        out: np.ndarray | None = None
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            vectors = self._run([encodings[i] for i in idx])
            if out is None:
                out = np.empty((len(inputs), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
        assert out is not None
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._run(self._tokenizer.encode_batch(texts))

    def _run(self, encodings: list[Any]) -> np.ndarray:
        arrays = pad_batch(encodings, self._pad_id)
        feed = session_feed(self._session, arrays, self._model_path)
        with self._lock:
            hidden = self._session.run([self._output], feed)[0]
        hidden = np.asarray(hidden, dtype=np.float32)
        if hidden.ndim == 2:  # the export already pooled (e.g. a sentence_embedding output)
            pooled = hidden
        elif hidden.ndim == 3:
            if self._pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                mask = arrays["attention_mask"][:, :, None].astype(np.float32)
                pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        else:
            raise ModelError(
                f"ONNX model {self._model_path} output has shape {hidden.shape}; expected 2 or 3 dims"
            )
        return l2_normalise(pooled)

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._name!r}, pooling={self._pooling!r}, path={str(self._model_path)!r})"
