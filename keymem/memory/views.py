"""The shapes the domain returns (the MCP contract's field names), as pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

KeyType = Literal["concept", "name", "proper_noun"]
DecayProfile = Literal["transient", "standard", "stable", "permanent"]
Status = Literal["fresh", "aging", "stale", "superseded"]
MAX_SEEN = 2000  # memory ids a recall or read_key ``seen`` may hold (the tool's schema and the request check)


class View(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Validity(View):
    freshness: float = Field(description="1.0 when just confirmed; halves every half-life of the decay profile")
    status: Status = Field(
        description="fresh (freshness >= 0.5), aging (>= 0.125), stale (below); superseded: replaced by a "
        "newer version (superseded_by), whatever its freshness"
    )
    age_days: float = Field(description="Days since the memory was last confirmed (or stored)")
    last_confirmed_at: str = Field(description="ISO-8601 UTC")
    confirmation_count: int
    decay_profile: DecayProfile
    verification_recommended: bool = Field(description="not fresh: qualify the fact before relying on it")
    verification_required: bool = Field(
        description="stale or superseded: never assert it as current without checking"
    )


class KeyRef(View):
    key_id: str
    key: str


class KeyBrief(View):
    key_id: str
    key: str
    key_type: KeyType


class KeyLinkRef(View):
    key_id: str
    key: str
    link_weight: float


class KeyView(View):
    key_id: str
    key: str
    key_type: KeyType
    aliases: list[str]
    score: float | None = None
    score_kind: str | None = Field(
        default=None,
        description="key_cosine (embedding similarity), literal_match (exact name/alias), "
        "content_relevance (capped lexical s/(1+s)), association (what recall's walk carried through the key "
        "to memories it did not deliver: a key to read next), hub_order (browse); never a probability",
    )
    memory_count: int
    is_hub: bool
    specificity: float = Field(description="IDF of the key among active memories (x0.5 for name hubs)")


class MemoryPreview(View):
    memory_id: str
    content: str
    matched_key: KeyRef
    score: float | None = None
    score_kind: str | None = None
    validity: Validity
    connected_keys: list[KeyRef]


class RecalledMemory(View):
    memory_id: str
    content: str
    hops: int = Field(description="0: a direct match; n: reached by n hops of association")
    via: list[str] = Field(description="For an associated memory, the keys that led to it from a direct match")
    validity: Validity


class RecallResult(View):
    keys: list[KeyView]
    memory: MemoryPreview | None = Field(description="The first of memories, in the preview shape")
    memories: list[RecalledMemory] = Field(default_factory=list)
    confident: bool = Field(default=True, description="The query names something stored")
    note: str | None = None
    omitted: int = Field(default=0, description="Memories held back because the caller already has them (seen)")
    namespaces: dict[str, int] | None = None


class RememberResult(View):
    memory_id: str
    keys: list[KeyBrief]
    duplicate: bool


class BatchResult(View):
    results: list[RememberResult]


class KeyMemory(View):
    memory_id: str
    preview: str
    within_key_rank: int = Field(description="1-based rank inside this key")
    score: float
    score_kind: str
    link_weight: float
    validity: Validity
    other_keys: list[KeyRef] = Field(default_factory=list, description="The memory's other keys: the next hop")


class ReadKeyResult(View):
    key: KeyView
    memories: list[KeyMemory]
    total: int
    offset: int
    limit: int
    omitted: int = Field(default=0, description="Memories of the page held back because the caller already has them")


class MemoryView(View):
    memory_id: str
    content: str
    namespace: str
    keys: list[KeyLinkRef]
    validity: Validity
    depth: float
    depth_stage: Literal["shallow", "medium", "deep"]
    access_count: int
    supersedes: str | None
    superseded_by: str | None
    active: bool
    source: dict[str, Any] | None = Field(description="Who stored it (host session, agent, transcript line)")
    last_confirmation: dict[str, Any] | None = Field(
        default=None, description="The latest confirm_memory: its evidence and source (null until confirmed)"
    )
    related_to: list[str]
    expires_at: str | None


class CorrectResult(View):
    memory_id: str
    supersedes: str


class DismissResult(View):
    memory_id: str
    key_id: str
    link_weight: float


class ForgetResult(View):
    memory_id: str
    deleted: bool


class BrowseResult(View):
    keys: list[KeyView]
    total: int
    offset: int
    limit: int


class DirectHit(View):
    memory_id: str
    content: str
    namespace: str
    score: float
    score_kind: str
    hops: int = Field(description="0 for a direct hit; n when reached by n hops of expansion")
    via_keys: list[str]
    validity: Validity


class DirectResult(View):
    results: list[DirectHit]
    rejected: bool = Field(default=False, description="the not-found gate rejected every candidate")
    explain: dict[str, Any] | None = None


class InjectResult(View):
    memory_ids: list[str]
    text: str
