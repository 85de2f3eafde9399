"""The index form of terms: Snowball English stems for ASCII words, everything else unchanged."""

from __future__ import annotations

import threading

from keymem.text.stem import stem
from keymem.text.tokenize import tokenize


def test_inflections_share_a_stem() -> None:
    assert stem("camping") == stem("camped") == stem("camp")
    assert stem("painting") == stem("paint")
    assert stem("hiking") == stem("hike")
    # the tokenizer's plural strip first, then the stem: both sides of a plural meet
    assert {stem(t) for t in tokenize("cities movies")} == {stem(t) for t in tokenize("city movie")}


def test_other_terms_pass_through() -> None:
    for term in ("좋아하", "동건", "3.11", "1000", "東京", "café", "ab", "x1"):
        assert stem(term) == term


def test_one_stemmer_per_thread_gives_the_same_answers() -> None:
    words = [f"{w}{suffix}" for w in ("walk", "jump", "paint", "cook", "hike") for suffix in ("", "s", "ed", "ing")]
    stem.cache_clear()
    expected = {w: stem(w) for w in words}
    got: list[dict[str, str]] = []

    def run() -> None:
        got.append({w: stem(w) for w in words})

    stem.cache_clear()
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [expected] * 4
