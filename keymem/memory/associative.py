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

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.index.bm25 import capped
from keymem.memory.calls import DirectRequest
from keymem.memory.evidence import Candidate, select_evidence
from keymem.memory.navigate import contents
from keymem.memory.query import Query
from keymem.memory.recall import LITERAL, named_keys, route_keys
from keymem.memory.validity import validity
from keymem.memory.views import DirectHit, DirectResult
from keymem.memory.write import LINK_INIT, LINK_MAX, LINK_MIN
from keymem.store import changes
from keymem.text.tokenize import literal_key, script_of

if TYPE_CHECKING:
    from keymem.index.neighbourhood import Edge, Hop, Neighbourhood
    from keymem.memory.parts import Parts

Relevance = Callable[[Iterable[str]], dict[str, float]]  # memory ids -> content cosine with the query

RRF_K = 60
LEXICAL_POOL = 100
KEY_POOL = 200
HUB_FANOUT = 50
REINFORCE_STEP = 0.05
DECAY_FACTOR = 0.98
# Association (see associate): values chosen by measurement on LoCoMo, docs/BENCHMARKS.md.
SEED_MEMORIES = 5  # direct candidates that seed the walk ...
SEED_FLOOR = 0.3  # ... when their score is at least this share of the best one's
ANCHOR_SEEDS = 3  # memories of a key the query names that seed the walk whatever their direct rank ...
OFF_ANCHOR = 0.15  # a seed not linked to a key the query names passes this share (when one is linked)
BEAM = 20  # memories expanded further at each later hop
RESTART = 0.5  # hop h keeps (1 - RESTART)**h of the activation it moves
KEY_SIZE_DAMPING = 1.0  # a key of n memories passes (1/(n-1))**this to each of its other memories
BUSY = 3  # a key with more other memories than this splits what it passes by relevance (associate)
WALK_FANOUT = 400  # keys with more visible memories than this are not walked
TEMPERATURE = 0.05  # softmax temperature over a busy key's members' content cosines
UNIFORM_MIX = 0.2  # share of a busy key's split that stays even
VARIANT_SHARE = 0.8  # a key's form ("Terraform Cloud" for "Terraform") passes this share of a link
RELATED_SHARE = 1.0  # weight of a RELATED_TO edge against a shared key
ASSOC_WEIGHT = 1.0  # an association of 1 adds the best direct score (see associate for the scale) ...
ASSOC_WEIGHT_LOOSE = 0.25  # ... and this share of it when no seed is linked to a key the query names
NAMED_BOOST = 0.3  # fused-score bonus for candidates linked to a hub key the query names
KEY_WEIGHT = 0.3  # key-path share of the fused score (lexical = 1)
PHRASE_KEYS = 5  # concept keys routed per phrase
ROUTE_KEYS = 10  # keys routed by the whole query
# Hebbian updates: one statement for all links (planned as a scan: ~6 ms at 10k memories, ~85 ms at
# 100k) while the store is small or the set large; else one primary-key statement per link (~1 ms).
ADJUST_SINGLES = 48
ADJUST_SCAN_MAX_MEMORIES = 20_000


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


def _route_phrases(graph: Parts, routed: dict[str, tuple[float, str]], vecs: Any, namespace: str) -> None:
    threshold = graph.thresholds.key_recall
    for vec in vecs:
        for key_id, cos in graph.vectors.search(vec, namespace, PHRASE_KEYS, min_score=threshold):
            held = routed.get(key_id, (0.0, ""))
            if held[1] != LITERAL and cos > held[0]:  # a literal match stays one (a phrase may equal the key)
                routed[key_id] = (min(cos, 1.0), "key_cosine")


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


def named_members(graph: Parts, keys: Collection[str], ids: set[str]) -> set[str]:
    """Which of ``ids`` are linked to one of ``keys`` (by the memory's own few links, not the keys')."""
    if not keys or not ids:
        return set()
    return {mid for mid in ids if any(k in keys for k, _ in graph.mirror.memory_keys(mid))}


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
    """What the walk found, per reached memory: its strength (the best seed is 1), the hop that
    first reached it, the key that carried most of it there (none when a RELATED_TO edge did),
    and the memory it came from (for the path shown to the agent, see :meth:`path`)."""

    mass: dict[str, float] = field(default_factory=dict)
    hop: dict[str, int] = field(default_factory=dict)
    via: dict[str, str] = field(default_factory=dict)
    parent: dict[str, str] = field(default_factory=dict)
    seeds: dict[str, float] = field(default_factory=dict)

    def path(self, memory_id: str) -> list[str]:
        """Key ids from a seed to ``memory_id`` (a RELATED_TO step adds none), first hop first."""
        keys: list[str] = []
        m, seen = memory_id, set()
        while m in self.parent and m not in seen and m not in self.seeds:
            seen.add(m)
            if m in self.via:
                keys.append(self.via[m])
            m = self.parent[m]
        return keys[::-1]


