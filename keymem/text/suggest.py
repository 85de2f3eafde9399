"""Key suggestion for callers without an agent (benchmarks, imports, bulk loads).

keymem's intended use is **agent-chosen keys**: the agent that calls ``remember`` knows why a
fact matters and picks 3-6 diverse keys for it. ``suggest_keys`` is the fallback when no agent
is in the loop (benchmark loaders, importing an archive): it proposes keys from the text alone,
deterministically, with maintained extractors rather than hand-made word lists:

* names and proper nouns (exact-match key types):

  - the ``speaker``, when given, as a ``name`` key;
  - Latin script: capitalised word sequences that do not start a sentence
    ("... moved to New York") as ``proper_noun``; a sentence-initial capitalised sequence
    counts only when the same sequence also occurs capitalised mid-sentence;
  - Korean: Kiwi ``NNP`` morphemes (consecutive ones joined) as ``proper_noun``;

* content keyphrases as ``concept`` keys (matched by embedding similarity):

  - Latin script: YAKE! (``yake``) keyphrases of up to two words;
  - Korean: Kiwi common nouns (``NNG``, two syllables or more), most frequent first.

The result is at most ``max_keys`` ``(key, key_type)`` pairs, names first, without
duplicates (case-insensitive). The same input always gives the same output.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

from keymem.text.tokenize import normalize_text

__all__ = ["suggest_keys"]

_HANGUL_RE = re.compile("[\uac00-\ud7af]")
# A capitalised word: an upper-case letter then letters/digits/apostrophes/hyphens.
_WORD_RE = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][\w'’-]*")
_SENTENCE_END = re.compile(r"[.!?…:;\"“”()\[\]]\s*$")
# Connectors allowed inside a multi-word proper noun ("Bank of America", "Lord of the Rings").
_INNER = {"of", "the", "de", "la", "von", "van", "del", "and", "&"}
_YAKE_TOP_FACTOR = 3


@functools.lru_cache(maxsize=1)
def _yake() -> Any:
    import yake

    return yake.KeywordExtractor(lan="en", n=2, dedupLim=0.7, top=24, features=None)


@functools.lru_cache(maxsize=1)
def _yake_stopwords() -> frozenset[str]:
    return frozenset(w.lower() for w in _yake().stopword_set)


@functools.lru_cache(maxsize=1)
def _kiwi() -> Any:
    from keymem.text.korean import get_kiwi

    return get_kiwi()


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and not word.isdigit()


def _latin_proper_nouns(text: str) -> list[str]:
    """Capitalised word runs, in text order; sentence-initial ones only if also seen mid-sentence."""
    stop = _yake_stopwords()
    runs: list[tuple[str, bool]] = []  # (phrase, at sentence start)
    current: list[str] = []
    current_start = False
    sentence_start = True
    pos = 0

    def close() -> None:
        nonlocal current
        while current and current[-1].lower() in _INNER:
            current.pop()
        if current:
            runs.append((" ".join(current), current_start))
        current = []

    for m in _WORD_RE.finditer(text):
        gap = text[pos : m.start()]
        pos = m.end()
        if _SENTENCE_END.search(gap) or (m.start() == 0):
            close()
            sentence_start = True
        elif re.search(r"[,/]", gap):
            close()
        word = m.group(0).rstrip("'’-")
        if word.endswith(("'s", "’s")):
            word = word[:-2]
            possessive = True
        else:
            possessive = False
        if _capitalised(word) and word != "I" and not (word.isupper() and len(word) == 1):
            if not current:
                current_start = sentence_start
            current.append(word)
            if possessive:
                close()
        elif current and word.lower() in _INNER and not possessive:
            current.append(word)
        else:
            close()
        sentence_start = False
    close()
    mid = {normalize_text(p) for p, start in runs if not start}
    out: list[str] = []
    for phrase, start in runs:
        words = phrase.split()
        if start and normalize_text(phrase) not in mid:
            # The first word is capitalised because it starts the sentence: "Hey Mel!",
            # "Yesterday Caroline went ..." -> "Mel", "Caroline". A lone sentence-initial word
            # counts only when it also appears capitalised mid-sentence.
            words = words[1:]
            while words and words[0].lower() in _INNER:
                words = words[1:]
            if not words:
                continue
            phrase = " ".join(words)
        if len(words) == 1 and words[0].lower() in stop:
            continue
        out.append(phrase)
    return out


def _latin_concepts(text: str, exclude: set[str]) -> list[str]:
    stop = _yake_stopwords()
    out: list[str] = []
    try:
        found = _yake().extract_keywords(text)
    except Exception:  # yake can fail on degenerate input (e.g. only punctuation)
        return out
    # Best (lowest) score first; ties by phrase so that the order is deterministic.
    for phrase, _score in sorted(found, key=lambda kv: (round(float(kv[1]), 12), kv[0].lower())):
        words = phrase.split()
        if any(w.lower() in stop for w in words):
            continue
        norm = normalize_text(phrase)
        if norm in exclude or any(normalize_text(w) in exclude for w in words):
            continue
        if len(norm) < 4 or any(ch.isdigit() for ch in norm):
            continue
        out.append(phrase.lower() if not phrase.isupper() else phrase)
    return out


def _korean(text: str) -> tuple[list[str], list[str]]:
    """(proper nouns, common nouns by frequency) from Kiwi."""
    tokens = _kiwi().tokenize(text)
    names: list[str] = []
    nouns: Counter[str] = Counter()
    first: dict[str, int] = {}
    run: list[Any] = []

    def close() -> None:
        if run:
            names.append("".join(t.form for t in run))
            run.clear()

    for i, t in enumerate(tokens):
        tag = str(t.tag)
        if tag == "NNP":
            if run and run[-1].end != t.start:
                close()
            run.append(t)
            continue
        close()
        if tag == "NNG" and len(t.form) >= 2:
            nouns[t.form] += 1
            first.setdefault(t.form, i)
        elif tag == "SL" and len(t.form) >= 3:  # a Latin word inside Korean text
            if t.form[:1].isupper():
                names.append(t.form)
            else:
                nouns[t.form] += 1
                first.setdefault(t.form, i)
    close()
    names = list(dict.fromkeys(names))
    common = sorted(nouns, key=lambda w: (-nouns[w], first.get(w, 0), w))
    return names, common


def suggest_keys(text: str, *, max_keys: int = 6, speaker: str | None = None) -> list[tuple[str, str]]:
    """Suggested ``(key, key_type)`` pairs for ``text``; names first, then concepts.

    ``key_type`` is ``name`` (the speaker), ``proper_noun`` (capitalised sequences, Kiwi NNP)
    or ``concept`` (keyphrases). Deterministic; at most ``max_keys`` pairs.
    """
    if max_keys <= 0:
        return []
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(key: str, kind: str) -> None:
        key = key.strip(" \t\n'’\"-")
        norm = normalize_text(key)
        if not norm or norm in seen or len(out) >= max_keys:
            return
        seen.add(norm)
        out.append((key, kind))

    if speaker and speaker.strip():
        add(speaker.strip(), "name")
    if not text or not text.strip():
        return out
    names_budget = max(1, max_keys // 2)
    if _HANGUL_RE.search(text):
        names, concepts = _korean(text)
        latin_part = _HANGUL_RE.sub(" ", text)
        names += [n for n in _latin_proper_nouns(latin_part) if n not in names]
    else:
        names = _latin_proper_nouns(text)
        concepts = []
    for n in names:
        if sum(1 for _, k in out if k != "concept") >= names_budget + (1 if speaker else 0):
            break
        add(n, "proper_noun")
    if not _HANGUL_RE.search(text):
        name_words = {normalize_text(w) for n in names for w in n.split()}
        concepts = _latin_concepts(text, set(seen) | name_words)
    for c in concepts:
        add(c, "concept")
    # Room left (few concepts found): the remaining names.
    for n in names:
        add(n, "proper_noun")
    return out
