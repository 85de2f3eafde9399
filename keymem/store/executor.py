"""The boundary between :class:`~keymem.store.db.Store` and an engine: run named statements, rows back.

Above the store, keymem names statements (``"memory/create"``) and reads rows of plain values; it
never learns which engine runs them. Below, each engine gives an :class:`Executor` (LadybugDB's
:class:`~keymem.store.db.Connection`, FalkorDB's :class:`~keymem.store.falkordb.FalkorExecutor`)
and says what it can do in :class:`Capabilities`, so the store refuses or routes around what an
engine lacks instead of quietly degrading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

Row = dict[str, Any]


@dataclass(frozen=True)
class Capabilities:
    """What an engine does, as the layers above the executor may rely on it."""

    engine: str  # "ladybug" | "falkordb": which cypher/engines/<engine>/ overrides apply
    # A write scope's statements commit together or not at all (LadybugDB's transactions). Without it
    # each statement is atomic alone (FalkorDB) and a body failing after a write leaves that write.
    atomic_write_scope: bool
    vector_index: bool  # an HNSW index keymem builds and searches (LadybugDB's VECTOR extension)
    prepared_statements: bool  # statements are prepared once per connection and rebound
    checkpoint: bool  # committed writes are held in memory until a CHECKPOINT the store runs
    stable_node_ids: bool  # a deleted node's internal id is never given to a new node
    local_file: bool  # the store is a file on this machine (backup copies it, size reads it)


class Executor(Protocol):
    """One connection's statements: a named statement from ``cypher/`` with its parameters -> rows."""

    capabilities: Capabilities

    def run(self, name: str, params: dict[str, Any]) -> list[Row]: ...

    def stream(self, name: str, params: dict[str, Any]) -> Iterator[Row]: ...

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]: ...

    def begin(self) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...