def specificity(members: int) -> float:
    """What a key of ``members`` visible memories passes from one of them to each other one."""
    return (1.0 / max(1, members - 1)) ** KEY_SIZE_DAMPING


def associate(nb: Neighbourhood, cands: dict[str, Candidate], hops: int, now: float,
              anchored: set[str] | None = None, *, relevance: Relevance | None = None,
              variants: Callable[[str], list[str]] | None = None) -> Association:
    """Spreading activation from the best direct hits, along shared keys, towards what the query means.

    Seeds: the best ``SEED_MEMORIES`` direct candidates, with activation in proportion to their
    score (the best is 1; seeding the routed keys instead, HippoRAG-style, measured worse on
    LoCoMo: docs/BENCHMARKS.md). When some seeds are ``anchored`` (linked to a key the query
    names specifically, ``anchor_keys``), its best ``ANCHOR_SEEDS`` memories seed the walk at full
    strength whatever their direct rank, and the others pass only ``OFF_ANCHOR`` of theirs: the
    association a question about "Dorian" needs starts at Dorian's memories, not at a turn that
    happens to share its words. Each hop, a memory passes ``a x (1 - RESTART) x link strength``
    through each of its keys (and the keys that are forms of them, ``variants``: "Terraform" /
    "Terraform Cloud", at ``VARIANT_SHARE``) to the key's other visible memories:

    * a specific key (at most ``BUSY`` other memories) splits it evenly: a key two memories share
      is a strong association;
    * a busy key (up to ``WALK_FANOUT`` memories: "Kubernetes", "Slack") splits it by what each
      memory *means* to the query (``relevance``: the cosine of its content, a softmax at
      ``TEMPERATURE``, ``UNIFORM_MIX`` of it even): the memory of a busy key the question is about
      stands out among forty that mention the key in passing (HippoRAG 2 weighs nodes by
      specificity; the walk here weighs them by meaning too);

    RELATED_TO edges pass ``RELATED_SHARE``. Shares add up within a hop (two shared keys
    associate more than one); a memory keeps the strongest hop's sum. Only the ``BEAM`` strongest
    new memories walk on.
    """
    seeds = sorted(cands.values(), key=lambda c: (-c.score, c.memory_id))[:SEED_MEMORIES]
    out = Association()
    if not seeds or seeds[0].score <= 0:
        return out
    top = seeds[0].score
    seeds = [c for c in seeds if c.score >= SEED_FLOOR * top]
    frontier = {c.memory_id: c.score / top for c in seeds}
    named = sorted((c for c in cands.values() if anchored and c.memory_id in anchored and c.score > 0),
                   key=lambda c: (-c.score, c.memory_id))[:ANCHOR_SEEDS]
    if named:  # the query names an entity: spread from its memories, however its words ranked them
        lead, mine = named[0].score, anchored or set()
        frontier = {m: a * OFF_ANCHOR for m, a in frontier.items() if m not in mine}
        frontier.update((c.memory_id, c.score / lead) for c in named)
    out.seeds = dict(frontier)
    expanded: set[str] = set(frontier)
    if relevance is not None:
        relevance = _remembered(relevance)
    if variants is not None:
        variants = _remembered_variants(variants)
    keep = 1.0 - RESTART
    for hop in range(1, hops + 1):
        step = nb.step(list(frontier), now, WALK_FANOUT)
        if variants is not None:
            _add_variants(nb, step, variants, now)
        split = _splits(step, relevance)
        reached: dict[str, float] = {}
        best: dict[str, _Best] = {}  # memory -> its strongest single share (the path shown)
        walkers: dict[str, list[_Walker]] = defaultdict(list)  # key -> what each frontier memory sends into it
        order = 0  # (frontier memory, its key or edge) in walk order: the first of equal shares wins
        for mid, a in frontier.items():
            for k, w in step.keys_of.get(mid, ()):
                order += 1
                mems = step.members.get(k)
                if not mems or (len(mems) == 1 and mems[0][0] == mid):
                    continue
                shares = split[k]
                sent = a * keep * _strength(w) / (1.0 - shares.get(mid, 0.0) if mid in shares else 1.0)
                walkers[k].append((sent, order, mid))
            for m2, w in step.related.get(mid, ()):
                order += 1
                share = a * keep * RELATED_SHARE * _strength(w)
                reached[m2] = reached.get(m2, 0.0) + share
                _keep_best(best, m2, (share, order, mid, ""))
        for k, sending in walkers.items():
            _pass_through(k, sending, step.members[k], split[k], reached, best)
        for m2, v in reached.items():
            if v > out.mass.get(m2, 0.0):
                out.mass[m2] = v
                out.hop.setdefault(m2, hop)
                if m2 in out.seeds:  # a direct hit is a path's root, never on another's path
                    continue
                _, _, parent, k = best[m2]
                out.parent[m2] = parent
                if k:
                    out.via[m2] = k
                else:
                    out.via.pop(m2, None)
        nxt = heapq.nsmallest(BEAM, ((-v, m) for m, v in reached.items() if m not in expanded))  # strongest first
        frontier = {m: -v for v, m in nxt}
        expanded.update(frontier)
        if not frontier:
            break
    return out


