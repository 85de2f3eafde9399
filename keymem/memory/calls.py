"""What each memory operation takes: one typed request per tool, checked when it is made.

A request is built from the caller's fields (``RecallRequest.of({"query": ...})`` for the JSON a
tool call carries, or the constructor in code) and refuses an unknown field, a missing one or a
bad value with :class:`~keymem.errors.InvalidInput` naming it, before anything is read or
written. What the request holds afterwards has the types its fields say, so an operation reads
``request.top_k`` and never a dict. Bounds that depend on the settings (a memory's length, the
number of keys, the default hop count) are checked by the operation that knows them.

The MCP tools' pydantic models (keymem/server/tools.py) describe the same fields to the agent;
the daemon turns a call's JSON into one of these (``MemoryGraph.<tool>(**params)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from keymem.errors import InvalidInput, shown
from keymem.memory import validate
from keymem.memory.views import MAX_SEEN

RECALL_QUERY_CHARS = 4000
DIRECT_QUERY_CHARS = 20_000
EVIDENCE_CHARS = 4000


class Request:
    """Shared by every request: build from a mapping of fields, refusing names the tool lacks."""

    TOOL: ClassVar[str]

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Self:
        known = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(fields) - set(known))
        if unknown:
            raise InvalidInput(f"{cls.TOOL}: unknown argument(s) {', '.join(unknown)}; "
                               f"the arguments are {', '.join(known)}")
        # A missing required field arrives as None, so its own check names it ("query must be a string").
        return cls(**{name: fields.get(name) for name in known if name in fields or _required(cls, name)})


def _required(cls: type, name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _set(obj: object, **values: Any) -> None:
    for name, value in values.items():
        object.__setattr__(obj, name, value)


def _flag(value: Any, field: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false")
    return value


def _scope(value: Any) -> str | None:
    """A namespace that narrows a lookup by id: None means any namespace."""
    return None if value is None else validate.namespace(value)


def _optional_text(value: Any, field: str, max_chars: int) -> str | None:
    return None if value is None else validate.text(value, field, max_chars=max_chars)


def _seen(value: Any) -> frozenset[str]:
    """Memory ids the caller already has (``seen``): a list of at most ``MAX_SEEN`` memory ids."""
    if value is None:
        return frozenset()
    if isinstance(value, frozenset | set):
        value = sorted(value)
    if not isinstance(value, list | tuple):
        raise InvalidInput(f"seen must be a list of memory ids (m_...), got {shown(value)}")
    if len(value) > MAX_SEEN:
        raise InvalidInput(f"seen holds {len(value)} memory ids; the limit is {MAX_SEEN}")
    return frozenset(validate.ident(v, "seen", "m") for v in value)


# -- reading ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallRequest(Request):
    """recall: the keys a query routes to and the best memories within ``budget`` tokens; changes nothing."""

    TOOL: ClassVar[str] = "recall"
    query: str
    top_k: int = 5
    namespace: str = validate.DEFAULT_NAMESPACE
    context: str | None = None
    explain: bool = False
    budget: int | None = None
    seen: frozenset[str] = frozenset()  # memories the caller has: not delivered again, their budget to others

    def __post_init__(self) -> None:
        _set(self, query=validate.text(self.query, "query", max_chars=RECALL_QUERY_CHARS), seen=_seen(self.seen),
             budget=None if self.budget is None else validate.count(self.budget, "budget", default=500, lo=50,
                                                                    hi=4000),
             top_k=validate.count(self.top_k, "top_k", default=5, lo=1, hi=50),
             namespace=validate.namespace(self.namespace),
             context=_optional_text(self.context, "context", DIRECT_QUERY_CHARS),
             explain=_flag(self.explain, "explain", False))


@dataclass(frozen=True)
class ReadKeyRequest(Request):
    """read_key: one key's memories, ranked (by ``query`` when given)."""

    TOOL: ClassVar[str] = "read_key"
    key_id: str
    query: str | None = None
    namespace: str | None = None
    limit: int = 10
    offset: int = 0
    seen: frozenset[str] = frozenset()  # memories the caller has: skipped, the page filled with the next ones

    def __post_init__(self) -> None:
        key = self.key_id
        if isinstance(key, str) and not validate.looks_like_id(key):  # a key's text (navigation by name)
            key = validate.text(key, "key_id", max_chars=200)
        else:
            key = validate.ident(key, "key_id", "k")
        _set(self, key_id=key, namespace=_scope(self.namespace), seen=_seen(self.seen),
             query=_optional_text(self.query, "query", RECALL_QUERY_CHARS),
             limit=validate.count(self.limit, "limit", default=10, lo=1, hi=100),
             offset=validate.count(self.offset, "offset", default=0, lo=0, hi=1_000_000))


