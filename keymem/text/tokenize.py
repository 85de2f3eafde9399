"""Tokenisation shared by lexical indexing, lexical queries and literal name matching.

One function, :func:`tokenize`, turns both documents and queries into BM25 terms, so whatever
normalisation it applies is applied identically on both sides.

Pipeline
--------
1. *Sanitise*: lone surrogates and control characters become spaces, invisible format
   characters (RTL/LTR marks, zero-width spaces, BOM, soft hyphen, ...) are removed. Lone
   surrogates cannot be encoded to UTF-8 and would make Kiwi's binding raise.
2. NFKC then ``casefold()`` (fullwidth/mathematical letters, ligatures and ``ß`` fold to their
   plain forms).
3. Split into script runs: a maximal stretch of whitespace-separated chunks that contain
   Hangul goes to Kiwi as one piece (so the analyser sees context); everything else is split
   into words with a regular expression.
4. Bounds for hostile input: at most ``KIWI_MAX_CHARS`` (64k) characters of Hangul per call go
   to Kiwi (the rest is split on whitespace into surface eojeols), and words longer than
   ``MAX_TOKEN_CHARS`` (100) are dropped, so a 1 MB text of any shape tokenises in seconds.

Korean (kiwipiepy, run by keymem/text/korean.py)
-------------------------------------------------
Kept as terms: common and proper nouns (NNG, NNP), numerals (NR), verb/adjective stems
(VV, VA and their irregular variants, as Kiwi's restored stem, e.g. ``좋아한다`` -> ``좋아하``),
roots (XR), numbers (SN).  Foreign words (SL), hanja (SH) and Kiwi's URL/e-mail/hashtag/mention
tokens are passed through the non-Hangul path below so that ``York`` inside ``York까지`` is the
same term as a free-standing ``York``.

Dropped: particles, endings, copulas, suffixes/prefixes, auxiliaries (VX), bound nouns (NNB:
``것``, ``수``, ``씨``), pronouns (NP), determiners (MM) and adverbs (MAG), plus the predicate stems
in Kiwi's own stopword list (``kiwipiepy.utils.Stopwords``: light verbs such as 하/있/되/없/같).
Kiwi's list also contains nouns (사람, 일, 말, 지역, 때); those are kept because in personal
memories they carry meaning ("새 일" = a new job).  bm25s's Korean list (stopwords-iso) is not
used: it is not POS-aware and removes content words such as 시간 and 좋아.

Compound spans: for each eojeol, the leading run of nominal morphemes (nouns, bound nouns,
numbers, determiners, foreign words, ...) is also emitted as one term when it has two or more
morphemes.  Kiwi does not segment unknown names consistently: ``동건이`` is ``동/MM 건/NNG 이/JKS``
while ``동건은`` may be ``동건/NNP``; the span term ``동건`` makes both agree.  For the same reason
a proper noun ending in the hypocoristic suffix ``-이`` after a consonant-final syllable
(``동건이/NNP``) also yields the bare name (``동건``).

Other scripts
-------------
Words are runs of letters, digits and combining marks; an apostrophe inside a word is part of
it.  ``user's`` -> ``user``; clitics ``'ll 're 've 'd 'm`` are stripped; ``n't`` words are
negated auxiliaries and are dropped like other function words; remaining apostrophes are
removed (``O'Brien`` -> ``obrien``).  Thousands separators are removed (``1,000`` -> ``1000``),
decimals and versions are kept whole (``3.11``).  Han/kana runs (Chinese, Japanese, and hanja
outside Korean text) have no spaces, so they are indexed as overlapping character bigrams
(the CJK-bigram approach of Lucene's CJKAnalyzer); a single character stays a unigram.

English stopwords: bm25s's ``STOPWORDS_EN_PLUS`` (NLTK's list).  Its shorter ``STOPWORDS_EN``
(Lucene's 33 words) keeps what/who/my/does/did/have: agent queries are natural-language
questions full of such words, and in small per-namespace corpora their IDF is not low enough to
neutralise them.

Plural stripping (kept)
-----------------------
An S-stemmer (Harman 1991) on ASCII words of 4+ letters, with one extension: ``-ies`` -> ``-y``
(not ``-eies``/``-aies``); ``-sses``/``-shes``/``-ches``/``-xes`` -> drop ``-es``; other ``-es`` ->
drop ``-s`` (not ``-aes``/``-ees``/``-oes``); ``-s`` -> drop it (not ``-us``/``-ss``/``-is``).
Measured on the 21,745 lowercase alphabetic whole words of the bundled MiniLM (BERT uncased)
vocabulary, stopwords excluded: the rule changes 3,519 words and 3,116 of them (88.5%) land on
another vocabulary word, i.e. a plural or third-person form now meets its base form
(``fruits``/``fruit``, ``likes``/``like``, ``cities``/``city``, ``boxes``/``box``; Harman's rule alone:
3,032).  A manual check of 200 random such conflations found 3 doubtful ones (``mets``->``met``,
``browns``->``brown``, ``sevens``->``seven``), ~1.5%; the other 403 changed words map to a
non-word both sides share harmlessly (``movies``->``movy``, ``james``->``jame``).  Memories are
short (~20 words), so vocabulary mismatch between a question and the stored fact is the main
lexical recall failure, and ~60 useful conflations per doubtful one is a good trade.  The BM25
index goes further where terms meet it: keymem/text/stem.py maps each term to its Snowball
stem (``-ing``/``-ed`` forms too); the terms returned here, and stored, are not stemmed.
Literal name matching (:func:`literal_tokens`) does not strip plurals.

Costs (2-core box, CPython 3.11, kiwipiepy 0.24.1; script in ``tests/text/test_tokenize.py``)
-----------------------------------------------------------------------------------------
* Kiwi, built on the first text that contains Hangul: ~0.9 s on an idle box (2-4 s wall on
  a loaded one) and ~+320 MB RSS, with the typo and multi-word dictionaries off (on: ~2 s and
  ~+510 MB).  The typo dictionary only normalises endings, which are dropped anyway; the
  multi-word dictionary fuses multi-eojeol proper nouns into one token, which defeats partial
  matches in BM25.  English-only processes never pay for it.
* English: ~37 us CPU per 20-word text (~3 MB/s).
* Korean: ~0.7 ms CPU per 47-character sentence (~65-75k chars/s); Kiwi is 90% of it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Literal

from bm25s.stopwords import STOPWORDS_EN_PLUS

from keymem.text.korean import CHUNK_RE, CLAUSE_BREAK_RE, analyse_hangul, kiwi_loaded

__all__ = [
    "tokenize",
    "script_of",
    "literal_tokens",
    "literal_key",
    "literal_match",
    "normalize_text",
    "kiwi_loaded",
]

Script = Literal["hangul", "latin", "other", "mixed"]

STOPWORDS: frozenset[str] = frozenset(STOPWORDS_EN_PLUS)

# --------------------------------------------------------------------------------------------
# character classes

_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uffa0-\uffdc"
_HANGUL_RE = re.compile(f"[{_HANGUL}]")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_CJK_RUN_RE = re.compile(f"[{_CJK}]+")
_LATIN = (
    "a-zA-Z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0250-\u02af\u1e00-\u1eff"
    "\u2c60-\u2c7f\ua720-\ua7ff\uab30-\uab6f"
)
_LATIN_RE = re.compile(f"[{_LATIN}]")
_LETTER_RE = re.compile(r"[^\W\d_]")

# Controls (C0, DEL, C1) and lone surrogates -> space.  Kiwi's binding cannot encode
# surrogates; NUL and friends are just noise.
_CTRL_RE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]+")
# Unicode "Cf" (format) characters, Unicode 14: invisible, so they must not split words.
_FORMAT_RE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]+"
)
_WS_RE = re.compile(r"\s+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'", "\uff07": "'"})
_CLITICS = ("'ll", "'re", "'ve", "'d", "'m")

# Kiwi runs at ~70k chars/s on prose and far slower on degenerate input (~20k chars/s on a
# space-free "가가가..."), so one call to tokenize() sends at most this much Hangul to it; the
# rest is split into whole eojeols (surface forms).  Memories are orders of magnitude shorter.
KIWI_MAX_CHARS = 64_000
# Longer "words" (base64, hashes, space-free Hangul blobs) are dropped, as Lucene's standard
# tokenizer caps token length: they never match a query and would bloat the vocabulary.
MAX_TOKEN_CHARS = 100


@cache
def _word_re() -> re.Pattern[str]:
    """Word pattern: letters/digits plus combining marks (Indic vowel signs, Thai, ...).

    Python's ``\\w`` excludes marks, which would cut Devanagari or Thai words apart; the mark
    ranges are computed once (~50 ms) from ``unicodedata`` rather than hard-coded.
    """
    ranges: list[str] = []
    start: int | None = None
    for cp in range(0x30000):
        if unicodedata.category(chr(cp))[0] == "M":
            if start is None:
                start = cp
        elif start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = None
    marks = "".join(ranges) + "\U000e0100-\U000e01ef"
    char = rf"(?:[^\W_]|[{marks}])"
    number = r"\d+(?:[.,]\d+)+"
    return re.compile(rf"(?P<num>{number})(?![^\W_])|(?P<word>{char}+(?:'{char}+)*)")


_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+")


def _prepare(text: str) -> str:
    """Sanitise, NFKC-normalise and case-fold."""
    if not text:
        return ""
    text = _CTRL_RE.sub(" ", text)
    text = _FORMAT_RE.sub("", text)
    text = unicodedata.normalize("NFKC", text).casefold()
    # casefold can reintroduce nothing harmful; apostrophe variants are unified here once.
    return text.translate(_APOSTROPHES)


def normalize_text(text: str) -> str:
    """Canonical form for duplicate detection: NFKC, case-fold, collapsed whitespace, stripped.

    Control/format characters are treated like :func:`tokenize` does (controls are
    whitespace, invisible marks vanish) so two texts differing only by an RTL mark or a NUL are
    duplicates.
    """
    return _WS_RE.sub(" ", _prepare(text)).strip()


# --------------------------------------------------------------------------------------------
# non-Hangul words


def _plural_strip(word: str) -> str:
    """S-stemmer style plural/3rd-person strip (the module docstring has the measurement)."""
    if len(word) < 4 or word[-1] != "s" or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith(("us", "ss", "is")):
        return word
    return word[:-1]


def _cjk_bigrams(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
    else:
        out.extend(run[i : i + 2] for i in range(len(run) - 1))


def _raw_words(text: str) -> list[str]:
    """Words of prepared non-Hangul text, possessive stripped, nothing else removed."""
    words: list[str] = []
    for m in _word_re().finditer(text):
        num = m.group("num")
        if num is not None:
            if _THOUSANDS_RE.fullmatch(num):
                words.append(num.replace(",", ""))
            else:
                words.extend(p for p in num.split(",") if p)
            continue
        w = m.group("word")
        if len(w) > MAX_TOKEN_CHARS:
            continue
        if w.endswith("'s"):
            w = w[:-2]
        words.append(w)
    return words


def _index_terms(text: str, out: list[str]) -> None:
    """Append BM25 terms of prepared non-Hangul text to ``out``."""
    for w in _raw_words(text):
        if w in STOPWORDS:
            continue
        if "'" in w:
            if w.endswith("n't"):
                continue  # negated auxiliaries: function words like their positive forms
            for clitic in _CLITICS:
                if w.endswith(clitic):
                    w = w[: -len(clitic)]
                    break
            w = w.replace("'", "")
            if not w or w in STOPWORDS:
                continue
        if _CJK_RUN_RE.search(w):
            pos = 0
            for m in _CJK_RUN_RE.finditer(w):
                if m.start() > pos:
                    out.append(w[pos : m.start()])
                _cjk_bigrams(m.group(), out)
                pos = m.end()
            if pos < len(w):
                out.append(w[pos:])
            continue
        w = _plural_strip(w)
        if w not in STOPWORDS:
            out.append(w)


# --------------------------------------------------------------------------------------------
# Kiwi

# --------------------------------------------------------------------------------------------
# public API


def _segments(text: str) -> list[tuple[bool, str]]:
    """Alternating (is_hangul, text) runs of prepared text.

    A run is a maximal sequence of whitespace-separated chunks that contain Hangul.  Chunks are
    classified one by one (linear time; a single regex for "chunks containing Hangul" would
    backtrack quadratically over a long chunk without any).
    """
    out: list[tuple[bool, str]] = []
    pos = 0
    run_start = run_end = -1
    for m in CHUNK_RE.finditer(text):
        if _HANGUL_RE.search(m.group()):
            if run_start < 0:
                run_start = m.start()
            run_end = m.end()
        elif run_start >= 0:
            if run_start > pos:
                out.append((False, text[pos:run_start]))
            out.append((True, text[run_start:run_end]))
            pos, run_start = run_end, -1
    if run_start >= 0:
        if run_start > pos:
            out.append((False, text[pos:run_start]))
        out.append((True, text[run_start:run_end]))
        pos = run_end
    if pos < len(text):
        out.append((False, text[pos:]))
    return out


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text`` (documents and queries alike), in text order, duplicates kept.

    Kiwi is only constructed if the text contains Hangul.
    """
    text = _prepare(text)
    out: list[str] = []
    if not text:
        return out
    if not _HANGUL_RE.search(text):
        _index_terms(text, out)
        return out
    for is_hangul, seg in _budgeted(_segments(text)):
        if is_hangul:
            for ej in analyse_hangul(seg, _index_terms):
                out.extend(ej.terms)
        else:
            _index_terms(seg, out)
    return out


