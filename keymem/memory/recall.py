"""The MCP ``recall`` path: route a query to keys, preview the one memory they match best.

Keys are routed by the query's embedding (concept keys) and its literal words (names,
aliases) and returned by routing score. The preview is chosen among the memories of the
returned keys, as ``recall_direct`` would rank them without its graph walk: BM25 of the
``context`` (or query) plus the evidence of the routed keys that lead to it, so a memory
reached by several specific keys, or one the strongest key holds but a weaker key matches
better, can be shown first. Keys with equal routing scores (several literal matches) are
ordered by what reading them adds: the best lexical match among their memories other than
the preview.

The preview is passive: no access count, depth, edge, alias or freshness changes. Only one
memory enters the agent's context; further hops are the agent's deliberate choice
(``read_key`` / ``read_memory``).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.index.bm25 import capped
from keymem.memory.calls import RecallRequest
from keymem.memory.keys import key_views, keys_by_names
from keymem.memory.names import name_id
from keymem.memory.navigate import LEXICAL_WINDOW, fetch
from keymem.memory.validity import validity
from keymem.memory.views import KeyRef, KeyView, MemoryPreview, RecallResult
from keymem.memory.write import LINK_INIT
from keymem.text.tokenize import literal_tokens

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

LITERAL = "literal_match"
COSINE = "key_cosine"
LEXICAL = "content_relevance"
# The preview's choice (see ``choose_preview``); values measured on LoCoMo, docs/BENCHMARKS.md.
KEY_EVIDENCE_WEIGHT = 0.5  # routed-key evidence's share of the choice (max-normalised BM25 = 1)
NAMED_BOOST = 0.3  # bonus for memories of a name the query mentions, when that name is a broad key
NAMED_HUB = 50  # a literally matched name key with more memories than this is broad
ALL_MEMORIES = 200  # a key with more memories offers only its memories among the top lexical hits ...
BIG_KEY_HITS = 100  # ... (this many) ...
STRONGEST_LINKS = 20  # ... or, when none is among them (routed by meaning alone), this many strongest links


def named_keys(graph: Parts, query: str, namespace: str) -> list[str]:
    """Keys the query names literally (names, aliases, any key text among its word n-grams)."""
    literal = literal_tokens(query)
    return [key["id"] for key in keys_by_names(graph, graph.store.query,
                                               sorted(name_id(namespace, t) for t in literal)).values()]


def route_keys(graph: Parts, qvec: np.ndarray, named: list[str], namespace: str,
               limit: int) -> dict[str, tuple[float, str]]:
    """Key id -> (relevance, score kind): concept keys by cosine, the ``named_keys`` literally."""
    found: dict[str, tuple[float, str]] = {}
    threshold = graph.thresholds.key_recall
    for key_id, cos in graph.vectors.search(qvec, namespace, max(limit * 3, 10), min_score=threshold):
        found[key_id] = (cos, COSINE)
    for key_id in named:
        found[key_id] = (1.0, LITERAL)
    return found


def lexical_keys(graph: Parts, query: str, namespace: str) -> dict[str, tuple[float, str]]:
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


def recall(graph: Parts, request: RecallRequest) -> RecallResult:
    query, top_k, ns, context, explain = (request.query, request.top_k, request.namespace, request.context,
                                          request.explain)
    now = graph.now()
    # The embedding runs on another thread (ONNX leaves the GIL) while the store looks the
    # query's words up as names and BM25 ranks the memories for the preview.
    pending = graph.embed_soon([query])
    named = named_keys(graph, query, ns)
    hits = graph.lexical.search(context or query, LEXICAL_WINDOW, ns)
    qvec = pending.result()[0]
    scored = route_keys(graph, qvec, named, ns, top_k) or lexical_keys(graph, query, ns)
    # Only the best-scored keys get a view (counts, aliases, specificity): twice top_k, plus any
    # tied with the last of them.
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
        cands = Candidates(graph, views, hits, now)
        chosen = choose_preview(graph, cands, context or query, now)
        views = order_keys(views, cands, chosen[0] if chosen else None)
        if chosen is not None:
            memory = preview_view(graph, chosen, views, cands, now)
    result = RecallResult(keys=views, memory=memory)
    if explain:
        result.namespaces = {ns: len(views)}
    return result


class Candidates:
    """The memories of the returned keys, scored for the preview.

    ``score`` per memory: ``bm25 / max bm25 + KEY_EVIDENCE_WEIGHT x evidence / max evidence``
    (+ ``NAMED_BOOST``), times depth and freshness. A key's evidence for a memory is its
    routing score x its specificity (IDF) x the link weight, summed over the returned keys
    that lead to it: recall_direct's lexical + key-path fusion restricted to these keys. BM25
    comes from one search of the namespace's top ``LEXICAL_WINDOW`` hits (exact wherever fewer
    memories match; a memory ranked below the window counts 0), which costs less than scoring
    each key's memories. A key of up to ``ALL_MEMORIES`` memories offers all of them; a bigger
    one offers those among the top ``BIG_KEY_HITS`` lexical hits (so a hub costs what its hits
    cost, not what its size does), or its ``STRONGEST_LINKS`` strongest links (link weight x
    depth x freshness) when none is among them.
    """

    def __init__(self, graph: Parts, views: list[KeyView], hits: list[tuple[str, float]], now: float) -> None:
        """``hits``: the namespace's top ``LEXICAL_WINDOW`` BM25 hits for the context (or query)."""
        self.lexical = dict(hits)
        self.offered: dict[str, list[str]] = {}  # key id -> the memories it offers
        evidence: dict[str, float] = {}
        factor: dict[str, float] = {}
        named: set[str] = set()
        top_hits: dict[str, dict[str, float]] | None = None  # top lexical hits -> their links
        hit_factors: dict[str, float] = {}
        for v in views:
            offered: list[tuple[str, float, float]]  # memory, link weight, depth x freshness
            if v.memory_count > ALL_MEMORIES:
                if top_hits is None:
                    top_hits = {m: dict(graph.mirror.memory_keys(m)) for m, _ in hits[:BIG_KEY_HITS]}
                    hit_factors = graph.mirror.rank_factors(top_hits, now)
                offered = [(m, links[v.key_id], hit_factors[m]) for m, links in top_hits.items()
                           if v.key_id in links and m in hit_factors]
            else:
                offered = []
            if not offered:
                ids, weights, slots = graph.mirror.key_links(v.key_id, now)
                factors, _ = graph.mirror.slot_factors(slots, now)
                keep = np.arange(len(ids))
                if len(ids) > ALL_MEMORIES:  # none of its memories among the hits: its strongest links
                    keep = np.lexsort((np.asarray(ids), -(weights * factors)))[:STRONGEST_LINKS]
                offered = [(ids[i], float(weights[i]), float(factors[i])) for i in keep.tolist()]
            self.offered[v.key_id] = [m for m, _, _ in offered]
            share = (v.score or 0.0) * v.specificity / LINK_INIT
            broad_name = v.score_kind == LITERAL and v.key_type != "concept" and v.memory_count > NAMED_HUB
            for mid, w, f in offered:
                evidence[mid] = evidence.get(mid, 0.0) + share * w
                factor[mid] = f
                if broad_name:
                    named.add(mid)
        top_lex = max((self.lexical.get(m, 0.0) for m in evidence), default=0.0) or 1.0
        top_ev = max(evidence.values(), default=0.0) or 1.0
        self.score = {
            m: (self.lexical.get(m, 0.0) / top_lex + KEY_EVIDENCE_WEIGHT * e / top_ev
                + (NAMED_BOOST if m in named else 0.0)) * factor[m]
            for m, e in evidence.items()
        }

    def best(self, n: int) -> list[str]:
        return heapq.nsmallest(n, self.score, key=lambda m: (-self.score[m], m))