@dataclass(frozen=True)
class ReadMemoryRequest(Request):
    """read_memory: the full text; strengthens the ``via_key_id`` edge when one is named."""

    TOOL: ClassVar[str] = "read_memory"
    memory_id: str
    via_key_id: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        _set(self, memory_id=validate.ident(self.memory_id, "memory_id", "m"), namespace=_scope(self.namespace),
             via_key_id=None if self.via_key_id is None else validate.ident(self.via_key_id, "via_key_id", "k"))


@dataclass(frozen=True)
class BrowseKeysRequest(Request):
    """browse_keys: a namespace's key vocabulary, hubs first."""

    TOOL: ClassVar[str] = "browse_keys"
    namespace: str = validate.DEFAULT_NAMESPACE
    hubs_only: bool = False
    limit: int = 50
    offset: int = 0

    def __post_init__(self) -> None:
        _set(self, namespace=validate.namespace(self.namespace), hubs_only=_flag(self.hubs_only, "hubs_only", False),
             limit=validate.count(self.limit, "limit", default=50, lo=1, hi=500),
             offset=validate.count(self.offset, "offset", default=0, lo=0, hi=1_000_000))


@dataclass(frozen=True)
class DirectRequest(Request):
    """recall_direct: ranked memories (BM25 + key path + association + rerank); ``hops`` None = the setting."""

    TOOL: ClassVar[str] = "recall_direct"
    query: str
    top_k: int = 10
    namespace: str = validate.DEFAULT_NAMESPACE
    hops: int | None = None
    rerank: bool = True
    explain: bool = False

    def __post_init__(self) -> None:
        _set(self, query=validate.text(self.query, "query", max_chars=DIRECT_QUERY_CHARS),
             top_k=validate.count(self.top_k, "top_k", default=10, lo=1, hi=100),
             namespace=validate.namespace(self.namespace),
             hops=None if self.hops is None else validate.count(self.hops, "hops", default=0, lo=0, hi=5),
             rerank=_flag(self.rerank, "rerank", True), explain=_flag(self.explain, "explain", False))


@dataclass(frozen=True)
class InjectRequest(Request):
    """The prompt hook: a few memories above an absolute relevance floor."""

    TOOL: ClassVar[str] = "inject"
    prompt: str
    namespace: str = validate.DEFAULT_NAMESPACE

    def __post_init__(self) -> None:
        _set(self, prompt=validate.text(self.prompt, "prompt", max_chars=DIRECT_QUERY_CHARS),
             namespace=validate.namespace(self.namespace))


# -- writing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RememberRequest(Request):
    """remember (and each item of remember_batch): content under keys.

    Content length and the number of keys are bounded by the settings: the write checks them
    (``write.parse_item``), with the other fields, into the item it stores.
    """

    TOOL: ClassVar[str] = "remember"
    content: str
    keys: list[str]
    key_types: list[str] | dict[str, str] | None = None
    namespace: str | None = None
    ttl_seconds: float | None = None
    decay_profile: str | None = None
    related_to: list[str] | None = None
    source: str | dict[str, Any] | None = None


@dataclass(frozen=True)
class CorrectRequest(Request):
    """correct: a new version of an active memory; omitted fields are carried over from the old one."""

    TOOL: ClassVar[str] = "correct"
    memory_id: str
    content: str
    keys: list[str] | None = None
    key_types: list[str] | dict[str, str] | None = None
    namespace: str | None = None
    ttl_seconds: float | None = None
    decay_profile: str | None = None
    related_to: list[str] | None = None
    source: str | dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _set(self, memory_id=validate.ident(self.memory_id, "memory_id", "m"), namespace=_scope(self.namespace))


@dataclass(frozen=True)
class ForgetRequest(Request):
    """forget: delete a memory (and its previous version) for good."""

    TOOL: ClassVar[str] = "forget"
    memory_id: str
    namespace: str | None = None

    def __post_init__(self) -> None:
        _set(self, memory_id=validate.ident(self.memory_id, "memory_id", "m"), namespace=_scope(self.namespace))


@dataclass(frozen=True)
class DismissRequest(Request):
    """dismiss: this memory should not have come up through this key (halves the edge)."""

    TOOL: ClassVar[str] = "dismiss"
    memory_id: str
    key_id: str
    namespace: str | None = None

    def __post_init__(self) -> None:
        _set(self, memory_id=validate.ident(self.memory_id, "memory_id", "m"), namespace=_scope(self.namespace),
             key_id=validate.ident(self.key_id, "key_id", "k"))


@dataclass(frozen=True)
class ConfirmRequest(Request):
    """confirm_memory: explicit evidence that an active memory is still true."""

    TOOL: ClassVar[str] = "confirm_memory"
    memory_id: str
    evidence: str
    namespace: str | None = None
    source: str | dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _set(self, evidence=validate.text(self.evidence, "evidence", max_chars=EVIDENCE_CHARS),
             memory_id=validate.ident(self.memory_id, "memory_id", "m"), namespace=_scope(self.namespace),
             source=validate.source(self.source))
