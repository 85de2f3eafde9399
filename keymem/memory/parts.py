"""What an operation may use of an open memory: the store, the derived indexes, the models, a clock.

The operations (write, navigate, recall, associative, keys, evidence) take a ``Parts`` rather
than the :class:`~keymem.memory.graph.MemoryGraph` facade, so the facade imports the operations
and nothing imports the facade back. ``MemoryGraph`` is the one implementation; a reader of an
operation sees here every piece it can reach.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from keymem.index.aliases import AliasIndex
    from keymem.index.lexical import LexicalIndex
    from keymem.index.memvec import MemoryVectors
    from keymem.index.mirror import GraphMirror
    from keymem.index.neighbourhood import Neighbourhood
    from keymem.memory.access import AccessLog
    from keymem.memory.autokey import Autokey
    from keymem.memory.requests import RequestLog
    from keymem.models.base import Reranker
    from keymem.models.profiles import ThresholdProfile
    from keymem.settings import Settings
    from keymem.store.db import Store
    from keymem.store.vectors import KeyVectors


class CatchingUp(Protocol):
    """What an operation may ask of the catch-up (keymem/memory/catchup.py ``CatchUp``)."""

    def __call__(self, *, reload: bool = True) -> int: ...  # apply other daemons' writes (reload=False in a scope)


class Parts(Protocol):
    settings: Settings
    store: Store  # Kuzu: every statement in cypher/, one writer at a time
    mirror: GraphMirror  # memory metadata, keys, LINKS weights and RELATED_TO, kept exact after each commit
    lexical: LexicalIndex  # BM25 over memories' terms
    aliases: AliasIndex  # every key's alias texts, kept in step after each commit
    vectors: KeyVectors  # concept keys' embeddings
    memvecs: MemoryVectors  # memories' content embeddings (meaning), derived, beside the store
    neighbourhood: Neighbourhood  # what the association walk reads
    thresholds: ThresholdProfile  # the embedding model's key similarity thresholds
    autokey: Autokey  # learned query aliases
    access: AccessLog  # read_memory's coalesced access counts
    requests: RequestLog  # mutating calls' results by request id
    korean_stamped: bool  # the store records this Kiwi's fingerprint for its stored Korean terms

    now: Callable[[], float]  # wall-clock seconds (tests move it)

    @property
    def catchup(self) -> CatchingUp | None: ...  # other daemons' writes, where several write the store; else None

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def embed_soon(self, texts: list[str]) -> Future[np.ndarray]: ...  # embed on a worker thread

    def reranker(self) -> Reranker | None: ...

    def expired(self, m: dict[str, Any]) -> bool: ...

    def reload_indexes(self) -> None: ...  # re-read every in-memory index from the store