_Walker = tuple[float, int, str]  # (what a frontier memory sends into a key, walk order, its id)
_Best = tuple[float, int, str, str]  # (share, walk order, from memory, key or "")


def _keep_best(best: dict[str, _Best], memory_id: str, cand: _Best) -> None:
    """Keep the strongest single share reaching a memory; of equal ones, the first in walk order."""
    held = best.get(memory_id)
    if cand[0] > 0.0 and (held is None or cand[0] > held[0] or (cand[0] == held[0] and cand[1] < held[1])):
        best[memory_id] = cand


def _pass_through(key: str, walkers: list[_Walker], members: list[Edge], shares: dict[str, float],
                  reached: dict[str, float], best: dict[str, _Best]) -> None:
    """What one key passes to each of its members from the frontier memories walking it (``associate``).

    Member ``m`` gets ``share(m) x strength(m) x`` the sum of what the walkers send, its own part left
    out when it walks the key too: one pass over the members instead of one per walker.
    """
    if len(walkers) == 1:  # the usual case, as the walk would pass it
        sent, order, src = walkers[0]
        for m2, w2 in members:
            if m2 != src:
                share = sent * shares[m2] * min(1.0, w2 / LINK_INIT)  # _strength, inline: the hot loop
                reached[m2] = reached.get(m2, 0.0) + share
                held = best.get(m2)
                if share > 0.0 and (held is None or share > held[0] or (share == held[0] and order < held[1])):
                    best[m2] = (share, order, src, key)
        return
    total = sum(s for s, _, _ in walkers)
    strongest = sorted(walkers, key=lambda t: (-t[0], t[1]))
    walking = {mid for _, _, mid in walkers}
    for m2, w2 in members:
        if m2 in walking:
            others = [t for t in strongest if t[2] != m2]
            if not others:
                continue
            sent = sum(s for s, _, mid in walkers if mid != m2)
        else:
            others, sent = strongest, total
        share, strength = shares[m2], _strength(w2)
        reached[m2] = reached.get(m2, 0.0) + sent * share * strength
        top = others[0][0] * share * strength  # as one walker alone would pass it (the path's share)
        first = others[0][1]
        for s, o, _ in others[1:]:  # equal after rounding: the first in walk order, as the walk met them
            if s * share * strength != top:
                break
            first = min(first, o)
        src = next(t[2] for t in others if t[1] == first)
        _keep_best(best, m2, (top, first, src, key))


def _remembered(relevance: Relevance) -> Relevance:
    """``relevance`` asking each memory once per walk (later hops meet the same busy keys); a 0 (no
    vector yet) is asked again, as a later hop may embed it."""
    known: dict[str, float] = {}

    def ask(ids: Iterable[str]) -> dict[str, float]:
        ids = list(dict.fromkeys(ids))
        todo = [m for m in ids if m not in known]
        if todo:
            found = relevance(todo)
            known.update((m, v) for m, v in found.items() if v != 0.0)
            return {m: known.get(m, found.get(m, 0.0)) for m in ids}
        return {m: known[m] for m in ids}
    return ask


