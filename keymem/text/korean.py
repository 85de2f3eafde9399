"""Korean analysis with Kiwi (kiwipiepy): one Hangul run in, one entry per eojeol out.

Which morphemes become BM25 terms, the compound spans and the ``-이`` rule are described in
keymem/text/tokenize.py, the only caller. Kiwi is built once per process, on the first Hangul
text (~280 MB): a store without Korean text never pays for it. Foreign words, hanja and
URL-like tokens inside an eojeol are handed back to the caller's ``index_terms`` so they become
the same terms as outside Korean text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kiwipiepy import Kiwi

CHUNK_RE = re.compile(r"\S+")
# Punctuation that ends a clause: n-grams for literal matching never cross it.
# A period ends a clause only after a 4+ character word ("Dr. Smith" stays one phrase).
CLAUSE_BREAK_RE = re.compile(r"[!?;:,()\[\]{}<>\"|\u2026\u3001\u3002\uff01\uff1f]|(?<=\w{4})\.(?=\s|$)")

_KIWI_STEM_TAGS = frozenset({"VV", "VA"})
_KIWI_KEEP_TAGS = frozenset({"NNG", "NNP", "NR", "XR", "SN"})
_KIWI_PASS_TAGS = frozenset({"SL", "SH", "W_URL", "W_EMAIL", "W_HASHTAG", "W_MENTION", "W_SERIAL"})
_KIWI_RUN_TAGS = frozenset({"NNG", "NNP", "NNB", "NR", "NP", "MM", "XPN", "XR", "SN", "SL", "SH"})
_KIWI_BREAK_TAGS = frozenset({"SF", "SP", "SS", "SSO", "SSC", "SE"})
# Kiwi needs context but its cost and memory grow with input size: feed long runs in pieces.
_KIWI_CHUNK = 2000
# Spans longer than this are not words (space-free blobs); they get no compound/prefix terms.
_MAX_SPAN = 32

_kiwi: Kiwi | None = None
_kiwi_init_lock = threading.Lock()
# kiwipiepy holds the GIL while analysing today; the lock keeps us safe if a release changes that.
_kiwi_call_lock = threading.Lock()
_kiwi_stop_stems: frozenset[str] = frozenset()


def kiwi_loaded() -> bool:
    """Whether this process has paid for Kiwi yet (for diagnostics and tests)."""
    return _kiwi is not None


def get_kiwi() -> Kiwi:
    """Construct Kiwi once per process, on first Hangul text (double-checked locking)."""
    global _kiwi, _kiwi_stop_stems
    kiwi = _kiwi
    if kiwi is not None:
        return kiwi
    with _kiwi_init_lock:
        if _kiwi is None:
            from kiwipiepy import Kiwi
            from kiwipiepy.utils import Stopwords

            k = Kiwi(load_typo_dict=False, load_multi_dict=False)
            k.tokenize("")  # Kiwi loads its model lazily: pay for it here, under the lock
            _kiwi_stop_stems = frozenset(
                form for form, tag in Stopwords().stopwords if tag in _KIWI_STEM_TAGS
            )
            _kiwi = k
        return _kiwi


@dataclass(slots=True)
class Eojeol:
    """One whitespace-delimited Korean word as Kiwi analysed it."""

    terms: list[str] = field(default_factory=list)
    word: str = ""  # literal form: nominal span without particles, else the surface
    variants: list[str] = field(default_factory=list)  # extra literal forms (prefixes, -이)
    fragments: set[str] = field(default_factory=set)  # terms that are pieces of a mis-split name
    breaks_after: bool = False


def _chunks(run: str) -> list[str]:
    """Split a long Hangul run at whitespace into pieces of about ``_KIWI_CHUNK`` chars."""
    if len(run) <= _KIWI_CHUNK:
        return [run]
    pieces: list[str] = []
    start = 0
    while start < len(run):
        end = min(len(run), start + _KIWI_CHUNK)
        if end < len(run):
            cut = run.rfind(" ", start + 1, end)
            if cut > start:
                end = cut
        pieces.append(run[start:end])
        start = end
    return pieces


def _has_final_consonant(syllable: str) -> bool:
    cp = ord(syllable)
    return 0xAC00 <= cp <= 0xD7A3 and (cp - 0xAC00) % 28 != 0


def analyse_hangul(run: str, index_terms: Callable[[str, list[str]], None]) -> list[Eojeol]:
    """Analyse one Hangul run with Kiwi; one entry per whitespace-delimited eojeol."""
    kiwi = get_kiwi()
    result: list[Eojeol] = []
    for piece in _chunks(run):
        spans = [(m.start(), m.end()) for m in CHUNK_RE.finditer(piece)]
        if not spans:
            continue
        with _kiwi_call_lock:
            tokens = kiwi.tokenize(piece)
        groups: list[list[Any]] = [[] for _ in spans]
        j = 0
        for tok in tokens:
            start = tok.start
            while j + 1 < len(spans) and start >= spans[j][1]:
                j += 1
            groups[j].append(tok)
        for (s, e), toks in zip(spans, groups, strict=True):
            result.append(_eojeol(piece, s, e, toks, index_terms))
    return result


def _eojeol(piece: str, s: int, e: int, toks: list[Any], index_terms: Callable[[str, list[str]], None]) -> Eojeol:
    ej = Eojeol()
    run_toks: list[Any] = []
    in_run = True
    seen_content = False
    for tok in toks:
        tag = tok.tag.split("-", 1)[0]
        form = tok.form
        if tag in _KIWI_BREAK_TAGS:
            if seen_content:
                ej.breaks_after = True
                in_run = False
            continue
        seen_content = True
        if in_run and tag in _KIWI_RUN_TAGS:
            run_toks.append(tok)
        else:
            in_run = False
        if tag in _KIWI_KEEP_TAGS:
            ej.terms.append(form)
        elif tag in _KIWI_STEM_TAGS:
            if form not in _kiwi_stop_stems:
                ej.terms.append(form)
        elif tag in _KIWI_PASS_TAGS:
            index_terms(form, ej.terms)
    if run_toks:
        first, last = run_toks[0], run_toks[-1]
        span = piece[first.start : last.start + last.len]
        ej.word = span
        if len(run_toks) > 1 and len(span) <= _MAX_SPAN:
            if run_toks[0].tag == "MM":
                # Determiners are written apart from their noun; 동/MM 건/NNG glued together is
                # a name Kiwi did not know, and 건 alone must not match literally.
                ej.fragments.update(t.form for t in run_toks[1:])
            if span not in ej.terms:
                ej.terms.append(span)
            for t in run_toks[:-1][:4]:  # morpheme-boundary prefixes: 동건씨 -> 동건
                prefix = piece[first.start : t.start + t.len]
                if len(prefix) > 1:
                    ej.variants.append(prefix)
        tail = run_toks[-1]
        tail_tag = tail.tag.split("-", 1)[0]
        if tail_tag == "NNP" and len(span) >= 3 and span.endswith("이") and _has_final_consonant(span[-2]):
            bare = span[:-1]  # 동건이/NNP -> 동건 (hypocoristic -이 after a consonant)
            ej.variants.append(bare)
            if bare not in ej.terms:
                ej.terms.append(bare)
    else:
        ej.word = CLAUSE_BREAK_RE.sub("", piece[s:e]).strip(".")
    return ej
