"""Task-conditioned evidence selection for comparison questions.

"Were A and B of the same nationality?" needs one piece of evidence about A's
nationality and one about B's. Associative recall tends to return several memories about
whichever entity dominates the query. Here the entities are stripped from the query to
get the aspect ("nationality"), and for each entity the candidate pool's best memory on
that aspect is put first. The associative pool and its scores stay as they were, and
the original picks remain for reinforcement (``KEYMEM_TASK_EVIDENCE_SELECTION``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from keymem.text.tokenize import normalize_text, tokenize

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

_CUES_EN = re.compile(
    r"\b(both|same|different|differ|compare|comparison|versus|vs\.?|older|younger|larger|smaller|bigger|"
    r"taller|shorter|earlier|later|first|more|less|which|who)\b", re.I,
)
_CUES_KO = re.compile(r"(같은|다른|누가|어느|더|둘 다|비교)")
_PAIR_EN = re.compile(r"(.+?)\s+(?:and|or|vs\.?|versus)\s+(.+)", re.I)
_PAIR_KO = re.compile(r"([가-힣A-Za-z0-9]+?)(?:와|과|랑|이랑|하고)\s+([가-힣A-Za-z0-9]+)")
_CAPS = re.compile(r"\b([A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*)")
_QUESTION_WORDS = {"were", "was", "is", "are", "do", "does", "did", "which", "who", "what", "when", "where",
                   "how", "both", "the", "a", "an", "in", "of", "and", "or", "whose"}


@dataclass
class Candidate:
    """A memory ranked by recall_direct: fused score, hops from a direct hit, the keys it came by."""

    memory_id: str
    score: float = 0.0
    hops: int = 0
    via_keys: list[str] = field(default_factory=list)
    lexical: float = 0.0
    direct: float = 0.0  # the fused score before association (recall_direct sets it)


def entities(query: str) -> list[str]:
    """The two things a comparison question compares, or [] when it is not one."""
    if not (_CUES_EN.search(query) or _CUES_KO.search(query)):
        return []
    found: list[str] = []
    m = _PAIR_KO.search(query)
    if m:
        found = [m.group(1), m.group(2)]
    else:
        for phrase in _CAPS.findall(query):
            words = [w for w in phrase.split() if w.lower().strip("?.,") not in _QUESTION_WORDS]
            if words:
                found.append(" ".join(words).strip("?.,'’"))
    uniq = list(dict.fromkeys(f for f in found if f))
    return uniq[:2] if len(uniq) >= 2 else []


def aspect(query: str, names: list[str]) -> str:
    text = query
    for n in names:
        text = re.sub(re.escape(n), " ", text, flags=re.I)
    cues = {"same", "different", "both", "compare", "which", "who", "more", "less", "and", "or"}
    return " ".join(t for t in tokenize(text) if t not in cues)


def select_evidence(graph: Parts, query: str, ranked: list[Candidate], picks: list[Candidate],
                    contents: Callable[[list[str]], dict[str, str]], top_k: int) -> list[Candidate]:
    names = entities(query)
    if not names:
        return picks
    topic = aspect(query, names)
    text = contents([c.memory_id for c in ranked])  # read only when the query compares entities
    pool = [c for c in ranked if c.memory_id in text]
    relevance = graph.lexical.score_docs(topic, [c.memory_id for c in pool]) if topic else {}
    chosen: list[Candidate] = []
    for name in names:
        needle = normalize_text(name)
        best, best_score = None, -1.0
        for rank, c in enumerate(pool):
            if c in chosen or needle not in normalize_text(text[c.memory_id]):
                continue
            score = relevance.get(c.memory_id, 0.0) + 1.0 / (1 + rank)
            if score > best_score:
                best, best_score = c, score
        if best is not None:
            chosen.append(best)
    if not chosen:
        return picks
    rest = [c for c in picks if c not in chosen]
    return (chosen + rest)[:top_k]