def _remembered_variants(variants: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``variants`` looked up once per key per walk (frontier memories share keys)."""
    known: dict[str, list[str]] = {}

    def ask(key_id: str) -> list[str]:
        if key_id not in known:
            known[key_id] = variants(key_id)
        return known[key_id]
    return ask


def _splits(step: Hop, relevance: Relevance | None) -> dict[str, dict[str, float]]:
    """Per walkable key, each member's share of what a memory passes through it (``associate``).

    Shares are over all members; a walker leaves its own share out (``associate`` divides by
    what is left), so each of the other ``n - 1`` members of a specific key gets ``1/(n-1)``.
    """
    busy = [m for k, mems in step.members.items() if len(mems) - 1 > BUSY for m, _ in mems]
    rel = relevance(busy) if relevance is not None and busy else {}
    out: dict[str, dict[str, float]] = {}
    for k, mems in step.members.items():
        n = len(mems)
        if n - 1 <= BUSY or not rel:  # evenly (a busy key without relevance too, as thinly as its size says)
            out[k] = dict.fromkeys((m for m, _ in mems), specificity(n) * (n - 1) / n if n > 1 else 1.0)
            continue
        r = np.array([rel.get(m, 0.0) for m, _ in mems], dtype=np.float64)
        soft = np.exp((r - r.max()) / TEMPERATURE)
        soft /= soft.sum()
        p = UNIFORM_MIX / n + (1.0 - UNIFORM_MIX) * soft
        out[k] = {m: float(x) for (m, _), x in zip(mems, p.tolist(), strict=True)}
    return out


def _add_variants(nb: Neighbourhood, step: Hop, variants: Callable[[str], list[str]], now: float) -> None:
    """Let each frontier memory walk the keys that are forms of its keys, as if it had them."""
    extra: dict[str, list[tuple[str, float]]] = {}
    for mid, edges in list(step.keys_of.items()):
        own = {k for k, _ in edges}
        for k, w in edges:
            for v in variants(k):
                if v not in own:
                    extra.setdefault(mid, []).append((v, w * VARIANT_SHARE))
    wanted = [v for vs in extra.values() for v, _ in vs if v not in step.members]
    if wanted:
        step.members.update(nb.key_members(list(dict.fromkeys(wanted)), now, WALK_FANOUT))
    for mid, vs in extra.items():
        walk = [(v, w) for v, w in vs if v in step.members]
        if walk:
            step.keys_of[mid] = sorted({**dict(step.keys_of[mid]), **dict(walk)}.items())


def _strength(weight: float) -> float:
    """A link's weight as a share: a new link passes everything, a weakened one less (capped at 1)."""
    return min(1.0, weight / LINK_INIT)


@dataclass
class Ranking:
    """One query's fused ranking, computed once and read by every entry point.

    ``recall`` (the tool), ``recall_direct`` and the prompt hook differ only in what they take
    from it (``memory/deliver.py``). ``ranked`` is in fused order with fused scores (association
    included); ``anchors`` are the keys the query names specifically (see :func:`anchor_keys`).
    """

    query: Query
    namespace: str
    now: float
    routed: dict[str, tuple[float, str]]
    fan: dict[str, int]
    anchors: list[str]
    anchored: set[str]  # memories linked to an anchor
    ranked: list[Candidate]
    association: Association
    lexical: list[tuple[str, float]]
    key_path: list[tuple[str, float]]
    seen_links: list[tuple[str, str]]
    texts: _Texts

    def best_lexical(self) -> float:
        """Capped BM25 of the best lexical hit (0..1)."""
        return capped(self.lexical[0][1]) if self.lexical else 0.0


def anchor_keys(graph: Parts, query: Query, routed: dict[str, tuple[float, str]], fan: dict[str, int]) -> list[str]:
    """Routed keys the query names specifically: a name or proper noun, or a key of several words,
    matched literally, that is not a hub. A common word matched literally ("blue", "work") is
    no anchor: prompts about nothing stored match such keys as often as real questions do;
    unless the query speaks of the user's own thing by that word ("my dog", "our garden")."""
    literal = [k for k, (_, kind) in routed.items() if kind == LITERAL and 0 < fan.get(k, 0) <= HUB_FANOUT]
    out = []
    for row in graph.mirror.keys(literal):
        mine = literal_key(row["text"]) in query.possessed  # "my dog": the user's own thing, whatever word
        if mine or row["key_type"] != "concept" or len(row["text"].split()) >= 2:
            out.append(row["id"])
    return sorted(out)


def rank(graph: Parts, query: Query, namespace: str, hops: int) -> Ranking:
    """Lexical + key path fused, then association over ``hops`` (see the module docstring).

    ``query`` was analysed once by the entry point (``Query.analyse``); its embedding computes on a
    worker thread while the name lookups run.
    """
    ns = namespace
    now = graph.now()
    literal = named_keys(graph, query, ns)
    routed = route_keys(graph, query.vector, literal, ns, ROUTE_KEYS)
    _route_phrases(graph, routed, query.phrase_vectors, ns)
    fan = _fans(graph, routed)
    # A named hub ("When did Melanie ...?" where Melanie said half of everything): BM25 would
    # rank her shortest memories first on the name alone. Search without the name, then
    # prefer her memories among the candidates (NAMED_BOOST in the fused score).
    hubs = _hub_names(graph, routed, fan)
    lex = graph.lexical.search_stems(query.lexical_stems(list(hubs.values())), LEXICAL_POOL, ns)
    keyed, via, seen_links = _key_path(graph, routed, ns, now, fan)
    named = named_members(graph, hubs, {m for m, _ in lex} | {m for m, _ in keyed})
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
            cands[mid].direct = cands[mid].score
    found = Association()
    anchors = anchor_keys(graph, query, routed, fan)
    anchored = {m for k in anchors for m in graph.mirror.key_links(k, now)[0]}
    if hops and cands:
        qvec = query.vector
        found = associate(graph.neighbourhood, cands, hops, now, anchored,
                          relevance=lambda ids: graph.memvecs.relevance(qvec, ids),
                          variants=graph.mirror.variant_keys)
        # association of 1 adds this much; less when the query names no entity (the walk then starts
        # from what its words matched, and broad keys connect unrelated memories)
        weight = ASSOC_WEIGHT if anchored & set(found.seeds) else ASSOC_WEIGHT_LOOSE
        scale = weight * max(c.score for c in cands.values())
        new = [m for m in found.mass if m not in cands]
        factors.update(graph.mirror.rank_factors(new, now))
        for mid, a in found.mass.items():
            c = cands.get(mid)
            if c is None:
                if mid not in factors:
                    continue
                c = cands[mid] = Candidate(mid, 0.0, hops=found.hop[mid])  # its path: Association.path, when shown
                a *= factors[mid]
            c.score += scale * a
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.memory_id))
    return Ranking(query=query, namespace=ns, now=now, routed=routed, fan=fan,
                   anchors=anchors, anchored=anchored, ranked=ranked, association=found, lexical=lex,
                   key_path=keyed, seen_links=seen_links, texts=_Texts(graph))


