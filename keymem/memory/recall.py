"""The MCP ``recall`` path: route a query to keys, preview one memory of the strongest key.

The preview is passive: no access count, depth, edge, alias or freshness changes. Only one
memory enters the agent's context; further hops are the agent's deliberate choice
(``read_key`` / ``read_memory``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.memory import validate
from keymem.memory.keys import key_views, keys_by_names, name_id
from keymem.memory.lexical import capped
from keymem.memory.navigate import fetch, rank_in_key
from keymem.memory.tokenize import literal_tokens
from keymem.memory.validity import validity
from keymem.memory.views import KeyRef, MemoryPreview, RecallResult

if TYPE_CHECKING:
    from keymem.memory.graph import MemoryGraph

LITERAL = "literal_match"
COSINE = "key_cosine"
LEXICAL = "content_relevance"


def route_keys(graph: MemoryGraph, query: str, qvec: np.ndarray, namespace: str, limit: int) -> dict[str, tuple[float, str]]:
    """Key id -> (relevance, score kind): concept keys by cosine, names and aliases literally."""
    found: dict[str, tuple[float, str]] = {}
    threshold = graph.thresholds.key_recall
    for key_id, cos in graph.vectors.search(qvec, namespace, max(limit * 3, 10), min_score=threshold):
        found[key_id] = (cos, COSINE)
    literal = literal_tokens(query)
    for key in keys_by_names(graph, graph.store.query, sorted(name_id(namespace, t) for t in literal)).values():
        found[key["id"]] = (1.0, LITERAL)
    return found


def lexical_keys(graph: MemoryGraph, query: str, namespace: str) -> dict[str, tuple[float, str]]:
    """When no key routes, the keys of the best lexical memories (capped BM25 as relevance)."""
    hits = graph.lexical.search(query, 3, namespace)
    found: dict[str, tuple[float, str]] = {}
    if not hits:
        return found
    for mid, score in hits:
        rel = capped(score)
        for key_id, _ in graph.mirror.memory_keys(mid):
            if rel > found.get(key_id, (0.0, ""))[0]:
                found[key_id] = (rel, LEXICAL)
    return found


def recall(graph: MemoryGraph, args: dict[str, Any]) -> RecallResult:
    query = validate.text(args.get("query"), "query", max_chars=4000)
    top_k = validate.count(args.get("top_k"), "top_k", default=5, lo=1, hi=50)
    ns = validate.namespace(args.get("namespace"))
    context = args.get("context")
    if context is not None:
        context = validate.text(context, "context", max_chars=20_000)
    explain = args.get("explain", False)
    if not isinstance(explain, bool):
        raise validate.InvalidInput("explain must be true or false")
    now = graph.now()
    qvec = graph.embed([query])[0]
    scored = route_keys(graph, query, qvec, ns, top_k) or lexical_keys(graph, query, ns)
    # Only the best-scored keys get a view (aliases are read from the store for each): twice
    # top_k, plus any tied with the last of them.
    ranked_scores = sorted((s for s, _ in scored.values()), reverse=True)
    cutoff = ranked_scores[min(len(ranked_scores), 2 * top_k) - 1] if ranked_scores else 0.0
    shortlist = [k for k, (s, _) in scored.items() if s >= cutoff]
    rows = graph.mirror.keys(shortlist)
    views = [v for v in key_views(graph, rows, ns, now, scores=scored) if v.memory_count > 0]
    views.sort(key=lambda v: (-(v.score or 0.0), -v.specificity, v.key))
    views = views[:top_k]
    memory = None
    if views:
        graph.autokey.note_route(query, qvec, [v.key_id for v in views])
        memory = top_memory(graph, views[0].key_id, views[0].key, ns, context or query, now)
    result = RecallResult(keys=views, memory=memory)
    if explain:
        result.namespaces = {ns: len(views)}
    return result


def top_memory(graph: MemoryGraph, key_id: str, key_text: str, namespace: str, text: str, now: float,
               ) -> MemoryPreview | None:
    """The best memory inside one key for the raw context: cross-encoder when loaded, else lexical."""
    ranked = rank_in_key(graph, key_id, namespace, text, now)
    if not ranked:
        return None
    reranker = graph.reranker()
    pool = ranked[: graph.settings.rerank_pool] if reranker is not None else ranked[:1]
    rows = fetch(graph, [r.memory_id for r in pool], now)
    pool = [r for r in pool if r.memory_id in rows]
    if not pool:
        return None
    best, score, kind = pool[0].memory_id, pool[0].score, pool[0].kind
    if reranker is not None and len(pool) > 1:
        logits = reranker.score(text, [rows[r.memory_id]["content"] for r in pool])
        i = int(np.argmax(logits))
        best, score, kind = pool[i].memory_id, float(logits[i]), "cross_encoder_logit"
    m = rows[best]
    weight = dict(graph.mirror.memory_keys(best))
    linked = sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))
    connected = [KeyRef(key_id=k["id"], key=k["text"]) for k in linked if k["id"] != key_id]
    return MemoryPreview(
        memory_id=best, content=m["content"], matched_key=KeyRef(key_id=key_id, key=key_text),
        score=round(score, 4), score_kind=kind, validity=validity(m, graph.settings, now),
        connected_keys=connected,
    )
