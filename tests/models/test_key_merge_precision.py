"""Key-merge precision on distinct but related words, with the test model named correctly (issue 12, item 4).

Run as bge-m3 (CLS pooling, bge thresholds) the MiniLM model merged 9 of these 40 pairs, and
"done" collected 23 aliases (fine, husband, happy, sad, yes, no, win, lose ...). Named as itself
(mean pooling, the calibrated "minilm" thresholds of docs/calibration.md) it must merge none:
each word stays its own key and no key becomes an alias of another.
"""

from __future__ import annotations

from typing import Any

from keymem.settings import Settings

# antonyms, weekdays and months, siblings and relatives, neighbours of one topic
PAIRS = [
    ("done", "fine"), ("happy", "sad"), ("yes", "no"), ("win", "lose"), ("Monday", "Tuesday"),
    ("buy", "sell"), ("husband", "wife"), ("brother", "sister"), ("up", "down"), ("hot", "cold"),
    ("left", "right"), ("open", "close"), ("start", "stop"), ("true", "false"), ("black", "white"),
    ("day", "night"), ("north", "south"), ("summer", "winter"), ("January", "February"), ("mother", "father"),
    ("son", "daughter"), ("king", "queen"), ("boy", "girl"), ("cat", "dog"), ("coffee", "tea"),
    ("fast", "slow"), ("big", "small"), ("old", "new"), ("push", "pull"), ("in", "out"),
    ("east", "west"), ("Saturday", "Sunday"), ("morning", "evening"), ("uncle", "aunt"), ("red", "blue"),
    ("Python", "Java"), ("input", "output"), ("import", "export"), ("send", "receive"), ("love", "hate"),
]


def test_forty_distinct_pairs() -> None:
    words = [w for pair in PAIRS for w in pair]
    assert len(PAIRS) == 40 and len(set(words)) == 80


def test_distinct_related_words_never_merge(settings: Settings, clock: Any) -> None:
    from keymem.memory.graph import MemoryGraph

    assert settings.local_embedding_model == "minilm-l6-v2" and settings.local_embedding_model_path is not None
    # the embedder comes from the settings, as in a user's process: the name picks pooling and thresholds
    g = MemoryGraph.open(settings, reranker=None, clock=clock, progress=False)
    try:
        assert g.embedder.fingerprint == "local:minilm-l6-v2+nopad" and g.embedder.profile == "minilm"
        key_of: dict[str, Any] = {}
        for a, b in PAIRS:
            for word in (a, b):
                result = g.remember(content=f"A note filed under the word {word}.", keys=[word])
                assert len(result.keys) == 1
                key_of[word] = result.keys[0]
        vecs = {w: v for w, v in zip(key_of, g.embedder.embed(list(key_of)), strict=True)}
        merged = [
            f"{w} -> {k.key} (cosine {float(vecs[w] @ vecs[k.key]):.3f})"
            for w, k in key_of.items() if k.key != w
        ]
        assert merged == [], f"{len(merged)} false merge(s): {merged}"
        pairs_merged = [(a, b) for a, b in PAIRS if key_of[a].key_id == key_of[b].key_id]
        assert pairs_merged == []
        assert len({k.key_id for k in key_of.values()}) == 80
        assert g.counts()["keys"] == 80
        aliased = {w: g.read_key(key_id=k.key_id).key.aliases for w, k in key_of.items()}
        assert {w: a for w, a in aliased.items() if set(a) & set(key_of)} == {}
    finally:
        g.close()
