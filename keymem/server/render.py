"""The text an agent reads: each tool's result as a few compact lines.

A tool's text content is what the model pays for in tokens; ``structuredContent`` keeps the
full typed result for programs. So the text leaves out nulls, defaults, scores and validity
that says nothing (a fresh memory), writes one line per memory or key, and keeps every id an
agent passes back (``[m_…]`` memories, ``k_…`` keys). Measured on the association cases: the
first ``recall`` as indented JSON cost ~1,800 tokens for the same memories these lines give
in a few hundred (docs/BENCHMARKS.md).

Pure functions of the result dicts (what the daemon sends), so benchmarks count the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def validity_note(v: dict[str, Any] | None) -> str:
    """Only what should change how the agent uses the fact: empty for a fresh memory."""
    if not v:
        return ""
    status = v.get("status")
    if status == "fresh":
        return ""
    age = v.get("age_days")
    days = f", {age:.0f} d" if isinstance(age, (int, float)) else ""
    if status == "superseded":
        return "superseded: not current"
    if v.get("verification_required"):
        return f"{status}{days}: check before relying on it"
    return f"{status}{days}: verify"


def _key(k: dict[str, Any], count: bool = True) -> str:
    bits = []
    if k.get("key_type") and k["key_type"] != "concept":
        bits.append(k["key_type"])
    if count and k.get("memory_count") is not None:
        bits.append(f"{k['memory_count']} memories" if k["memory_count"] != 1 else "1 memory")
    if k.get("is_hub"):
        bits.append("hub")
    if k.get("score_kind") == "association":
        bits.append("leads on")
    if k.get("aliases"):
        bits.append("aka " + ", ".join(k["aliases"][:3]))
    return f"{k['key']} {k['key_id']}" + (f" ({', '.join(bits)})" if bits else "")


def _memory_line(m: dict[str, Any], text_field: str = "content", extra: list[str] | None = None) -> str:
    notes = list(extra or [])
    if m.get("via"):
        notes.insert(0, "via " + " -> ".join(m["via"]))
    v = validity_note(m.get("validity"))
    if v:
        notes.append(v)
    return f"[{m['memory_id']}] {m[text_field]}" + (f" ({'; '.join(notes)})" if notes else "")


def omitted(d: dict[str, Any]) -> str:
    """The one line saying memories were held back because the caller has them ("" when none were)."""
    n = d.get("omitted") or 0
    if not n:
        return ""
    return f"{n} {'memory' if n == 1 else 'memories'} you already have omitted (include_seen=true repeats)"


def recall(d: dict[str, Any]) -> str:
    lines = []
    if d.get("note"):
        lines.append(d["note"])
    if d.get("keys"):
        lines.append("keys: " + " | ".join(_key(k) for k in d["keys"]))
    memories = d.get("memories") or []
    if memories:
        if not d.get("confident", True):
            lines.append("memories (no stored name or key matched; lexical matches, may be unrelated):")
        else:
            lines.append("memories:")
        lines += [_memory_line(m) for m in memories]
    elif not d.get("note"):
        lines.append("no new memory" if d.get("omitted") else "no memory")
    if d.get("omitted"):
        lines.append(omitted(d))
    if d.get("namespaces"):
        lines.append("namespaces: " + ", ".join(f"{k} {v}" for k, v in d["namespaces"].items()))
    return "\n".join(lines)


def read_key(d: dict[str, Any]) -> str:
    k, mems = d["key"], d.get("memories") or []
    # ranks in the key: memories the caller has are skipped, so a page's ranks may have gaps
    first, last = (mems[0]["within_key_rank"], mems[-1]["within_key_rank"]) if mems else (0, 0)
    shown = f"{first}-{last} of {d['total']}" if mems else f"none of {d['total']}"
    lines = [f"key: {_key(k, count=False)}; memories {shown}"]
    for m in mems:
        also = [o["key"] for o in m.get("other_keys") or []]
        lines.append(_memory_line(m, "preview", ["also " + ", ".join(also)] if also else None))
    if d.get("omitted"):
        lines.append(omitted(d))
    if mems and last < d["total"]:
        lines.append(f"(more: offset {last})")
    return "\n".join(lines)


def read_memory(d: dict[str, Any]) -> str:
    lines = [f"[{d['memory_id']}] {d['content']}"]
    keys = d.get("keys") or []
    if keys:
        lines.append("keys: " + ", ".join(f"{k['key']} {k['key_id']}" for k in keys))
    facts = []
    v = validity_note(d.get("validity"))
    if v:
        facts.append(v)
    if d.get("active") is False and not d.get("superseded_by"):
        facts.append("inactive")
    for field, label in (("supersedes", "replaces"), ("superseded_by", "replaced by"), ("expires_at", "expires")):
        if d.get(field):
            facts.append(f"{label} {d[field]}")
    if d.get("related_to"):
        facts.append("related " + ", ".join(d["related_to"]))
    if d.get("namespace") and d["namespace"] != "default":
        facts.append(f"namespace {d['namespace']}")
    src = d.get("source") or {}
    if src:
        facts.append("source " + ", ".join(f"{k} {v}" for k, v in src.items() if v not in (None, "")))
    if facts:
        lines.append("; ".join(facts))
    return "\n".join(lines)


def remember(d: dict[str, Any]) -> str:
    keys = ", ".join(f"{k['key']} {k['key_id']}" for k in d.get("keys") or [])
    if d.get("duplicate"):
        return f"already stored as {d['memory_id']} (keys: {keys})"
    return f"stored {d['memory_id']} (keys: {keys})"


def remember_batch(d: dict[str, Any]) -> str:
    return "\n".join(remember(r) for r in d.get("results") or [])


def correct(d: dict[str, Any]) -> str:
    return f"stored {d['memory_id']}, replacing {d['supersedes']}"


def dismiss(d: dict[str, Any]) -> str:
    return f"link {d['key_id']} -> {d['memory_id']} weakened to {d['link_weight']:g}"


def forget(d: dict[str, Any]) -> str:
    return f"{'deleted' if d.get('deleted') else 'not found'} {d['memory_id']}"


def browse_keys(d: dict[str, Any]) -> str:
    keys = d.get("keys") or []
    first = d.get("offset", 0) + 1
    head = f"keys {first}-{first + len(keys) - 1} of {d['total']}:" if keys else f"no keys (total {d['total']})"
    return "\n".join([head, *(_key(k) for k in keys)])


RENDER: dict[str, Callable[[dict[str, Any]], str]] = {
    "recall": recall, "read_key": read_key, "read_memory": read_memory, "confirm_memory": read_memory,
    "remember": remember, "remember_batch": remember_batch, "correct": correct, "dismiss": dismiss,
    "forget": forget, "browse_keys": browse_keys,
}


def render(tool: str, data: dict[str, Any]) -> str:
    return RENDER[tool](data)
