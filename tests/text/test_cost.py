"""The token estimate recall's budget counts with: never below MiniLM's WordPiece count of a result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from keymem.text.cost import estimate_tokens

TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "minilm" / "tokenizer.json"

LINES = [
    "keys: Anselm Varga k_59d1077728f94859a2ee (name, 1 memory) | mobile app k_4b021963b498459d9786 "
    "(3 memories, hub, leads on, aka app, smartphone app)",
    "[m_10cb1199e6134fd8af9a] bursar-exporter has to keep building on Java 11: the finance warehouse loader "
    "that imports it still runs that JVM. (via bursar-exporter)",
    "[m_5fc19f2522424adfa081] jenkins-ctl-02 is rebooted for OS patching every Wednesday 14:00-15:00 UTC; "
    "builds running then are killed.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful, honestly amazing!",
    "My Quayside Walk tenant wants £100 off this month; café naïve résumé co-codamol ~25 minutes",
    "日本語のメモ and Привет мир and 동건이는 서울에 살아요",
]


def _wordpiece() -> Callable[[str], int]:
    from tokenizers import Tokenizer

    wp = Tokenizer.from_file(str(TOKENIZER))
    wp.no_truncation()
    wp.no_padding()
    return lambda text: len(wp.encode(text, add_special_tokens=False).ids)


def test_the_estimate_errs_high_on_a_whole_result() -> None:
    """A line may come out a little under its count (a rare word split finer than its length says),
    a result of many lines does not."""
    count = _wordpiece()
    for text in LINES:
        assert 0.9 * count(text) <= estimate_tokens(text) <= 1.5 * count(text) + 5, (text, count(text))
    whole = "\n".join(LINES)
    assert count(whole) <= estimate_tokens(whole) <= 1.3 * count(whole), (count(whole), estimate_tokens(whole))


def test_the_estimate_adds_up_over_lines_and_is_zero_for_nothing() -> None:
    """A text's cost is the sum of its whitespace-separated parts (recall's budget sums its lines)."""
    assert estimate_tokens("") == estimate_tokens("   \n ") == 0
    assert estimate_tokens("\n".join(LINES)) == sum(map(estimate_tokens, LINES))
