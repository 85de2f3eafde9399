"""The scripted agent of bench/assoc.py, and what it counts as received.

``Navigator`` is a deterministic agent (no LLM) that follows keys with ``recall`` -> ``read_key``
-> ``read_memory``; ``holds`` decides whether a tool's text content or a hook injection holds a
memory's full text; ``tokenizer`` counts MiniLM WordPiece tokens of what the client receives.
``engine_ranks`` gives the in-process ranks of a case's memories in ``recall_direct``.
The real server and hook that the agent talks to are in assoc_server.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOPS = (0, 1, 2, 3)
ENGINE_TOP_K = 50


# -- what the client receives ------------------------------------------------------------------------
def _flat(text: str) -> str:
    return " ".join(text.split())


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def holds(text: str, content: str) -> bool:
    """Whether ``text`` (a tool's text content or an injection) holds ``content`` in full, whitespace
    collapsed; a JSON text is also searched string by string (escapes undone)."""
    want = _flat(content)
    if not want:
        return False
    if want in _flat(text):
        return True
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return any(want in _flat(s) for s in _strings(doc))


def mentions(text: str, memory_id: str) -> bool:
    return memory_id in text


def previews(structured: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The memories a recall result presents (``memory``, or a list ``memories``), each once."""
    if not isinstance(structured, dict):
        return []
    out = []
    mem = structured.get("memory")
    if isinstance(mem, dict):
        out.append(mem)
    mems = structured.get("memories")
    if isinstance(mems, list):
        out += [m for m in mems if isinstance(m, dict)]
    return out


def delivered_ids(structured: dict[str, Any] | None) -> list[str]:
    """Ids of the memories a recall result delivers, in order, each once (the preview repeats the first)."""
    return list(dict.fromkeys(str(m.get("memory_id")) for m in previews(structured)))


def tokenizer(model_dir: Path) -> Callable[[str], int]:
    from tokenizers import Tokenizer

    wp = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    wp.no_truncation()
    wp.no_padding()

    def ntok(text: str) -> int:
        return len(wp.encode(text, add_special_tokens=False).ids) if text else 0

    return ntok


# -- engine ------------------------------------------------------------------------------------------
def engine_ranks(graph: Any, case: dict[str, Any], ids: dict[str, str], hops: Iterable[int] = HOPS,
                 top_k: int = ENGINE_TOP_K) -> dict[int, list[int | None]]:
    """hops -> the 1-based rank of each case memory in recall_direct's top ``top_k`` (None: not in it)."""
    mids = [ids[f"{case['id']}#{i}"] for i in range(len(case["memories"]))]
    out: dict[int, list[int | None]] = {}
    for h in hops:
        res = graph.recall_direct(query=case["question"], top_k=top_k, hops=h, reinforce=False, rerank=False)
        pos = {hit.memory_id: n for n, hit in enumerate(res.results, start=1)}
        out[h] = [pos.get(m) for m in mids]
    return out


def outranks(ranks: list[int | None], target: int, decoys: list[int]) -> bool:
    t = ranks[target]
    return t is not None and all(ranks[d] is None or t < ranks[d] for d in decoys)  # type: ignore[operator]


# -- the scripted navigation ---------------------------------------------------------------------------
@dataclass
class Navigator:
    """A deterministic agent that follows keys, never judging content (no LLM).

    1. ``recall(query=question)``;
    2. ``read_key(key_id, query=question)`` on recall's keys, in the order returned;
    3. then on the keys of memories whose keys it has learnt (``read_memory`` results, and page
       entries when a ``read_key`` page lists a memory's keys), first learnt first;
    4. then ``read_memory`` of the next memory listed on a page whose keys it does not know yet
       (page order): the only way to learn them today. Without ``via_key_id`` unless ``hebbian``:
       through a key, read_memory strengthens that link, which would change later questions'
       rankings; without it, it records only the access (no ranking reads it);
    5. then the keys of recall's preview (matched and connected keys);
    stopping after ``max_calls`` calls or when nothing is left. bench/navigate.py's policy reads
    recall's cluster the same way; reads come after the cluster here ("if calls remain").

    Drive it with ``next_call()`` -> (tool, args) or None, then ``observe(tool, args, structured)``.
    """

    question: str
    max_calls: int = 4
    recall_top_k: int = 5
    page: int = 10
    hebbian: bool = False
    calls: int = 0
    cluster: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)  # keys of memories whose keys are known
    preview_keys: list[str] = field(default_factory=list)
    keys_read: set[str] = field(default_factory=set)
    listed: list[tuple[str, str]] = field(default_factory=list)  # (memory, key that listed it), page order
    keys_known: set[str] = field(default_factory=set)  # memories whose keys the agent has seen
    full: set[str] = field(default_factory=set)  # memories whose whole text the agent has seen

    def next_call(self) -> tuple[str, dict[str, Any]] | None:
        if self.calls >= self.max_calls:
            return None
        if self.calls == 0:
            return "recall", {"query": self.question, "top_k": self.recall_top_k}
        for kid in self.cluster + self.followed:
            if kid not in self.keys_read:
                return "read_key", {"key_id": kid, "query": self.question, "limit": self.page}
        for mid, kid in self.listed:
            if mid not in self.keys_known:
                return "read_memory", {"memory_id": mid, "via_key_id": kid} if self.hebbian else {"memory_id": mid}
        for kid in self.preview_keys:
            if kid not in self.keys_read:
                return "read_key", {"key_id": kid, "query": self.question, "limit": self.page}
        return None

    def observe(self, tool: str, args: dict[str, Any], structured: dict[str, Any] | None) -> None:
        self.calls += 1
        s = structured if isinstance(structured, dict) else {}
        if tool == "recall":
            self.cluster = _key_ids(s.get("keys"))
            for mem in previews(s):
                mid = str(mem.get("memory_id"))
                self.full.add(mid)
                self.keys_known.add(mid)
                matched = mem.get("matched_key")
                _extend(self.preview_keys, _key_ids([matched] if isinstance(matched, dict) else []))
                _extend(self.preview_keys, _key_ids(mem.get("connected_keys") or mem.get("keys")))
        elif tool == "read_key":
            self.keys_read.add(args["key_id"])
            for m in s.get("memories") or []:
                if not isinstance(m, dict) or "memory_id" not in m:
                    continue
                mid = m["memory_id"]
                self.listed.append((mid, args["key_id"]))
                if not str(m.get("preview", m.get("content", ""))).endswith("…"):
                    self.full.add(mid)
                keys = _key_ids(m.get("keys") or m.get("other_keys") or m.get("connected_keys"))
                if keys:
                    self.keys_known.add(mid)
                    _extend(self.followed, keys)
        elif tool == "read_memory":
            self.full.add(args["memory_id"])
            self.keys_known.add(args["memory_id"])
            _extend(self.followed, _key_ids(s.get("keys")))


