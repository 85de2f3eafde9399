"""Deliberate navigation: read_key, read_memory, browse_keys.

``read_key`` and ``browse_keys`` change nothing. ``read_memory`` records the access (coalesced
with other reads' unless it comes through a key, see ``memory/access.py``) and, when the agent
says which key it came through, strengthens only that edge (Hebbian: the path actually taken).
It never touches depth, confirmation or freshness.
"""

from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.errors import NotFound
from keymem.memory import validate
from keymem.memory.calls import BrowseKeysRequest, ReadKeyRequest, ReadMemoryRequest
from keymem.memory.keys import key_views
from keymem.memory.validity import depth_stage, iso, validity
from keymem.memory.views import BrowseResult, KeyLinkRef, KeyMemory, KeyRef, MemoryView, ReadKeyResult
from keymem.memory.write import LINK_MAX, LINK_MIN, get_memory
from keymem.text.tokenize import literal_key, literal_tokens

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

# A read_key preview shows a memory whole up to this length (two or three sentences): one more
# line of preview costs ~25 tokens, the read_memory it saves ~430 (docs/BENCHMARKS.md, 1b).
PREVIEW_CHARS = 320
EXACT_LEXICAL = 2000
FETCH_SINGLES = 24  # content of up to this many memories: one primary-key lookup each (~0.35 ms at 100k)
LEXICAL_WINDOW = 1000
HEBBIAN_STEP = 0.1
NAMED_BONUS = 0.3  # read_key: on the capped-BM25 scale, for a memory of a name the query mentions ...
NAMED_TOP = 100  # ... weighed for this many of the key's best memories by the rest of the score
MEANING_MIN_MEMBERS = 4  # read_key: a key with more memories than this ranks them by meaning too ...
MEANING_MAX_MEMBERS = 256  # ... up to this many (the content vectors embedded on demand per call)
MEANING_STEP = 0.05  # ... counted in steps this coarse, so memories alike in meaning keep their other order