_PROBE = (
    "The users' favourite Libraries, cafés & naïve tests: Dr. Smith's 3.14 notes (2024-05-01) "
    "東京と北京の会議 ﬁle école"
)
_PROBE_KO = "동건이는 파이썬을 좋아했다. 서울에서 회의가 있었습니다. Dr. Kim의 3.14"
TERMS_SEP = "\x1f"
KOREAN_META = "lexical_tokenizer_ko"  # Meta row: the Kiwi fingerprint the stored Korean terms came from


def tokenizer_fingerprint() -> str:
    """Identity of the tokenizer's behaviour outside Korean: stored BM25 terms are reused only while
    it is unchanged.

    A hash of the terms of a probe text exercising the non-Korean paths (Latin plurals and
    possessives, punctuation, numbers, CJK bigrams, Unicode normalisation), so a change in
    tokenisation re-tokenises stored memories on the next open instead of silently mixing old and
    new terms. It does not build Kiwi (~280 MB): a store without Korean text never pays for it.
    Korean has its own fingerprint (:func:`korean_fingerprint`).
    """
    import hashlib

    terms = tokenize(_PROBE)
    digest = hashlib.sha256(TERMS_SEP.join(terms).encode("utf-8")).hexdigest()[:16]
    return f"v2-{digest}"


