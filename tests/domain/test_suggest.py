"""Key suggestion without an agent: names and proper nouns exact, keyphrases as concepts."""

from __future__ import annotations

import pytest

from keymem.text.suggest import suggest_keys

pytest.importorskip("yake")


def kinds(pairs: list[tuple[str, str]]) -> dict[str, str]:
    return {k: t for k, t in pairs}


def test_english_names_proper_nouns_and_concepts() -> None:
    text = ("I went to the LGBTQ support group yesterday and it was so powerful. "
            "Then I told Caroline about the adoption agencies in New York City.")
    got = suggest_keys(text, speaker="Melanie")
    k = kinds(got)
    assert got[0] == ("Melanie", "name")  # the speaker first
    assert k["Caroline"] == "proper_noun" and k["New York City"] == "proper_noun"
    concepts = [key for key, t in got if t == "concept"]
    assert concepts and all(key == key.lower() for key in concepts)
    assert any("support" in c or "adoption" in c for c in concepts)
    assert len(got) <= 6


def test_sentence_initial_capital_is_not_a_name() -> None:
    k = kinds(suggest_keys("Painting relaxes me. Yesterday Caroline went to Bank of America.", max_keys=8))
    assert "Painting" not in k and "Yesterday" not in k
    assert k["Caroline"] == "proper_noun" and k["Bank of America"] == "proper_noun"


def test_lone_sentence_initial_word_counts_when_seen_mid_sentence() -> None:
    k = kinds(suggest_keys("Oscar is my guinea pig. I feed Oscar every morning.", max_keys=6))
    assert k.get("Oscar") == "proper_noun"


def test_korean_nnp_and_nouns() -> None:
    got = suggest_keys("어제 지우랑 서울 강남역에서 파이썬 스터디를 했는데 정말 재미있었어. 스터디 끝나고 책을 샀어.",
                       speaker="동건")
    k = kinds(got)
    assert got[0] == ("동건", "name")
    assert k["지우"] == "proper_noun" and k["서울"] == "proper_noun"
    assert k["스터디"] == "concept"  # a common noun, and the most frequent one


def test_deterministic_bounded_and_deduplicated() -> None:
    text = "Python and python and PYTHON: Guido van Rossum wrote Python at CWI in Amsterdam."
    a = suggest_keys(text, max_keys=4)
    assert a == suggest_keys(text, max_keys=4)
    assert len(a) <= 4
    norms = [key.casefold() for key, _ in a]
    assert len(norms) == len(set(norms))
    assert suggest_keys(text, max_keys=0) == []


def test_empty_text_gives_only_the_speaker() -> None:
    assert suggest_keys("", speaker="Ann") == [("Ann", "name")]
    assert suggest_keys("   ") == []
    assert suggest_keys("?!") == []
