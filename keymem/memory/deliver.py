"""What reaches the agent: the best memories of one ranking, fitted to a token budget.

``associative.rank`` ranks a query once; the ``recall`` tool and the prompt hook take from it
what their :class:`Recipe` says. Two sections, so that association is not drowned by the many
weak lexical matches a large store always has:

* *direct*: the best memories by the fused score before association (lexical + key path),
  while they keep at least ``direct_share`` of the best one's score; when the query names an
  entity, its other memories also need ``ABOUT_SHARE`` of the best one's content cosine (those
  about something else are left out of both sections: dev-v2 in process, a decoy delivered in
  23 of 33 decoy cases against 30; held-out LoCoMo's first recall 0.662 against 0.659; at 0.8,
  17 of 33 but LoCoMo -1.5 points);
* *associated*: memories the walk reached from those hits along specific shared keys
  (``Association.mass``: 1 is the best hit itself, one key two memories share passes half),
  strongest first, each with the path of keys that reached it ("via apple -> strawberry").

The hook injects only for a *confident* prompt: one that names a key specifically (a name, a
proper noun or a key of several words, matched literally; ``Ranking.anchors`` and hub names)
or routes a concept key by a high cosine whose memories are among the best hits. Prompts about
nothing stored ("What is 17 times 23?", "Why is the sky blue?") match common words and loose
keys as well as real questions do, so a single common word matched literally is not enough
there. Nor is a name of one capitalised word that the prompt writes in lower case where it
capitalises its sentences ("When should I sow hollyhock seeds?" while Hollyhock is a server): that
is the common word. A prompt that names nothing stored and says nothing of the user (no I, my, we,
"the user") is about the world, however close its words come to a key ("Write a haiku about
falling snow"). The tool is asked deliberately: any literal key or a high cosine routes it with
confidence; without one, and with a weak best lexical match, it says plainly that nothing
matched instead of presenting an unrelated memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar

from keymem.memory.associative import HUB_FANOUT, Ranking, named_members, rank
from keymem.memory.budget import fit_budget
from keymem.memory.calls import DIRECT_QUERY_CHARS, InjectRequest, RecallRequest
from keymem.memory.keys import key_views
from keymem.memory.query import Query
from keymem.memory.recall import COSINE, LITERAL, lexical_keys
from keymem.memory.validity import validity
from keymem.memory.views import (
    InjectResult,
    KeyRef,
    KeyView,
    MemoryPreview,
    RecalledMemory,
    RecallResult,
    Validity,
)

if TYPE_CHECKING:
    from keymem.memory.parts import Parts
    from keymem.settings import Settings

STRONG_COSINE = 0.8  # a concept key routed this close makes a query confident (with its memories on top)
WEAK_LEXICAL = 0.85  # capped BM25 below this, with no confident key: the tool says nothing matched
ABOUT_SHARE = 0.6  # with a named entity, its other memories need this share of the best one's content cosine
UNANCHORED_SHARE = 0.8  # with a named entity, a direct memory not linked to it needs this share of the best
CHARS_PER_TOKEN = 3.4  # WordPiece on memory text (measured on LoCoMo turns; ids count apart)
ID_TOKENS = 14  # a memory id and its brackets
CORROBORATE_POOL = 50  # lexical hits a general question's other words are checked against
ASSOCIATED = "association"  # a key view's score kind: what the walk carried through it
ONWARD_KEYS = 2  # recall's key list: keys through which association reached what was not delivered
ROUTED_FIRST = 1  # ... listed after this many of the keys the query routes to


@dataclass(frozen=True)
class Recipe:
    """How much of a ranking an entry point delivers."""

    budget_tokens: int = 500
    max_direct: int = 5
    max_associated: int = 4
    direct_share: float = 0.3  # a direct memory's score relative to the best direct score
    min_association: float = 0.1  # association strength a memory needs to be delivered
    need_confidence: bool = False  # deliver nothing for a query that is not confident
    pooled_slots: bool = False  # direct slots left empty go to associated memories (the hook's few slots)


TOOL = Recipe()
HOOK = Recipe(budget_tokens=350, max_direct=2, max_associated=2, direct_share=0.6, min_association=0.2,
              need_confidence=True, pooled_slots=True)


def hook_recipe(settings: Settings) -> Recipe:
    """The hook's recipe with the settings' limits (most memories injected, association floor)."""
    limit = settings.inject_max
    return replace(HOOK, max_direct=min(HOOK.max_direct, limit), max_associated=max(0, limit - HOOK.max_direct),
                   min_association=settings.inject_min_association)


def ranking(graph: Parts, text: str, namespace: str, *, own: str | None = None) -> Ranking:
    """The one ranking the tool and the hook deliver from: ``text`` analysed once (``Query``), ranked
    with the settings' hops. ``own``: the caller's query when ``text`` has a context appended."""
    return rank(graph, Query.analyse(graph, text, own=own), namespace, graph.settings.recall_hops)


@dataclass
class Delivered:
    memory_id: str
    content: str
    score: float
    hops: int  # 0: a direct hit; n: reached by n hops of association
    path: list[str]  # key texts from a direct hit to this memory (none for a direct hit)
    validity: Validity


@dataclass
class Delivery:
    memories: list[Delivered]
    confident: bool
    weak: bool  # nothing confident and the best lexical match is weak: say so, show nothing
    score_kind: str = "fused_score"  # of the direct memories' scores
    omitted: int = 0  # memories the caller has (seen) that would have been delivered


def corroborated(graph: Parts, r: Ranking) -> bool:
    """Whether a general question ("How many calories are in a stick of celery?") is about what its
    named keys hold: some memory linked to them also matches the question's other words. A name
    alone is a word that may be used in another sense (the task queue "Celery")."""
    if not r.query.general:
        return True
    literal = [row for row in graph.mirror.keys(k for k, (_, kind) in r.routed.items() if kind == LITERAL)
               if row["key_type"] != "concept"]  # names the store is mostly about (hubs) too
    named = [k for k in dict.fromkeys([*r.anchors, *(row["id"] for row in literal)]) if r.fan.get(k, 0) > 0]
    if not named:
        return True  # nothing named: the routing and the lexical gates below judge it
    texts = [row["text"] for row in graph.mirror.keys(named)]
    stems = r.query.lexical_stems(texts)
    if stems == r.query.stems and texts:  # no name could be taken out: the words are the name
        return False
    hits = {m for m, _ in graph.lexical.search_stems(stems, CORROBORATE_POOL, r.namespace)}
    linked = (hits & r.anchored) | named_members(graph, set(named), hits - r.anchored)
    return bool(graph.mirror.visible(list(linked), r.now))


def confident(graph: Parts, r: Ranking) -> bool:
    """Whether the query names something stored (see the module docstring)."""
    if not corroborated(graph, r):
        return False
    literal = [k for k, (_, kind) in r.routed.items() if kind == LITERAL]
    rows = graph.mirror.keys(dict.fromkeys([*r.anchors, *literal]))
    named = {row["id"] for row in rows if not r.query.in_lower_case(row["text"])}  # "sow hollyhock seeds"
    if named & set(r.anchors):
        return True
    if any(row["key_type"] != "concept" and row["id"] in named for row in rows if row["id"] in literal):
        return True  # a name the store is mostly about (a hub) still names it
    if not r.query.first_person:
        return False  # names nothing stored and says nothing of the user: about the world ("Who painted the Mona Lisa?")
    strong = {k for k, (s, kind) in r.routed.items() if kind == COSINE and s >= STRONG_COSINE
              and 0 < r.fan.get(k, 0) <= HUB_FANOUT}
    if not strong:
        return False
    top = [c.memory_id for c in r.ranked[:3]]
    return any(k in strong for m in top for k, _ in graph.mirror.memory_keys(m))


def routes_with_confidence(r: Ranking) -> bool:
    """Some key routes literally (any key the query names, common words included) or by a high cosine."""
    return any(kind == LITERAL or (kind == COSINE and s >= STRONG_COSINE) for s, kind in r.routed.values())


T = TypeVar("T")
_memory_id = attrgetter("memory_id")


def unseen(items: list[T], seen: frozenset[str], limit: int, ident: Callable[[T], str]) -> tuple[list[T], set[str]]:
    """The first ``limit`` items not in ``seen``, and the seen ones passed over for them: a memory the
    caller already has takes neither a slot nor budget, and the next best comes in its place."""
    out: list[T] = []
    skipped: set[str] = set()
    for item in items:
        if len(out) == limit:
            break
        if ident(item) in seen:
            skipped.add(ident(item))
        else:
            out.append(item)
    return out, skipped


def deliver(graph: Parts, r: Ranking, recipe: Recipe, seen: frozenset[str] = frozenset()) -> Delivery:
    """The recipe's share of ``r``; memories in ``seen`` (the caller has them) are not delivered again.
    Floors stay relative to the whole ranking: what the caller has still says what a good match is."""
    if recipe.need_confidence:
        sure = confident(graph, r)
        if not sure:
            return Delivery([], False, False)
    else:
        sure = routes_with_confidence(r) and corroborated(graph, r)
        if not sure and (r.best_lexical() < WEAK_LEXICAL or r.query.general):
            return Delivery([], False, True)
    direct = sorted((c for c in r.ranked if c.direct > 0), key=lambda c: (-c.direct, c.memory_id))
    picked: list[tuple[str, float, int]] = []  # (memory id, score, hops)
    omitted: set[str] = set()
    reranked = False
    off_topic: set[str] = set()
    reranker = graph.reranker()
    if direct and reranker is not None:  # the cross-encoder orders the direct pool
        pool = unseen(direct, seen, graph.settings.rerank_pool, _memory_id)[0]
        omitted = unseen(direct, seen, recipe.max_direct, _memory_id)[1]
        text = r.texts.get([c.memory_id for c in pool])
        pool = [c for c in pool if c.memory_id in text]
        if pool:
            logits = reranker.score(r.query.text, [text[c.memory_id] for c in pool])
            order = sorted(zip(logits.tolist(), pool, strict=True), key=lambda t: (-t[0], t[1].memory_id))
            picked = [(c.memory_id, float(logit), 0) for logit, c in order[: recipe.max_direct]]
            reranked = True
    if direct and not reranked:
        floor = recipe.direct_share * direct[0].direct
        if r.anchored & {c.memory_id for c in direct[: recipe.max_direct]}:
            # the query names something: other memories must match about as well as the best to be shown
            unnamed = max(floor, UNANCHORED_SHARE * direct[0].direct)
            direct = [c for c in direct if c.memory_id in r.anchored or c.direct >= unnamed]
            # and be about what it asks: the entity's other memories (a decoy: "Merganser VPN's
            # certificate" against "Merganser VPN's office") are not delivered, not even by association
            about = graph.memvecs.relevance(r.query.vector, [c.memory_id for c in direct[: 2 * recipe.max_direct]])
            top = about.get(direct[0].memory_id, 0.0)
            off_topic = {c.memory_id for c in direct[1:] if c.memory_id in r.anchored and c.memory_id in about
                         and about[c.memory_id] < ABOUT_SHARE * top}
            direct = [c for c in direct if c.memory_id not in off_topic]
        fresh, omitted = unseen([c for c in direct if c.direct >= floor], seen, recipe.max_direct, _memory_id)
        picked = [(c.memory_id, c.direct, 0) for c in fresh]
    shown = {m for m, _, _ in picked}
    found = r.association
    assoc = sorted(((a, m) for m, a in found.mass.items()
                    if m not in shown and m not in off_topic and a >= recipe.min_association),
                   key=lambda t: (-t[0], t[1]))
    room = recipe.max_associated + (max(0, recipe.max_direct - len(picked)) if recipe.pooled_slots else 0)
    fresh_assoc, skipped = unseen(assoc, seen, room, lambda t: t[1])
    omitted |= skipped
    picked += [(m, a, found.hop.get(m, 1)) for a, m in fresh_assoc]
    texts = r.texts.get([m for m, _, _ in picked])
    rows = graph.mirror.visible(texts, r.now)
    paths = {m: found.path(m) for m, _, hops in picked if hops}
    key_text = {k["id"]: k["text"] for k in graph.mirror.keys({k for p in paths.values() for k in p})}
    out: list[Delivered] = []
    spent = 0.0
    for mid, score, hops in picked:
        if mid not in texts or mid not in rows:
            continue
        content = " ".join(texts[mid].split())
        path = [key_text.get(k, k) for k in paths.get(mid, [])]
        cost = ID_TOKENS + (len(content) + sum(len(p) + 4 for p in path)) / CHARS_PER_TOKEN
        if out and spent + cost > recipe.budget_tokens:
            continue  # a shorter one further down may still fit
        spent += cost
        out.append(Delivered(memory_id=mid, content=content, score=round(score, 4), hops=hops, path=path,
                             validity=validity(rows[mid], graph.settings, r.now)))
    return Delivery(out, sure, False, "cross_encoder_logit" if reranked else "fused_score", len(omitted))


def onward_keys(r: Ranking, delivered: set[str], routed: set[str]) -> dict[str, tuple[float, str]]:
    """Up to ``ONWARD_KEYS`` keys, not routed by the query, through which the walk carried the most
    to memories that were not delivered: where an agent reads next to follow the association."""
    found = r.association
    carried: dict[str, float] = {}
    for m, a in found.mass.items():
        k = found.via.get(m)
        if m not in delivered and k and k not in routed:
            carried[k] = carried.get(k, 0.0) + a
    best = sorted(carried.items(), key=lambda t: (-round(t[1], 9), t[0]))[:ONWARD_KEYS]  # rounding ties by id
    return {k: (round(a, 4), ASSOCIATED) for k, a in best}


def inject_text(memories: list[Delivered]) -> str:
    """The hook's context: one line per memory, associated ones with their path."""
    lines = ["Possibly relevant memories from keymem (verify before relying on aging or stale ones):"]
    for d in memories:
        note = []
        if d.path:
            note.append("via " + " -> ".join(d.path))
        if d.validity.status != "fresh":
            note.append(d.validity.status)
        lines.append(f"- [{d.memory_id}] {d.content}" + (f" ({'; '.join(note)})" if note else ""))
    return "\n".join(lines)