@cache
def korean_fingerprint() -> str:
    """Identity of the Korean path (Kiwi's version and the terms of a Korean probe); builds Kiwi.

    Computed once per process: the write path stamps it beside the first Korean memory it stores.
    """
    import hashlib

    import kiwipiepy

    terms = tokenize(_PROBE_KO)
    digest = hashlib.sha256(TERMS_SEP.join(terms).encode("utf-8")).hexdigest()[:16]
    return f"kiwipiepy-{kiwipiepy.__version__}-{digest}"


def has_hangul(text: str) -> bool:
    """Whether ``text`` holds Hangul (stored terms with Hangul came from the Korean path)."""
    return _HANGUL_RE.search(text) is not None


def _budgeted(segments: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    """Demote Hangul beyond ``KIWI_MAX_CHARS`` to the plain word path (cut at whitespace)."""
    budget = KIWI_MAX_CHARS
    out: list[tuple[bool, str]] = []
    for is_hangul, seg in segments:
        if not is_hangul or budget >= len(seg):
            out.append((is_hangul, seg))
            budget -= len(seg) if is_hangul else 0
            continue
        cut = seg.rfind(" ", 0, budget) if budget > 0 else -1
        if cut > 0:
            out.append((True, seg[:cut]))
            out.append((False, seg[cut:]))
        else:
            out.append((False, seg))
        budget = 0
    return out


def _literal_words(text: str) -> tuple[list[str], list[list[str]]]:
    """(single literal terms, clauses of literal words) of prepared text."""
    singles: list[str] = []
    clauses: list[list[str]] = [[]]
    for is_hangul, seg in _budgeted(_segments(text)):
        if is_hangul:
            for ej in analyse_hangul(seg, _index_terms):
                if ej.word:
                    clauses[-1].append(ej.word)
                singles.extend(t for t in ej.terms if t not in ej.fragments or t == ej.word)
                singles.extend(ej.variants)
                if ej.breaks_after:
                    clauses.append([])
        else:
            _index_terms(seg, singles)
            parts = CLAUSE_BREAK_RE.split(seg)
            for i, part in enumerate(parts):
                if i:
                    clauses.append([])
                clauses[-1].extend(_raw_words(part))
    return singles, [c for c in clauses if c]


def literal_tokens(text: str, max_n: int = 4) -> set[str]:
    """Terms for literal name matching: BM25 terms plus word n-grams (1..``max_n`` words).

    Words here are case-folded, possessive-stripped and *not* stopword-filtered or
    plural-stripped (names contain "of", "the", and end in "s"); Korean words are the
    nominal span without particles (``동건이`` -> ``동건``), plus morpheme-boundary prefixes of
    compounds (``동건씨`` -> ``동건``).  Pieces of a name Kiwi split apart (``건`` of ``동건``) are
    left out.  N-grams do not cross clause punctuation.  Match a key with
    :func:`literal_match` (or ``literal_key(key) in literal_tokens(text)``), not with a set
    intersection of both sides: a key's own fragments are not the key.
    """
    prepared = _prepare(text)
    if not prepared:
        return set()
    singles, clauses = _literal_words(prepared)
    result = set(singles)
    for words in clauses:
        for n in range(1, max_n + 1):
            for i in range(len(words) - n + 1):
                result.add(" ".join(words[i : i + n]))
    return result


def literal_key(name: str) -> str:
    """The normalised phrase a key/name must appear as in :func:`literal_tokens` of a text."""
    prepared = _prepare(name)
    if not prepared:
        return ""
    _, clauses = _literal_words(prepared)
    return " ".join(w for c in clauses for w in c)


def literal_match(name: str, text: str) -> bool:
    """True if ``name`` occurs in ``text`` as whole words (Korean particles allowed)."""
    key = literal_key(name)
    return bool(key) and key in literal_tokens(text)


def script_of(text: str) -> Script:
    """Dominant writing system of ``text``'s letters: "hangul", "latin", "other" or "mixed".

    Digits, punctuation and symbols are ignored.  A Hangul syllable counts as two letters (it
    carries about as much as two or three Latin letters).  A script that holds at least 75%
    of the weighted letters wins; otherwise the text is "mixed", so a Korean sentence quoting
    a short English brand name stays "hangul" while a half-and-half text is "mixed".  Text
    with no letters at all is "other".  Used by a not-found gate that must be bypassed when
    query and memory are written in different scripts (no lexical overlap is possible).
    """
    text = _prepare(text)
    hangul = 2 * len(_HANGUL_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    letters = len(_LETTER_RE.findall(text))
    other = max(0, letters - hangul // 2 - latin)
    total = hangul + latin + other
    if total == 0:
        return "other"
    best_name, best = max((("hangul", hangul), ("latin", latin), ("other", other)), key=lambda x: x[1])
    if best / total >= 0.75:
        return best_name  # type: ignore[return-value]
    return "mixed"