def order_keys(views: list[KeyView], cands: Candidates, preview: str | None) -> list[KeyView]:
    """Routing score first; equal scores by the best lexical match among the memories the key
    offered other than the preview (what reading the key adds), then specificity."""

    def adds(v: KeyView) -> float:
        return max((cands.lexical.get(m, 0.0) for m in cands.offered.get(v.key_id, []) if m != preview), default=0.0)

    return sorted(views, key=lambda v: (-(v.score or 0.0), -adds(v), -v.specificity, v.key))


Chosen = tuple[str, dict[str, Any], float, str]  # memory id, its row (with content), score, score kind


def choose_preview(graph: Parts, cands: Candidates, text: str, now: float) -> Chosen | None:
    """The best candidate, or the cross-encoder's best of the top ``rerank_pool`` when one is loaded.

    Without a cross-encoder the score shown is the memory's ``content_relevance`` (capped BM25 of
    ``text``); the choice also weighed the keys that lead to it (``Candidates``)."""
    reranker = graph.reranker()
    pool = cands.best(graph.settings.rerank_pool if reranker is not None else 1)
    if not pool:
        return None
    rows = fetch(graph, pool, now)
    pool = [m for m in pool if m in rows]
    if not pool:
        return None
    if reranker is not None and len(pool) > 1:
        logits = reranker.score(text, [rows[m]["content"] for m in pool])
        i = int(np.argmax(logits))
        return pool[i], rows[pool[i]], float(logits[i]), "cross_encoder_logit"
    return pool[0], rows[pool[0]], capped(cands.lexical.get(pool[0], 0.0)), LEXICAL


def preview_view(graph: Parts, chosen: Chosen, views: list[KeyView], cands: Candidates, now: float,
                 ) -> MemoryPreview:
    """The passive preview, under the first returned key that links the memory."""
    best, m, score, kind = chosen
    matched = next(v for v in views if best in cands.offered.get(v.key_id, ()))
    weight = dict(graph.mirror.memory_keys(best))
    linked = sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))
    connected = [KeyRef(key_id=k["id"], key=k["text"]) for k in linked if k["id"] != matched.key_id]
    return MemoryPreview(
        memory_id=best, content=m["content"], matched_key=KeyRef(key_id=matched.key_id, key=matched.key),
        score=round(score, 4), score_kind=kind, validity=validity(m, graph.settings, now),
        connected_keys=connected,
    )
