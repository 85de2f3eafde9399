"""One query, analysed once where a recall enters, and read by every stage of the ranking.

The ``recall`` tool, the prompt hook and ``recall_direct`` each build a :class:`Query` from the
text they rank (``Query.analyse``) and hand it to ``associative.rank``; routing, BM25, the
hub-name filter, anchors, the reranker and autokey read its fields instead of analysing the text
again. A recall used to tokenize its query in four places (the phrase suggester, the literal-name
lookup, the hub-name filter, BM25) and run the word patterns on it in others.

Fields, all computed by ``analyse`` (the embedding on a worker thread meanwhile):

* ``tokens`` / ``stems``: BM25 terms (``text.tokenize``) and their index forms (``text.stem``), what
  ``LexicalIndex.search_stems`` takes;
* ``literal``: word n-grams for literal key and name matching (``text.tokenize.literal_tokens``),
  not a lone stopword;
* ``short_forms``: acronyms and numeronyms ("QBR", "k8s"), matched to the keys they abbreviate;
* ``capitals``: capitalised words, possessive stripped (a first name finds "Dorian Achebe"), not
  stopwords (a sentence's "The" or "That" names nothing);
* ``phrases``: key-like concept phrases (``text.suggest``), embedded beside the text to route
  concept keys by meaning; none for a long prompt;
* ``possessive``: the query speaks of the user's own things ("my dog"); ``possessed``: the
  literal forms of what follows "my" / "our";
* ``general``: a wh-question that says nothing of I, my, we or you ("How many calories are in a
  stick of celery?"): a stored key it names may be a word used in another sense;
* ``embedding``: the vectors of the text and its phrases (a future: ONNX leaves the GIL, so the
  name lookups run while it computes).

Analyses only some paths need are made on first use and kept: the BM25 stems of the query
without the hub names it mentions (``lexical_stems``), the stems of the caller's own query when a
context was appended (``own_stems``), its script (``script``), whether it speaks of the user
(``first_person``) and a word it writes in lower case where its writer capitalises
(``in_lower_case``): what the prompt hook asks before it speaks (``deliver.confident``).
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from bm25s.stopwords import STOPWORDS_EN_PLUS

from keymem.text.stem import stem
from keymem.text.tokenize import Script, literal_tokens, script_of, tokenize

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

PHRASES = 4  # query phrases embedded for key routing
PHRASE_QUERY_MAX_CHARS = 500  # longer queries (prompts) route by the whole text only
CAPITALISED = re.compile(r"(?<![\w'’])[A-Z][\w'’]*(?:[.-][\w'’]+)*")
SHORT_FORM = re.compile(r"(?<![\w'’])(?:[A-Z]{2,6}|[a-z]\d{1,2}[a-z])(?![\w'’])")
POSSESSIVE = re.compile(r"\b(my|our|mine|ours)\b", re.I)
POSSESSED = re.compile(r"\b(?:my|our)\s+([\w'’-]+(?:\s+[\w'’-]+){0,2})", re.I)
PERSONAL = re.compile(r"\b(?:I|I'm|I've|I'd|I'll)\b|\b(?:me|my|mine|we|us|our|ours|you|your|yours)\b", re.I)
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|we'd|we'll|us|our|ours|"
                          r"ourselves|let's)\b|\bthe user\b", re.I)  # "you" is the assistant
ASKED_OF_THE_ASSISTANT = re.compile(r"\b(?:tell|give|show|teach)\s+me\b", re.I)  # "Tell me a joke": no thing of the user's
WH_QUESTION = re.compile(r"^\s*(?:what|why|how|when|where|who|whom|whose|which)\b", re.I)


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


def stems_of(tokens: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The index forms of BM25 terms, each once (what a lexical search weighs)."""
    return frozenset(map(stem, tokens))


