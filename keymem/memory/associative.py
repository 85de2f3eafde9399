"""Direct associative recall: Kiwi BM25 + key routing, fused by score, then association over the graph.

1. Lexical: BM25 over each memory's key texts and content (``LexicalIndex``).
2. Key path: the query's embedding (and its key-like phrases) routes to concept keys, its
   literal tokens to names and aliases; their links lead to memories, weighted by IDF.
3. Fusion of the two scores (``_fuse``), then depth and freshness (``0.2 + 0.8 x freshness``).
4. Association for 1..5 hops (``associate``): activation spreads from the best direct hits
   over their walkable (non-hub) keys and RELATED_TO links, a key splitting what it passes
   among its memories, with a restart per hop; each reached memory's share is added to its
   score, so a memory that shares a specific key with the best hits climbs, and one reached
   only through the graph can enter the ranking. The graph is read through ``Neighbourhood``.
5. The cross-encoder re-scores the top ``KEYMEM_RERANK_POOL`` candidates when loaded.

Scores are labelled with their kind (``rrf_fused_rank``, ``content_relevance``,
``cross_encoder_logit``); none is a probability.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keymem.index.bm25 import capped
from keymem.memory.calls import DirectRequest, InjectRequest
from keymem.memory.evidence import Candidate, select_evidence
from keymem.memory.navigate import contents
from keymem.memory.recall import LITERAL, named_keys, route_keys
from keymem.memory.validity import validity
from keymem.memory.views import DirectHit, DirectResult, InjectResult
from keymem.memory.write import LINK_INIT, LINK_MAX, LINK_MIN
from keymem.text.tokenize import script_of, tokenize

if TYPE_CHECKING:
    from keymem.index.neighbourhood import Neighbourhood
    from keymem.memory.parts import Parts

RRF_K = 60
LEXICAL_POOL = 100
KEY_POOL = 200
HUB_FANOUT = 50
REINFORCE_STEP = 0.05
DECAY_FACTOR = 0.98
# Association (see associate): values chosen by measurement on LoCoMo, docs/BENCHMARKS.md.
SEED_MEMORIES = 5  # direct candidates that seed the walk
BEAM = 20  # memories expanded further at each later hop
RESTART = 0.5  # hop h keeps (1 - RESTART)**h of the activation it moves
KEY_SIZE_DAMPING = 1.0  # a key of n memories passes (1/n)**this of what it received
RELATED_SHARE = 1.0  # weight of a RELATED_TO edge against a shared key
ASSOC_WEIGHT = 0.25  # association's share of the score, relative to the best direct score
NAMED_BOOST = 0.3  # fused-score bonus for candidates linked to a hub key the query names
KEY_WEIGHT = 0.3  # key-path share of the fused score (lexical = 1)
PHRASES = 4  # query phrases embedded for key routing
PHRASE_KEYS = 5  # concept keys routed per phrase
ROUTE_KEYS = 10  # keys routed by the whole query
# Hebbian updates: one statement for all links (planned as a scan: ~6 ms at 10k memories, ~85 ms at
# 100k) while the store is small or the set large; else one primary-key statement per link (~1 ms).
ADJUST_SINGLES = 48
ADJUST_SCAN_MAX_MEMORIES = 20_000
PHRASE_QUERY_MAX_CHARS = 500  # longer queries (prompts) route by the whole text only


def _fuse(lex: list[tuple[str, float]], keyed: list[tuple[str, float]],
          named: set[str] | None = None) -> dict[str, Candidate]:
    """One fused score per memory from the lexical and key-path lists.

    The score combines *scores*, not ranks: ``bm25 / max bm25 + KEY_WEIGHT x key score / max
    key score`` (+ ``NAMED_BOOST``). Plain RRF of the two ranks let a memory reached by one
    loosely routed key outrank strong lexical matches (measured on LoCoMo, see
    docs/BENCHMARKS.md); the score sum keeps how much better the top hits of each list are,
    and gives association a scale to add to. The order is reported as ``1 / (RRF_K + rank)``.
    """
    total: dict[str, float] = defaultdict(float)
    lexical: dict[str, float] = {}
    if lex and lex[0][1] > 0:
        top = lex[0][1]
        for mid, s in lex:
            total[mid] += s / top
            lexical[mid] = s
    if keyed and keyed[0][1] > 0:
        top = keyed[0][1]
        for mid, s in keyed:
            total[mid] += KEY_WEIGHT * s / top
    for mid in named or ():
        if mid in total:
            total[mid] += NAMED_BOOST
    return {mid: Candidate(mid, score, lexical=lexical.get(mid, 0.0)) for mid, score in total.items()}


def query_phrases(query: str) -> list[str]:
    """Key-like phrases of a query (its suggested concept keys), embedded apart from the query.

    A whole question embeds far from a two-word key ("When did Melanie paint a sunrise?" vs
    "sunrise"), so the question alone routes few concept keys; its phrases route them by
    meaning ("paint" -> "painting"). Names already route literally.
    """
    from keymem.text.suggest import suggest_keys

    if len(query) > PHRASE_QUERY_MAX_CHARS:
        return []
    found = [k for k, kind in suggest_keys(query, max_keys=PHRASES + 2) if kind == "concept"]
    return [p for p in found if p.lower() != query.lower()][:PHRASES]


def _route_phrases(graph: Parts, routed: dict[str, tuple[float, str]], vecs: Any, namespace: str) -> None:
    threshold = graph.thresholds.key_recall
    for vec in vecs:
        for key_id, cos in graph.vectors.search(vec, namespace, PHRASE_KEYS, min_score=threshold):
            if cos > routed.get(key_id, (0.0, ""))[0]:
                routed[key_id] = (cos, "key_cosine")


def _idf(n_docs: int, fan: int) -> float:
    """BM25 IDF of a key linked to ``fan`` of ``n_docs`` memories (> 0)."""
    return math.log(1.0 + (max(n_docs, fan) - fan + 0.5) / (fan + 0.5))


def _fans(graph: Parts, routed: dict[str, tuple[float, str]]) -> dict[str, int]:
    """Links per routed key, superseded and expired memories included (hub detection, key IDF)."""
    return {k: graph.mirror.degree(k) for k in routed}


def _hub_names(graph: Parts, routed: dict[str, tuple[float, str]], fan: dict[str, int]) -> dict[str, str]:
    """Hub keys the query named literally (a person the store is mostly about): id -> text."""
    ids = [k for k, (_, kind) in routed.items() if kind == LITERAL and fan.get(k, 0) > HUB_FANOUT]
    if not ids:
        return {}
    return {k["id"]: k["text"] for k in graph.mirror.keys(ids)}


def _without_names(query: str, names: list[str]) -> str:
    """The query minus the given names (and their possessive), if anything searchable is left."""
    out = query
    for name in names:
        out = re.sub(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", " ", out, flags=re.I)
    return out if out != query and tokenize(out) else query


def _named_members(graph: Parts, hubs: dict[str, str], ids: set[str]) -> set[str]:
    """Which of ``ids`` are linked to one of the named hub keys."""
    if not hubs or not ids:
        return set()
    return {mid for mid in ids if any(k in hubs for k, _ in graph.mirror.memory_keys(mid))}


def _key_path(graph: Parts, routed: dict[str, tuple[float, str]], namespace: str, now: float,
              fan: dict[str, int] | None = None,
              ) -> tuple[list[tuple[str, float]], dict[str, list[str]], list[tuple[str, str]]]:
    """Memories reached from routed keys, ranked; plus which keys reached each, and all links seen.

    Each key contributes ``relevance x IDF(key) x link weight``, so a memory reached by several
    specific keys ranks first. Hub keys (more than ``HUB_FANOUT`` memories) are not walked:
    their memories would enter the fused ranking in arbitrary order (a speaker's name reaches
    half of a conversation), and their text is already in each memory's BM25 document.
    """
    if not routed:
        return [], {}, []
    if fan is None:
        fan = _fans(graph, routed)
    walk = [k for k in routed if 0 < fan.get(k, 0) <= HUB_FANOUT]
    if not walk:
        return [], {}, []
    n_docs = int(graph.lexical.stats(namespace)["docs"])
    score: dict[str, float] = defaultdict(float)
    via: dict[str, list[str]] = defaultdict(list)
    seen: list[tuple[str, str]] = []
    for k in walk:
        ids, weights, _ = graph.mirror.key_links(k, now)
        share = routed[k][0] * _idf(n_docs, fan[k]) / LINK_INIT
        for mid, w in zip(ids, weights.tolist(), strict=True):
            score[mid] += share * w
            via[mid].append(k)
            seen.append((k, mid))
    ranked = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:KEY_POOL]
    return ranked, via, seen


@dataclass
class Association:
    """What the walk found: mass per memory (the largest is 1), the hop that first reached it,
    and the key that carried most of its mass there (none when a RELATED_TO edge did)."""

    mass: dict[str, float] = field(default_factory=dict)
    hop: dict[str, int] = field(default_factory=dict)
    via: dict[str, str] = field(default_factory=dict)


def associate(nb: Neighbourhood, cands: dict[str, Candidate], hops: int, now: float) -> Association:
    """Spreading activation (a personalised PageRank truncated at ``hops``) from the best direct hits.

    Seeds: the best ``SEED_MEMORIES`` direct candidates, with mass in proportion to their score
    (seeding the routed keys instead, HippoRAG-style, measured worse: docs/BENCHMARKS.md).
    Each hop, a memory passes its activation to its walkable keys in proportion to link weight,
    and a key of ``n`` visible memories passes ``(1/n)**KEY_SIZE_DAMPING`` of what it got, split
    among its other memories by link weight (a specific key shared by two memories is a strong
    association, a key of fifty almost none: with keys that are not chosen with care, as
    suggested keys, the broad ones connect unrelated turns); RELATED_TO edges pass
    ``RELATED_SHARE``. Hop ``h`` keeps ``(1 - RESTART)**h`` of what it moved (the restart).
    The result is each reached memory's association mass, normalised so the largest is 1; a
    memory does not count its own activation coming back to it.
    """
    seeds = sorted(cands.values(), key=lambda c: (-c.score, c.memory_id))[:SEED_MEMORIES]
    mass = sum(c.score for c in seeds)
    out = Association()
    if mass <= 0:
        return out
    frontier = {c.memory_id: c.score / mass for c in seeds}
    assoc: dict[str, float] = defaultdict(float)
    expanded: set[str] = set()
    for hop in range(1, hops + 1):
        step = nb.step(list(frontier), now, HUB_FANOUT)
        members = step.members
        contrib: dict[str, dict[str, float]] = defaultdict(dict)  # key -> source memory -> activation
        for mid, a in frontier.items():
            edges = step.keys_of.get(mid, ())
            wsum = sum(w for _, w in edges)
            for k, w in edges:
                contrib[k][mid] = contrib[k].get(mid, 0.0) + a * w / wsum
        reached: dict[str, float] = defaultdict(float)
        best: dict[str, tuple[float, str]] = {}
        for k in sorted(contrib):
            mems = members.get(k)
            if not mems:
                continue
            src = contrib.get(k, {})
            total = sum(src.values())
            damp = (1.0 / len(mems)) ** KEY_SIZE_DAMPING
            wsum = sum(w for _, w in mems)
            for m2, w in mems:
                a = (total - src.get(m2, 0.0)) * damp  # not one's own activation coming back
                if a > 0:
                    share = a * w / wsum
                    reached[m2] += share
                    if share > best.get(m2, (0.0, ""))[0]:
                        best[m2] = (share, k)
        for mid, a in frontier.items():
            edges = step.related.get(mid, ())
            wsum = sum(w for _, w in edges)
            for m2, w in edges:
                reached[m2] += RELATED_SHARE * a * w / wsum
        keep = (1.0 - RESTART) ** hop
        for m2, a in reached.items():
            assoc[m2] += keep * a
            if m2 not in out.hop:
                out.hop[m2] = hop
                if m2 in best:
                    out.via[m2] = best[m2][1]
        expanded.update(frontier)
        nxt = sorted(((a, m) for m, a in reached.items() if m not in expanded), key=lambda t: (-t[0], t[1]))
        frontier = {m: a for a, m in nxt[:BEAM]}
        if not frontier:
            break
    top = max(assoc.values(), default=0.0)
    if top > 0:
        out.mass = {m: a / top for m, a in assoc.items()}
    return out


def recall_direct(graph: Parts, request: DirectRequest, *, reinforce: bool = True) -> DirectResult:
    query, top_k, ns = request.query, request.top_k, request.namespace
    hops = graph.settings.recall_hops if request.hops is None else request.hops
    use_rerank, explain = request.rerank, request.explain
    now = graph.now()

    phrases = query_phrases(query)
    pending = graph.embed_soon([query, *phrases])  # beside the name lookups (ONNX leaves the GIL)
    literal = named_keys(graph, query, ns)
    vecs = pending.result()
    qvec = vecs[0]
    routed = route_keys(graph, qvec, literal, ns, ROUTE_KEYS)
    _route_phrases(graph, routed, vecs[1:], ns)
    fan = _fans(graph, routed)
    # A named hub ("When did Melanie ...?" where Melanie said half of everything): BM25 would
    # rank her shortest memories first on the name alone. Search without the name, then
    # prefer her memories among the candidates (NAMED_BOOST in the fused score).
    hubs = _hub_names(graph, routed, fan)
    lex = graph.lexical.search(_without_names(query, list(hubs.values())), LEXICAL_POOL, ns)
    keyed, via, seen_links = _key_path(graph, routed, ns, now, fan)
    named = _named_members(graph, hubs, {m for m, _ in lex} | {m for m, _ in keyed})
    cands = _fuse(lex, keyed, named)
    for mid, keys in via.items():
        if mid in cands:  # the key path keeps only its best KEY_POOL memories
            cands[mid].via_keys = keys
    factors = graph.mirror.rank_factors(cands, now)
    for mid in list(cands):
        if mid not in factors:
            del cands[mid]
        else:
            cands[mid].score *= factors[mid]
    if hops and cands:
        found = associate(graph.neighbourhood, cands, hops, now)
        assoc = found.mass
        scale = ASSOC_WEIGHT * max(c.score for c in cands.values())
        new = [m for m in assoc if m not in cands]
        factors.update(graph.mirror.rank_factors(new, now))
        for mid, a in assoc.items():
            c = cands.get(mid)
            if c is None:
                if mid not in factors:
                    continue
                via_key = found.via.get(mid)
                c = cands[mid] = Candidate(mid, 0.0, hops=found.hop[mid], via_keys=[via_key] if via_key else [])
                a *= factors[mid]
            c.score += scale * a

    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.memory_id))
    for rank, c in enumerate(ranked, start=1):
        c.score = 1.0 / (RRF_K + rank)  # the fused order, on the RRF scale (not a probability)
    kind = "rrf_fused_rank"
    reranker = graph.reranker() if use_rerank else None
    rejected = False
    pool = ranked[: graph.settings.rerank_pool]
    text = _Texts(graph)
    if reranker is not None and pool:
        pool = [c for c in pool if c.memory_id in text.get([c.memory_id for c in pool])]
        logits = reranker.score(query, [text[c.memory_id] for c in pool])
        for c, logit in zip(pool, logits, strict=True):
            c.score = float(logit)
        pool.sort(key=lambda c: -c.score)
        ranked = pool + ranked[len(pool):]
        kind = "cross_encoder_logit"
        gate = graph.settings.rerank_min_score
        top = pool[0]
        if gate is not None and top.score < gate and script_of(query) == script_of(text[top.memory_id]):
            rejected = True
    picks = [] if rejected else ranked[:top_k]
    if not rejected and graph.settings.task_evidence_selection:
        picks = select_evidence(graph, query, ranked, picks, text.get, top_k)
    if reinforce and not rejected:
        _hebbian(graph, ranked[:top_k], ranked[: graph.settings.rerank_pool], seen_links)
    shown = text.get([c.memory_id for c in picks])
    rows = graph.mirror.visible(shown, now)
    hits = [
        DirectHit(
            memory_id=c.memory_id, content=shown[c.memory_id], namespace=ns,
            score=round(c.score, 6), score_kind=kind, hops=c.hops, via_keys=c.via_keys,
            validity=validity(rows[c.memory_id], graph.settings, now),
        )
        for c in picks
        if c.memory_id in shown and c.memory_id in rows
    ]
    info = None
    if explain:
        info = {"lexical": len(lex), "routed_keys": len(routed), "key_path": len(keyed),
                "candidates": len(cands), "reranked": reranker is not None, "namespace": ns}
    return DirectResult(results=hits, rejected=rejected, explain=info)


class _Texts:
    """Memory content read from the store on demand (only what is reranked or shown), cached per call."""

    def __init__(self, graph: Parts) -> None:
        self.graph = graph
        self.cache: dict[str, str] = {}

    def get(self, ids: list[str]) -> dict[str, str]:
        missing = [m for m in ids if m not in self.cache]
        if missing:
            self.cache.update(contents(self.graph, missing))
        return {m: self.cache[m] for m in ids if m in self.cache}

    def __getitem__(self, memory_id: str) -> str:
        return self.cache[memory_id]


def _hebbian(graph: Parts, used: list[Candidate], explored: list[Candidate],
             seen_links: list[tuple[str, str]]) -> None:
    """Strengthen routed-key links to what was returned; let explored-but-unused ones fade.

    "Explored" is the ranked pool the engine actually weighed (the rerank pool), not every
    link of a hub key, so one recall writes a bounded number of edges.
    """
    if not seen_links:
        return
    returned = {c.memory_id for c in used}
    weighed = {c.memory_id for c in explored}
    adjust = []
    for key_id, mid in seen_links:
        if mid in returned:
            adjust.append({"key_id": key_id, "memory_id": mid, "factor": 1.0, "delta": REINFORCE_STEP})
        elif mid in weighed:
            adjust.append({"key_id": key_id, "memory_id": mid, "factor": DECAY_FACTOR, "delta": 0.0})
    if not adjust:
        return
    with graph.store.write() as tx:
        if len(adjust) > ADJUST_SINGLES or graph.mirror.memory_total() < ADJUST_SCAN_MAX_MEMORIES:
            done = tx.run("link/adjust_many", rows=adjust, lo=LINK_MIN, hi=LINK_MAX)
        else:
            done = [r for a in adjust for r in tx.run("link/adjust", **a, lo=LINK_MIN, hi=LINK_MAX)]
        graph.mirror.set_weights(tx, done)


def recall_inject(graph: Parts, request: InjectRequest) -> InjectResult:
    """Memories for the prompt hook: only those above an absolute relevance floor."""
    prompt, ns = request.prompt, request.namespace
    limit = graph.settings.inject_max
    res = recall_direct(graph, DirectRequest(query=prompt, namespace=ns, top_k=limit * 3), reinforce=False)
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
