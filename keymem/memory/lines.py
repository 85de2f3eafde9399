"""The lines an agent reads of a key, a memory and a ``recall`` result.

Shared by the renderer (keymem/server/render.py, which writes every tool's text content) and
recall's token budget (``deliver.fit_budget``), so the budget counts the text that is sent.
Pure functions of the result dicts (what the daemon sends, ``model_dump(mode="json")``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOOSE_MEMORIES = "memories (no stored name or key matched; lexical matches, may be unrelated):"


def validity_note(v: Mapping[str, Any] | None) -> str:
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


def key_line(k: Mapping[str, Any], count: bool = True) -> str:
    """A key, its id, and what says how to use it (type, size, hub, leads on, aliases)."""
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


def memory_line(m: Mapping[str, Any], text_field: str = "content", extra: list[str] | None = None) -> str:
    """``[id] text`` and, in brackets, the key path that reached it and a validity worth a note."""
    notes = list(extra or [])
    if m.get("via"):
        notes.insert(0, "via " + " -> ".join(m["via"]))
    v = validity_note(m.get("validity"))
    if v:
        notes.append(v)
    return f"[{m['memory_id']}] {m[text_field]}" + (f" ({'; '.join(notes)})" if notes else "")


def omitted(d: Mapping[str, Any]) -> str:
    """The one line saying memories were held back because the caller has them ("" when none were)."""
    n = d.get("omitted") or 0
    if not n:
        return ""
    return f"{n} {'memory' if n == 1 else 'memories'} you already have omitted (include_seen=true repeats)"


def recall_lines(d: Mapping[str, Any]) -> list[str]:
    """A recall result's text, line by line: note, keys, memories, what was held back."""
    lines = []
    if d.get("note"):
        lines.append(d["note"])
    if d.get("keys"):
        lines.append("keys: " + " | ".join(key_line(k) for k in d["keys"]))
    memories = d.get("memories") or []
    if memories:
        lines.append("memories:" if d.get("confident", True) else LOOSE_MEMORIES)
        lines += [memory_line(m) for m in memories]
    elif not d.get("note"):
        lines.append("no new memory" if d.get("omitted") else "no memory")
    if d.get("omitted"):
        lines.append(omitted(d))
    if d.get("namespaces"):
        lines.append("namespaces: " + ", ".join(f"{k} {v}" for k, v in d["namespaces"].items()))
    return lines
