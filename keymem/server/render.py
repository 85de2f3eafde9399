"""The text an agent reads: each tool's result as a few compact lines.

A tool's text content is what the model pays for in tokens; ``structuredContent`` keeps the
full typed result for programs. So the text leaves out nulls, defaults, scores and validity
that says nothing (a fresh memory), writes one line per memory or key, and keeps every id an
agent passes back (``[m_…]`` memories, ``k_…`` keys). Measured on the association cases: the
first ``recall`` as indented JSON cost ~1,800 tokens for the same memories these lines give
in a few hundred (docs/BENCHMARKS.md).

Pure functions of the result dicts (what the daemon sends), so benchmarks count the same text;
the lines of keys, memories and recall are keymem/memory/lines.py's, which recall's token
budget counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keymem.memory.lines import key_line as _key
from keymem.memory.lines import memory_line as _memory_line
from keymem.memory.lines import omitted, recall_lines, validity_note


def recall(d: dict[str, Any]) -> str:
    return "\n".join(recall_lines(d))


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