def recall_direct(graph: Parts, request: DirectRequest, *, reinforce: bool = True) -> DirectResult:
    query, top_k, ns = request.query, request.top_k, request.namespace
    hops = graph.settings.recall_hops if request.hops is None else request.hops
    use_rerank, explain = request.rerank, request.explain
    q = Query.analyse(graph, query)
    r = rank(graph, q, ns, hops)
    now, text = r.now, r.texts
    ranked = [Candidate(c.memory_id, c.score, c.hops, list(c.via_keys), c.lexical, c.direct) for c in r.ranked]
    for pos, c in enumerate(ranked, start=1):
        c.score = 1.0 / (RRF_K + pos)  # the fused order, on the RRF scale (not a probability)
    kind = "rrf_fused_rank"
    reranker = graph.reranker() if use_rerank else None
    rejected = False
    pool = ranked[: graph.settings.rerank_pool]
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
        if gate is not None and top.score < gate and q.script == script_of(text[top.memory_id]):
            rejected = True
    picks = [] if rejected else ranked[:top_k]
    if not rejected and graph.settings.task_evidence_selection:
        picks = select_evidence(graph, query, ranked, picks, text.get, top_k)
    for c in picks:
        if c.hops and not c.via_keys:
            c.via_keys = r.association.path(c.memory_id)
    if reinforce and not rejected:
        _hebbian(graph, ranked[:top_k], ranked[: graph.settings.rerank_pool], r.seen_links)
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
        info = {"lexical": len(r.lexical), "routed_keys": len(r.routed), "key_path": len(r.key_path),
                "candidates": len(r.ranked), "reranked": reranker is not None, "namespace": ns}
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
    done: Iterable[dict[str, Any]]
    with graph.store.write() as tx:
        if len(adjust) > ADJUST_SINGLES or graph.mirror.memory_total() < ADJUST_SCAN_MAX_MEMORIES:
            done = tx.run("link/adjust_many", rows=adjust, lo=LINK_MIN, hi=LINK_MAX)
        else:
            # each statement's rows are read once the scope committed (an engine may defer its writes)
            done = chain.from_iterable([tx.run("link/adjust", **a, lo=LINK_MIN, hi=LINK_MAX) for a in adjust])
        # weights are raised and lowered in the store (link/adjust*), so two fronts' updates of one link both count
        graph.mirror.set_weights(tx, done)
        changes.note(graph.store, tx, links=[mid for _, mid in seen_links if mid in returned or mid in weighed])  # other daemons' mirrors
