"""Direct associative recall: Kiwi BM25 + key routing, fused by RRF, expanded over the graph.

1. Lexical: BM25 over each memory's key texts and content (``LexicalIndex``).
2. Key path: the query's embedding routes to concept keys, its literal tokens to names
   and aliases; their links lead to memories.
3. Reciprocal Rank Fusion (k = 60) of the two ranks, then depth and freshness
   (``0.2 + 0.8 x freshness``).
4. Expansion for 1..5 hops: each hop is one variable-length Cypher match from the best
   memories through a shared non-hub key or a RELATED_TO link, scored with hop decay
   and link weights. Hub keys are skipped (their fan-out would swamp the pool).
5. The cross-encoder re-scores the top ``KEYMEM_RERANK_POOL`` candidates when loaded.

Scores are labelled with their kind (``rrf_fused_rank``, ``content_relevance``,
``cross_encoder_logit``); none is a probability.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keymem.memory import validate
from keymem.memory.evidence import select_evidence
from keymem.memory.lexical import capped
from keymem.memory.recall import route_keys
from keymem.memory.tokenize import script_of
from keymem.memory.validity import rank_factor, validity
from keymem.memory.views import DirectHit, DirectResult, InjectResult
from keymem.memory.write import LINK_INIT, LINK_MAX, LINK_MIN

if TYPE_CHECKING:
    from keymem.memory.graph import MemoryGraph

RRF_K = 60
LEXICAL_POOL = 100
KEY_POOL = 200
HOP_DECAY = 0.5
BEAM = 12
HUB_FANOUT = 50
REINFORCE_STEP = 0.05
DECAY_FACTOR = 0.98


@dataclass
class Candidate:
    memory_id: str
    score: float = 0.0
    hops: int = 0
    via_keys: list[str] = field(default_factory=list)
    lexical: float = 0.0


def _fuse(lex: list[tuple[str, float]], keyed: list[tuple[str, float]]) -> dict[str, Candidate]:
    cands: dict[str, Candidate] = {}
    for rank, (mid, s) in enumerate(lex, start=1):
        c = cands.setdefault(mid, Candidate(mid))
        c.score += 1.0 / (RRF_K + rank)
        c.lexical = s
    for rank, (mid, _) in enumerate(keyed, start=1):
        cands.setdefault(mid, Candidate(mid)).score += 1.0 / (RRF_K + rank)
    return cands


def _key_path(graph: MemoryGraph, routed: dict[str, tuple[float, str]], now: float,
              ) -> tuple[list[tuple[str, float]], dict[str, list[str]], list[tuple[str, str]]]:
    """Memories reached from routed keys, ranked; plus which keys reached each, and all links seen."""
    if not routed:
        return [], {}, []
    rows = graph.store.query("recall/key_memories", ids=list(routed), now=now)
    fan: dict[str, int] = defaultdict(int)
    for r in rows:
        fan[r["key_id"]] += 1
    score: dict[str, float] = defaultdict(float)
    via: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        rel = routed[r["key_id"]][0]
        spread = 1.0 / math.log2(2 + fan[r["key_id"]])  # a hub spreads its relevance thin
        score[r["memory_id"]] += rel * spread * (r["weight"] / LINK_INIT)
        via[r["memory_id"]].append(r["key_id"])
    ranked = sorted(score.items(), key=lambda kv: -kv[1])[:KEY_POOL]
    return ranked, via, [(r["key_id"], r["memory_id"]) for r in rows]


def _expand(graph: MemoryGraph, cands: dict[str, Candidate], namespace: str, hops: int, now: float) -> None:
    frontier = sorted(cands.values(), key=lambda c: -c.score)[:BEAM]
    for hop in range(1, hops + 1):
        ids = [c.memory_id for c in frontier]
        if not ids:
            return
        hubs = [r["key_id"] for r in graph.store.query("recall/frontier_keys", frontier=ids, now=now)
                if r["n"] > HUB_FANOUT] + ["__no_hub__"]  # Kuzu folds an empty list and then refuses it
        rows = graph.store.query("recall/expand", frontier=ids, hubs=hubs, namespace=namespace, now=now)
        parent = {c.memory_id: c for c in frontier}
        reached: dict[str, Candidate] = {}
        for r in rows:
            src = parent.get(r["src"])
            if src is None:
                continue
            weights = [w for w in r["weights"] if w is not None] or [LINK_INIT]
            strength = math.prod(min(w, LINK_MAX) / LINK_INIT for w in weights) ** (1.0 / len(weights))
            s = src.score * (HOP_DECAY ** hop) * strength
            dst = r["dst"]
            keys_on_path = [v for v in r["via"] if v.startswith("k_")]
            if dst in cands and cands[dst].hops < hop and cands[dst].score >= s:
                continue
            best = reached.get(dst)
            if best is None or s > best.score:
                reached[dst] = Candidate(dst, s, hop, keys_on_path)
        for mid, c in reached.items():
            old = cands.get(mid)
            if old is None:
                cands[mid] = c
            else:
                old.score += c.score * 0.5  # already found directly: the association adds support
        frontier = sorted(reached.values(), key=lambda c: -c.score)[:BEAM]


def recall_direct(graph: MemoryGraph, args: dict[str, Any], *, reinforce: bool = True) -> DirectResult:
    query = validate.text(args.get("query"), "query", max_chars=20_000)
    top_k = validate.count(args.get("top_k"), "top_k", default=10, lo=1, hi=100)
    ns = validate.namespace(args.get("namespace"))
    hops = validate.count(args.get("hops"), "hops", default=graph.settings.recall_hops, lo=0, hi=5)
    use_rerank = args.get("rerank", True)
    explain = bool(args.get("explain", False))
    now = graph.now()

    qvec = graph.embed([query])[0]
    lex = graph.lexical.search(query, LEXICAL_POOL, ns)
    routed = route_keys(graph, query, qvec, ns, 10)
    keyed, via, seen_links = _key_path(graph, routed, now)
    cands = _fuse(lex, keyed)
    for mid, keys in via.items():
        cands[mid].via_keys = keys
    rows = _rows(graph, list(cands))
    for mid in list(cands):
        if mid not in rows:
            del cands[mid]
        else:
            cands[mid].score *= rank_factor(rows[mid], graph.settings, now)
    if hops:
        _expand(graph, cands, ns, hops, now)
        missing = [m for m in cands if m not in rows]
        rows.update(_rows(graph, missing))
        for mid in missing:
            if mid in rows:
                cands[mid].score *= rank_factor(rows[mid], graph.settings, now)
            else:
                del cands[mid]

    ranked = sorted(cands.values(), key=lambda c: -c.score)
    kind = "rrf_fused_rank"
    reranker = graph.reranker() if use_rerank else None
    rejected = False
    pool = ranked[: graph.settings.rerank_pool]
    if reranker is not None and pool:
        logits = reranker.score(query, [rows[c.memory_id]["content"] for c in pool])
        for c, logit in zip(pool, logits, strict=True):
            c.score = float(logit)
        pool.sort(key=lambda c: -c.score)
        ranked = pool + ranked[len(pool):]
        kind = "cross_encoder_logit"
        gate = graph.settings.rerank_min_score
        top = pool[0]
        if gate is not None and top.score < gate and script_of(query) == script_of(rows[top.memory_id]["content"]):
            rejected = True
    picks = [] if rejected else ranked[:top_k]
    if not rejected and graph.settings.task_evidence_selection:
        picks = select_evidence(graph, query, ranked, picks, rows, top_k)
    if reinforce and not rejected:
        _hebbian(graph, ranked[:top_k], routed, seen_links)
    hits = [
        DirectHit(
            memory_id=c.memory_id, content=rows[c.memory_id]["content"], namespace=ns,
            score=round(c.score, 6), score_kind=kind, hops=c.hops, via_keys=c.via_keys,
            validity=validity(rows[c.memory_id], graph.settings, now),
        )
        for c in picks
    ]
    info = None
    if explain:
        info = {"lexical": len(lex), "routed_keys": len(routed), "key_path": len(keyed),
                "candidates": len(cands), "reranked": reranker is not None, "namespace": ns}
    return DirectResult(results=hits, rejected=rejected, explain=info)


def _rows(graph: MemoryGraph, ids: list[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    return {r["m"]["id"]: r["m"] for r in graph.store.query("memory/get_many", ids=ids)
            if r["m"]["active"] and not graph.expired(r["m"])}


def _hebbian(graph: MemoryGraph, used: list[Candidate], routed: dict[str, tuple[float, str]],
             seen_links: list[tuple[str, str]]) -> None:
    """Strengthen routed-key links to what was returned; let explored-but-unused ones fade."""
    if not seen_links:
        return
    returned = {c.memory_id for c in used}
    adjust = []
    for key_id, mid in seen_links:
        if mid in returned:
            adjust.append({"key_id": key_id, "memory_id": mid, "factor": 1.0, "delta": REINFORCE_STEP})
        else:
            adjust.append({"key_id": key_id, "memory_id": mid, "factor": DECAY_FACTOR, "delta": 0.0})
    with graph.store.write() as tx:
        tx.run("link/adjust_many", rows=adjust, lo=LINK_MIN, hi=LINK_MAX)


def recall_inject(graph: MemoryGraph, args: dict[str, Any]) -> InjectResult:
    """Memories for the prompt hook: only those above an absolute relevance floor."""
    prompt = validate.text(args.get("prompt"), "prompt", max_chars=20_000)
    ns = validate.namespace(args.get("namespace"))
    limit = graph.settings.inject_max
    res = recall_direct(graph, {"query": prompt, "namespace": ns, "top_k": limit * 3}, reinforce=False)
    if res.rejected or not res.results:
        return InjectResult(memory_ids=[], text="")
    qvec = graph.embed([prompt])[0]
    chosen = []
    lex = graph.lexical.score_docs(prompt, [h.memory_id for h in res.results])
    for h in res.results:
        rel = capped(lex.get(h.memory_id, 0.0))
        if h.score_kind == "cross_encoder_logit":
            rel = max(rel, 1.0 / (1.0 + math.exp(-h.score)))
        if h.via_keys:
            kv = graph.vectors.get(h.via_keys)
            if kv:
                rel = max(rel, max(float(v @ qvec) for v in kv.values()))
        if rel >= graph.settings.inject_min_relevance:
            chosen.append(h)
        if len(chosen) >= limit:
            break
    if not chosen:
        return InjectResult(memory_ids=[], text="")
    lines = ["Possibly relevant memories from keymem (verify before relying on aging or stale ones):"]
    for h in chosen:
        lines.append(f"- [{h.memory_id}] ({h.validity.status}) {' '.join(h.content.split())}")
    return InjectResult(memory_ids=[h.memory_id for h in chosen], text="\n".join(lines))