def preview(content: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def get_key(graph: Parts, key_id: Any, namespace: Any = None) -> dict[str, Any]:
    """A key by id, or by its text (normalised) in ``namespace`` (the default one when None)."""
    if isinstance(key_id, str) and not key_id.startswith("k_"):
        return key_by_text(graph, key_id, namespace)
    kid = validate.ident(key_id, "key_id", "k")
    k = graph.mirror.key(kid)
    ns = None if namespace is None else validate.namespace(namespace)
    if k is None or (ns is not None and k["namespace"] != ns):
        where = f" in namespace {ns!r}" if ns else ""
        raise NotFound(f"key {kid} does not exist{where}")
    return k


def key_by_text(graph: Parts, text: str, namespace: Any = None) -> dict[str, Any]:
    from keymem.memory.keys import keys_by_names
    from keymem.memory.names import name_id
    from keymem.text.tokenize import normalize_text

    ns = validate.DEFAULT_NAMESPACE if namespace is None else validate.namespace(namespace)
    forms = sorted({normalize_text(text), literal_key(text)} - {""})
    found = keys_by_names(graph, graph.store.query, [name_id(ns, f) for f in forms])
    if not found:
        raise NotFound(f"no key {text!r} in namespace {ns!r} (give a key id k_… or a key's exact text)")
    return next(iter(found.values()))


@dataclass
class Ranked:
    """One memory of a key with its rank score (content is fetched only for what is shown)."""

    memory_id: str
    score: float
    link_weight: float
    kind: str


def rank_in_key(graph: Parts, key_id: str, namespace: str, query: str | None, now: float,
                head: int | None = None) -> list[Ranked]:
    """Every visible memory of a key, best first (equal ones by id within the first ``head``).

    Link weight, depth and freshness always count; with a query, capped lexical relevance
    leads, plus ``NAMED_BONUS`` for memories linked to a name the query mentions (in the key
    "painting", "What did Melanie paint?" puts Melanie's memories first; weighed for the best
    ``NAMED_TOP`` only, which is where it can change the order a page shows). Scoring is
    vectorised over one row of parallel lists, so a hub key with thousands of memories costs
    milliseconds.
    For keys larger than ``EXACT_LEXICAL`` the lexical part comes from the namespace's top BM25
    hits instead of scoring each memory.
    """
    ids, weights, slots = graph.mirror.key_links(key_id, now)
    if not ids:
        return []
    factors, created = graph.mirror.slot_factors(slots, now)
    base = (weights / LINK_MAX) * factors
    kind = "link_weight"
    score = base
    if query:
        if len(ids) <= EXACT_LEXICAL:
            lex = graph.lexical.score_docs(query, ids)
        else:
            lex = dict(graph.lexical.search(query, LEXICAL_WINDOW, namespace))
        raw = np.asarray([lex.get(i, 0.0) for i in ids], dtype=np.float64)
        score = (0.25 + raw / (1.0 + raw) + _meaning(graph, query, ids)) * base
        top = np.argsort(-score, kind="stable")[:NAMED_TOP]
        named = named_memories(graph, key_id, [ids[i] for i in top.tolist()], query)
        lift = np.asarray([ids[i] in named for i in top.tolist()], dtype=bool)
        score[top[lift]] += NAMED_BONUS * base[top[lift]]
        kind = "content_relevance"
    order = _ties_by_id(np.lexsort((-created, -score)), score, created, ids, head)
    return [Ranked(ids[i], float(score[i]), float(weights[i]), kind) for i in order]


def _meaning(graph: Parts, query: str, ids: list[str]) -> np.ndarray | float:
    """Content cosine with the query, above zero, for the members of a busy key: the memory a
    question is about shares no word with it when it was reached by association."""
    if not MEANING_MIN_MEMBERS < len(ids) <= MEANING_MAX_MEMBERS:
        return 0.0
    qvec = graph.embed_soon([query]).result()[0]
    cos = graph.memvecs.relevance(qvec, ids)
    raw = np.maximum(0.0, np.asarray([cos.get(i, 0.0) for i in ids], dtype=np.float64))
    return np.floor(raw / MEANING_STEP) * MEANING_STEP


def _ties_by_id(order: np.ndarray, score: np.ndarray, created: np.ndarray, ids: list[str],
                head: int | None = None) -> list[int]:
    """``order`` (best score first, then newest) with runs of equal score and age ordered by id, as
    far as the first ``head`` positions go (all when None).

    ``lexsort`` leaves ties in the mirror's slot order, which follows the order rows came back from
    the store and is not fixed. Runs are rare once memories differ in age; a run that reaches past
    ``head`` only has its smallest ids put first, so a hub whose memories mostly tie costs no sort.
    """
    out: list[int] = order.tolist()
    limit = len(out) if head is None else head
    tie = np.flatnonzero((np.diff(score[order]) == 0) & (np.diff(created[order]) == 0)).tolist()
    start = 0
    while start < len(tie) and tie[start] < limit:
        end = start
        while end + 1 < len(tie) and tie[end + 1] == tie[end] + 1:
            end += 1
        a, b = tie[start], tie[end] + 2  # positions a..b-1 tie
        run = out[a:b]
        if b <= limit:
            out[a:b] = sorted(run, key=lambda i: ids[i])
        else:
            first = heapq.nsmallest(limit - a, run, key=lambda i: ids[i])
            chosen = set(first)
            out[a:b] = first + [i for i in run if i not in chosen]
        start = end + 1
    return out


_WORDS = re.compile(r"\w+")


def named_memories(graph: Parts, key_id: str, memory_ids: list[str], query: str) -> set[str]:
    """Which of ``memory_ids`` are linked to a name or proper noun (other than ``key_id``) that the
    query mentions literally; read from the mirror, no store lookup."""
    folded = query.casefold()
    tokens: set[str] | None = None
    named: dict[str, bool] = {}
    out: set[str] = set()
    for mid in memory_ids:
        for k, _ in graph.mirror.memory_keys(mid):
            hit = named.get(k)
            if hit is None:
                row = graph.mirror.key(k) if k != key_id else None
                hit = False
                # every word of the name inside the query (cheap) before the exact literal match (Kiwi)
                if (row is not None and row["key_type"] != "concept"
                        and all(w in folded for w in _WORDS.findall(row["text"].casefold()))):
                    tokens = literal_tokens(query) if tokens is None else tokens
                    hit = literal_key(row["text"]) in tokens
                named[k] = hit
            if hit:
                out.add(mid)
                break
    return out


def contents(graph: Parts, ids: list[str]) -> dict[str, str]:
    """Content of memories by id, read from the store: one primary-key lookup each for a handful."""
    if not ids:
        return {}
    if len(ids) <= FETCH_SINGLES:
        out = {}
        for mid in ids:
            rows = graph.store.query("mirror/content", id=mid)
            if rows:
                out[mid] = rows[0]["content"]
        return out
    return {r["id"]: r["content"] for r in graph.store.query("mirror/contents", ids=ids)}


def fetch(graph: Parts, ids: list[str], now: float | None = None) -> dict[str, dict[str, Any]]:
    """Ranking/validity fields (from the mirror) plus content of memories; visible ones when ``now`` is given."""
    meta = {mid: graph.mirror.memory(mid, now) for mid in ids}
    text = contents(graph, [mid for mid, m in meta.items() if m is not None])
    out = {}
    for mid, m in meta.items():
        if m is not None and mid in text:
            m["content"] = text[mid]
            out[mid] = m
    return out


def read_key(graph: Parts, request: ReadKeyRequest) -> ReadKeyResult:
    k = get_key(graph, request.key_id, request.namespace)
    query, limit, offset, seen = request.query, request.limit, request.offset, request.seen
    now = graph.now()
    ranked = rank_in_key(graph, k["id"], k["namespace"], query, now, head=offset + limit + len(seen))
    page, omitted = unseen_page(ranked, offset, limit, seen)
    rows = fetch(graph, [r.memory_id for _, r in page], now)
    view = key_views(graph, [k], k["namespace"], now, counts={k["id"]: len(ranked)})[0]
    memories = [
        KeyMemory(
            memory_id=r.memory_id, preview=preview(rows[r.memory_id]["content"]), within_key_rank=rank,
            score=round(r.score, 4), score_kind=r.kind, link_weight=round(r.link_weight, 4),
            validity=validity(rows[r.memory_id], graph.settings, now),
            other_keys=other_keys(graph, r.memory_id, k["id"]),
        )
        for rank, r in page
        if r.memory_id in rows
    ]
    return ReadKeyResult(key=view, memories=memories, total=len(ranked), offset=offset, limit=limit, omitted=omitted)


def unseen_page(ranked: list[Ranked], offset: int, limit: int,
                seen: frozenset[str]) -> tuple[list[tuple[int, Ranked]], int]:
    """Up to ``limit`` memories from position ``offset`` on that are not in ``seen``, with their 1-based
    rank in the key, and how many seen ones were passed over for them. Ranks and offsets stay those of
    the whole key, so the next page starts after the last rank shown whatever was skipped."""
    page: list[tuple[int, Ranked]] = []
    skipped = 0
    for i in range(offset, len(ranked)):
        if len(page) == limit:
            break
        if ranked[i].memory_id in seen:
            skipped += 1
        else:
            page.append((i + 1, ranked[i]))
    return page, skipped


OTHER_KEYS = 6  # a read_key line lists this many of the memory's other keys (the next hop)


def other_keys(graph: Parts, memory_id: str, but: str) -> list[KeyRef]:
    """The memory's other keys, strongest link first: where an agent can go next from this line."""
    weight = {k: w for k, w in graph.mirror.memory_keys(memory_id) if k != but}
    rows = sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))[:OTHER_KEYS]
    return [KeyRef(key_id=k["id"], key=k["text"]) for k in rows]