def recall(graph: Parts, request: RecallRequest) -> RecallResult:
    """Keys the query routes to and the best memories of the fused ranking with association.

    One ranking (``associative.rank``, the walk included) gives both: the keys by routing
    score, and the memories ``deliver`` fits to the budget, each associated one with the path
    of keys that reached it. Memories in ``request.seen`` (the caller has them) are not delivered
    again; ``omitted`` counts them. Passive: no access count, depth, edge, alias or freshness changes.
    """
    query, top_k, ns, context, explain = (request.query, request.top_k, request.namespace, request.context,
                                          request.explain)
    text = f"{query}\n{context}"[:DIRECT_QUERY_CHARS] if context else query
    r = ranking(graph, text, ns, own=query)
    now = r.now
    found = deliver(graph, r, TOOL if request.budget is None else replace(TOOL, budget_tokens=request.budget),
                    request.seen)
    scored = dict(r.routed) or lexical_keys(graph, r.query, ns)
    onward = onward_keys(r, {d.memory_id for d in found.memories}, set(scored))
    # Only the best-scored keys get a view (counts, aliases, specificity): twice top_k, plus any
    # tied with the last of them.
    ranked_scores = sorted((s for s, _ in scored.values()), reverse=True)
    cutoff = ranked_scores[min(len(ranked_scores), 2 * top_k) - 1] if ranked_scores else 0.0
    shortlist = [k for k, (s, _) in scored.items() if s >= cutoff]
    rows = graph.mirror.keys([*shortlist, *onward])
    views = [v for v in key_views(graph, rows, ns, now, scores={**scored, **onward}) if v.memory_count > 0]
    views.sort(key=lambda v: (-(v.score or 0.0), -v.specificity, v.key))
    if onward:  # after the best routed key, the keys association leads on through
        ahead = [v for v in views if v.key_id in onward]
        rest = [v for v in views if v.key_id not in onward]
        views = rest[:ROUTED_FIRST] + sorted(ahead, key=lambda v: -onward[v.key_id][0]) + rest[ROUTED_FIRST:]
    views = views[:top_k]
    if views:  # a read through one of them teaches the query as an alias (autokey)
        graph.autokey.note_route(query, r.query.vector, [v.key_id for v in views])
    memories = [RecalledMemory(memory_id=d.memory_id, content=d.content, hops=d.hops, via=d.path,
                               validity=d.validity) for d in found.memories]
    memory = _preview(graph, memories[0], views) if memories else None
    if memory is not None and found.memories[0].hops == 0:
        memory.score, memory.score_kind = found.memories[0].score, found.score_kind
    note = None
    if found.weak and views:
        note = ("No stored memory matches this query with confidence: no key is named and the keys below "
                "match only loosely. read_key one if it looks right, or try other words.")
    elif found.weak:  # the note must not point at keys that are not shown
        note = ("No stored memory matches this query with confidence, and no key comes close to it. Try other "
                "words, or browse_keys for the key vocabulary.")
    result = RecallResult(keys=views, memory=memory, memories=memories, confident=found.confident, note=note,
                          omitted=found.omitted)
    if explain:
        result.namespaces = {ns: len(views)}
    return fit_budget(result, TOOL.budget_tokens if request.budget is None else request.budget)


