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
    # A write scope's statements commit together or not at all: LadybugDB's transactions; FalkorDB's
    # scope sent as one query at its end (keymem/store/compose.py).
    atomic_write_scope: bool
    # A write scope's writes run at its end (FalkorDB): reads in the scope see the state before it, and
    # a write's rows (PendingRows) can be read only once the scope committed. Write bodies are written
    # so that they are correct either way: they never read back what the same scope wrote.
    deferred_writes: bool
    vector_index: bool  # an HNSW index keymem builds and searches (LadybugDB's VECTOR extension)
    prepared_statements: bool  # statements are prepared once per connection and rebound
    checkpoint: bool  # committed writes are held in memory until a CHECKPOINT the store runs
    stable_node_ids: bool  # a deleted node's internal id is never given to a new node
    local_file: bool  # the store is a file on this machine (backup copies it, size reads it)
    # Several processes write the store (a daemon per front on one server): each write scope also writes a
    # change record and each process catches up on the others' records (keymem/store/changes.py).
    shared_writers: bool = False


class PendingRows(list[Row]):
    """The rows of a write queued until its scope's end: filled at commit, refused before.

    A body reading them inside its scope would read nothing on an engine that defers writes; the
    error says so at once (on every engine's tests that run with deferred writes) instead of a wrong
    answer. After the scope they read as a plain list.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.ready = False

    def fill(self, rows: list[Row]) -> None:
        list.extend(self, rows)
        self.ready = True

    def _check(self) -> None:
        if not self.ready:
            raise RuntimeError(f"the rows of {self.name} are read inside their write scope; a write's rows "
                               "arrive when the scope commits (Capabilities.deferred_writes)")

    def __len__(self) -> int:
        self._check()
        return list.__len__(self)

    def __bool__(self) -> bool:
        self._check()
        return list.__len__(self) > 0

    def __iter__(self) -> Iterator[Row]:
        self._check()
        return list.__iter__(self)

    def __getitem__(self, index: Any) -> Any:
        self._check()
        return list.__getitem__(self, index)

    def __eq__(self, other: object) -> bool:
        self._check()
        return list.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return list.__repr__(self) if self.ready else f"<rows of {self.name}, pending until commit>"


class Executor(Protocol):
    """One connection's statements: a named statement from ``cypher/`` with its parameters -> rows."""

    capabilities: Capabilities

    def run(self, name: str, params: dict[str, Any]) -> list[Row]: ...

    def stream(self, name: str, params: dict[str, Any]) -> Iterator[Row]: ...

    def raw(self, text: str, params: dict[str, Any] | None = None) -> list[Row]: ...

    def begin(self) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...