@dataclass(frozen=True, eq=False)
class Query:
    """A query's text and everything the ranking reads of it (see the module docstring)."""

    text: str
    tokens: tuple[str, ...]
    stems: frozenset[str]
    literal: frozenset[str]
    capitals: tuple[str, ...]
    short_forms: tuple[str, ...]
    phrases: tuple[str, ...]
    possessive: bool
    possessed: frozenset[str]  # literal forms of the 1-3 words after "my" / "our" ("my mum's flat")
    general: bool  # a wh-question with no I, my, we, you: about the world, unless a stored fact says otherwise
    embedding: Future[np.ndarray]
    own_text: str  # the caller's query: ``text`` without a context the recall tool appended
    _lexical: dict[tuple[str, ...], frozenset[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def analyse(cls, graph: Parts, text: str, *, own: str | None = None) -> Query:
        """Analyse ``text`` once; its embedding (with its phrases') starts on a worker thread."""
        phrases = tuple(query_phrases(text))
        embedding = graph.embed_soon([text, *phrases])
        tokens = tuple(tokenize(text))
        capitals = tuple(c for w in CAPITALISED.findall(text)
                         if (c := w.removesuffix("'s").removesuffix("’s")).lower() not in STOPWORDS_EN_PLUS)
        return cls(text=text, tokens=tokens, stems=stems_of(tokens), literal=frozenset(t for t in literal_tokens(text) if t not in STOPWORDS_EN_PLUS),
                   capitals=capitals, short_forms=tuple(dict.fromkeys(SHORT_FORM.findall(text))), phrases=phrases, possessive=bool(POSSESSIVE.search(text)),
                   possessed=frozenset(t for m in POSSESSED.finditer(text) for t in literal_tokens(m.group(1))),
                   general=bool(WH_QUESTION.match(text)) and not PERSONAL.search(text),
                   embedding=embedding, own_text=text if own is None else own)

    @property
    def vector(self) -> np.ndarray:
        """The embedding of the whole text (waits for the worker)."""
        return self.embedding.result()[0]

    @property
    def phrase_vectors(self) -> np.ndarray:
        return self.embedding.result()[1:]

    def lexical_stems(self, names: list[str]) -> frozenset[str]:
        """BM25 stems of the query without ``names`` (and their possessive), if anything searchable is left.

        A named hub ("When did Melanie ...?" where Melanie said half of everything) would make BM25
        rank her shortest memories first on the name alone; the ranking searches without it.
        """
        if not names:
            return self.stems
        key = tuple(names)
        found = self._lexical.get(key)
        if found is None:
            out = self.text
            for name in names:
                out = re.sub(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", " ", out, flags=re.I)
            rest = tokenize(out) if out != self.text else []
            found = self._lexical[key] = stems_of(rest) if rest else self.stems
        return found

    @cached_property
    def own_stems(self) -> frozenset[str]:
        """BM25 stems of the caller's own query (the text without an appended context)."""
        return self.stems if self.own_text == self.text else stems_of(tokenize(self.own_text))

    @cached_property
    def script(self) -> Script:
        """The text's dominant writing system (the reranker's not-found gate compares it)."""
        return script_of(self.text)

    @cached_property
    def first_person(self) -> bool:
        """The query speaks of the user (I, me, my, we, us, our, "the user"): it may be about their own
        things; "you" is the assistant it asks, and "tell me", "give me" ask it for something."""
        return bool(FIRST_PERSON.search(ASKED_OF_THE_ASSISTANT.sub(" ", self.text)))

    def in_lower_case(self, name: str) -> bool:
        """Whether a name of one capitalised word ("Hollyhock", "Dune") is written here only in lower
        case ("sow hollyhock seeds", "sand dunes") by a writer who capitalises (the text's first letter
        is upper case): the common word, not the name. False for a name written some other way or not
        found as written (an alias, an abbreviation), and for brand spellings ("MySQL", "AWS")."""
        if not (name.isalpha() and name[:1].isupper() and name[1:].islower()):
            return False
        first = next((c for c in self.text if c.isalpha()), "")
        if not first.isupper():
            return False  # "i'd like pemberly to ...": case says nothing
        found = re.findall(rf"(?<![\w'’]){re.escape(name)}(?:e?s)?(?:['’]s)?(?!\w)", self.text, flags=re.I)
        return bool(found) and all(w == w.lower() for w in found)
