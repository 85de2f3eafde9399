"""English stemming of BM25 terms, applied where terms meet the index (not in stored terms).

Why
---
A question and the memory that answers it rarely share a word form: "When did Melanie go
camping?" against "We camped at the lake last weekend". :func:`keymem.text.tokenize.tokenize`
only strips plurals, so ``camping``/``camped`` stayed two terms. The Snowball English stemmer
(Porter2, PyStemmer's C build) conflates ``-ing``/``-ed``/``-ly``/``-ation`` forms as well.
Measured on LoCoMo (`bench/locomo.py`, recall@10 of ``recall_direct``, MiniLM, reranker off;
docs/BENCHMARKS.md, attempt 10): agent keys 0.775 -> 0.793 on the dev conversations and 0.725
-> 0.749 on the held-out ones; suggested keys 0.614 -> 0.641 / 0.600 -> 0.602.

Where
-----
Stemming is a property of the in-memory index, not of the stored terms: ``Memory.terms`` keeps
the tokenizer's output, and :class:`keymem.index.lexical.LexicalIndex` maps each term through
:func:`stem` when it gives the term an id, for documents and queries alike. A store written
before this module needs no rewrite, and changing the stemmer never touches the database.
Only ASCII alphabetic terms are stemmed; Korean terms (Kiwi's stems already), CJK bigrams,
numbers and other scripts pass through unchanged.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

__all__ = ["stem"]

_local = threading.local()  # a PyStemmer object is not thread-safe: one per thread


def _stemmer() -> Any:
    st = getattr(_local, "stemmer", None)
    if st is None:
        import Stemmer  # PyStemmer

        st = _local.stemmer = Stemmer.Stemmer("english")
    return st


@lru_cache(maxsize=1 << 16)
def stem(term: str) -> str:
    """The index form of one tokenizer term (its Snowball English stem, or the term itself)."""
    if len(term) < 3 or not term.isascii() or not term.isalpha():
        return term
    out: str = _stemmer().stemWord(term)
    return out
