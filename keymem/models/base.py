"""The two model protocols the domain depends on.

The domain never imports onnxruntime or an HTTP client: it asks for an
:class:`EmbeddingBackend` (keys and queries -> unit vectors) and, optionally, a
:class:`Reranker` (query, passages -> raw relevance logits). Tests and benchmarks can pass
any object with these members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

EmbedKind = Literal["query", "passage"]


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns short texts into L2-normalised float32 vectors of one vector space."""

    @property
    def fingerprint(self) -> str:
        """Identity of the vector space (backend + model + input handling).

        Stored with the graph: when it changes, key vectors are re-embedded, because two
        models of the same dimension still produce incompatible vectors.
        """
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def profile(self) -> str:
        """Name of the threshold profile (see :mod:`keymem.models.profiles`)."""
        ...

    def embed(self, texts: Sequence[str], kind: EmbedKind = "query") -> np.ndarray:
        """float32 ``[len(texts), dimension]``, rows of unit length; ``(0, dim)`` for no texts.

        Keys and queries are both embedded with ``kind="query"`` (symmetric short phrases);
        ``"passage"`` exists for models trained with passage prefixes.
        """
        ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder that scores (query, passage) pairs."""

    @property
    def name(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Raw logits, float32 ``[len(passages)]``, in the order of ``passages``."""
        ...