def _extend(queue: list[str], key_ids: list[str]) -> None:
    for kid in key_ids:
        if kid not in queue:
            queue.append(kid)


def _key_ids(keys: Any) -> list[str]:
    return [k["key_id"] for k in keys or [] if isinstance(k, dict) and isinstance(k.get("key_id"), str)]


@dataclass
class Step:
    tool: str
    args: dict[str, Any]
    tokens: int
    hit: bool  # the target's full text is in this call's text content
    error: bool = False


def navigation_row(steps: list[Step], budget: int) -> dict[str, Any]:
    first = next((n for n, s in enumerate(steps, start=1) if s.hit), None)
    cum = 0
    within = False
    for s in steps:
        cum += s.tokens
        if cum > budget:
            break
        if s.hit:
            within = True
            break
    return {"hit": first is not None, "hit_call": first, "hit_within_budget": within,
            "calls": len(steps), "tokens": sum(s.tokens for s in steps),
            "tokens_to_hit": sum(s.tokens for s in steps[:first]) if first else None,
            "tools": [s.tool for s in steps], "errors": sum(s.error for s in steps)}


def navigate_sync(call: Callable[[str, dict[str, Any]], tuple[str, Any]], question: str, content: str,
                  ntok: Callable[[str], int], max_calls: int = 4) -> list[Step]:
    """The navigation against a synchronous ``call(tool, args) -> (text, structured)``."""
    nav = Navigator(question, max_calls=max_calls)
    steps: list[Step] = []
    while (nxt := nav.next_call()) is not None:
        tool, args = nxt
        text, structured = call(tool, args)
        steps.append(Step(tool, args, ntok(text), holds(text, content)))
        nav.observe(tool, args, structured)
    return steps


def in_process_caller(graph: Any) -> Callable[[str, dict[str, Any]], tuple[str, Any]]:
    """Tool calls on a graph, the result's JSON as the text content (what the SDK sends, unindented)."""

    def call(tool: str, args: dict[str, Any]) -> tuple[str, Any]:
        structured = getattr(graph, tool)(**args).dump()
        return json.dumps(structured, ensure_ascii=False), structured

    return call