def memory_view(graph: Parts, m: dict[str, Any], now: float) -> MemoryView:
    weight = dict(graph.mirror.memory_keys(m["id"]))
    keys = sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))
    related = graph.mirror.related_ids(m["id"])
    return MemoryView(
        memory_id=m["id"], content=m["content"], namespace=m["namespace"],
        keys=[KeyLinkRef(key_id=k["id"], key=k["text"], link_weight=round(weight[k["id"]], 4)) for k in keys],
        validity=validity(m, graph.settings, now), depth=round(m["depth"], 4), depth_stage=depth_stage(m["depth"]),  # type: ignore[arg-type]
        access_count=int(m["access_count"]), supersedes=m["supersedes"], superseded_by=m["superseded_by"],
        active=bool(m["active"]), source=json.loads(m["source"]) if m["source"] else None,
        last_confirmation=json.loads(m["evidence"]) if m.get("evidence") else None,
        related_to=related, expires_at=iso(m["expires_at"]),
    )


def read_memory(graph: Parts, request: ReadMemoryRequest) -> MemoryView:
    m = get_memory(graph, request.memory_id, request.namespace)
    via = request.via_key_id
    now = graph.now()
    # every check before the first write: a refusal must not roll back a SET
    if via is not None and via not in dict(graph.mirror.memory_keys(m["id"])):
        raise NotFound(f"memory {m['id']} is not linked to key {via}")
    if via is None:  # the access alone is coalesced with other reads' (memory/access.py)
        graph.access.record(m["id"], now)
    else:
        with graph.store.write() as tx:
            tx.run("memory/access", id=m["id"], now=now)
            if not tx.run("link/get", key_id=via, memory_id=m["id"]):
                raise NotFound(f"memory {m['id']} is not linked to key {via}")
            # incremented in the store, not read and written back: two fronts reading at once both count
            tx.run("link/adjust", key_id=via, memory_id=m["id"], factor=1.0, delta=HEBBIAN_STEP, lo=LINK_MIN,
                   hi=LINK_MAX)
            graph.mirror.touch(tx, memories=[m["id"]])
            graph.autokey.on_read(tx, via, m, now)
    with graph.access.lock:
        fresh = get_memory(graph, m["id"])
        fresh["access_count"] += graph.access.pending(m["id"])
    return memory_view(graph, fresh, now)


def browse_keys(graph: Parts, request: BrowseKeysRequest) -> BrowseResult:
    ns, hubs_only, limit, offset = request.namespace, request.hubs_only, request.limit, request.offset
    now = graph.now()
    min_count = graph.settings.key_hub_min_links if hubs_only else 1
    page, total = graph.mirror.hubs_first(ns, now, min_count, offset, limit)
    views = key_views(graph, [k for k, _ in page], ns, now, counts={k["id"]: n for k, n in page})
    for v in views:
        v.score, v.score_kind = float(v.memory_count), "memory_count"
    return BrowseResult(keys=views, total=int(total), offset=offset, limit=limit)
