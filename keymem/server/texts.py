"""What keymem tells agents: server instructions, the ``memory_system_prompt`` prompt, the protocol.

``PROTOCOL_RULES`` is the recall/remember protocol of the seed's CLAUDE.md block; the
plugin's ``skills/keymem/SKILL.md`` carries the same lines (a test keeps them in step).
"""

from __future__ import annotations

from typing import Any

PROTOCOL_RULES = (
    "Before the first reply and whenever the topic changes, call `recall` silently with short noun-keyword queries.",
    "Before ending every reply, check whether this turn revealed a durable fact: a name, preference, decision, "
    "correction, project fact, or goal.",
    "If it did, call `remember` or `remember_batch` silently in the same turn with 3-6 diverse keys. "
    "A durable fact left unsaved is a bug.",
    "Use `correct` when existing information changes. Save nothing only when the turn revealed nothing durable.",
    "Treat `read_memory` as retrieval, not confirmation. Use its `validity.status`: qualify `aging`, never "
    "assert `stale` as current without checking an external source or asking the user, and never assert "
    "`superseded` (an old version: read its `superseded_by`).",
    "Call `confirm_memory` only after an explicit current user assertion, an authoritative current source, or "
    "direct observation — never merely because a read succeeded.",
    "Never mention memory lookup or saving to the user.",
)

NAVIGATION = (
    "`recall` returns ranked keys and the best memories within a token budget: direct matches first, then "
    "memories associated with them through shared keys, marked \"via\" the key path; weigh those as leads. If "
    "they lack the fact you need, follow a key with `read_key(key_id, query)` (a key id or its exact text; each "
    "listed memory shows its other keys, the next hop) and open a memory with `read_memory(memory_id, "
    "via_key_id)`; stop when the evidence is complete or no promising key is left. When `recall` says nothing "
    "matched with confidence, do not treat its keys as an answer; `browse_keys` lists the key vocabulary (hubs "
    "first). Keys: give names "
    "(`key_type` name) and brands/places (proper_noun) exact-match types, everything else concept; add keys in "
    "several languages when the user mixes them. `dismiss` weakens one key-memory link that led you astray; "
    "`forget` deletes a memory for good."
)

NO_HOOK_START = (
    "Before your first reply, call `recall` three times with short, cue-free noun-keyword queries (for example "
    "\"user profile\", \"current project\", \"preferences and decisions\") and follow promising keys; no memory "
    "is pushed to you automatically."
)

HOOK_START = (
    "A prompt hook pushes the few most relevant memories into your context before each user message (they start "
    "with \"Possibly relevant memories from keymem\"). Use those first instead of guessing with blind recalls; "
    "call `recall` when they miss what the answer needs or the topic changes."
)


def memory_system_prompt(hook_installed: bool) -> str:
    """The system-prompt template an MCP client can include for agents without the plugin."""
    lines = [
        "You have a long-term associative memory, keymem: facts are stored as memories under keys, and you recall "
        "by following keys.",
        "",
        HOOK_START if hook_installed else NO_HOOK_START,
        "",
        *(f"- {rule}" for rule in PROTOCOL_RULES),
        "",
        NAVIGATION,
    ]
    return "\n".join(lines)


def instructions(counts: dict[str, Any] | None, hook_installed: bool) -> str:
    """Server instructions, with the store's live key/memory/link counts when they are known."""
    if counts and counts.get("keys") is not None:
        size = (
            f"The store holds {counts['keys']} keys, {counts['memories']} memories and {counts['links']} links"
            + (" (models still loading)." if counts.get("loading") else ".")
        )
    else:
        size = "Its counts are not known yet (the store opens when a tool first needs it)."
    start = HOOK_START if hook_installed else NO_HOOK_START
    return (
        f"keymem: associative long-term memory for this user. {size} {start} "
        "Save every durable fact (name, preference, decision, correction, project fact, goal) with `remember` "
        "or `remember_batch` and 3-6 diverse keys in the same turn; use `correct` when a fact changes. "
        "Qualify `aging` memories, never assert `stale` or `superseded` ones as current, and never mention memory "
        "to the user."
    )


def unavailable_components(settings: Any) -> list[str]:
    """Configured parts that are not installed, in words an agent can act on (file checks only)."""
    notes: list[str] = []
    if settings.rerank:
        from keymem.models.download import is_complete
        from keymem.models.profiles import RERANKER

        rdir = settings.rerank_model_path or settings.models_dir / "reranker"
        if not is_complete(RERANKER.files(), rdir):
            notes.append(f"the reranker is on (KEYMEM_RERANK) but its files are not in {rdir}: results are not "
                         "re-scored until it is downloaded (`keymem models download`, or it downloads on first use "
                         "when online); KEYMEM_RERANK=false turns it off")
    return notes