def _preview(graph: Parts, first: RecalledMemory, views: list[KeyView]) -> MemoryPreview:
    """The first delivered memory in the preview shape: under the first returned key linking it."""
    weight = dict(graph.mirror.memory_keys(first.memory_id))
    linked = [KeyRef(key_id=k["id"], key=k["text"])
              for k in sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))]
    # under the first returned key that links it; else (an associated memory) its strongest key
    matched_ref = next((KeyRef(key_id=v.key_id, key=v.key) for v in views if v.key_id in weight),
                       linked[0] if linked else KeyRef(key_id="", key=""))
    connected = [k for k in linked if k.key_id != matched_ref.key_id]
    return MemoryPreview(memory_id=first.memory_id, content=first.content, matched_key=matched_ref,
                         validity=first.validity, connected_keys=connected)


def recall_inject(graph: Parts, request: InjectRequest) -> InjectResult:
    """Memories for the prompt hook: nothing unless the prompt names something stored; then the
    best direct hits and the strongest associations, each with its path."""
    r = ranking(graph, request.prompt, request.namespace)
    chosen = deliver(graph, r, hook_recipe(graph.settings)).memories[:graph.settings.inject_max]
    if not chosen:
        return InjectResult(memory_ids=[], text="")
    return InjectResult(memory_ids=[d.memory_id for d in chosen], text=inject_text(chosen))
