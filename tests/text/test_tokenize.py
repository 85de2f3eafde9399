"""Tokenisation for BM25 and literal name matching (real Kiwi, no mocks).

Measured costs quoted in ``keymem/text/tokenize.py`` come from this script (run it from the
repository root; it starts a fresh interpreter so Kiwi's first load is measured)::

    python - <<'EOF'
    import itertools, json, random, time
    def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e6
    from keymem.text import tokenize as T
    rng = random.Random(0)
    vocab = [w for w in json.load(open("tests/fixtures/minilm/tokenizer.json"))["model"]["vocab"]
             if w.isascii() and w.isalpha() and w.islower() and len(w) > 2]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    en = [" ".join(rng.choices(vocab, cum_weights=cum, k=20)) for _ in range(20000)]
    t = time.process_time(); [T.tokenize(x) for x in en]; dt = time.process_time() - t
    print(f"English: {dt / len(en) * 1e6:.0f} us per 20-word text, {sum(map(len, en)) / dt / 1e6:.1f} MB/s (CPU)")
    m0 = rss(); t = time.perf_counter(); T.tokenize("사과")
    print(f"Kiwi init {time.perf_counter() - t:.2f}s wall, RSS +{rss() - m0:.0f} MB")
    ko = ["동건이는 어제 친구들과 서울에서 맛있는 사과를 먹었고 다음 주에 부산으로 여행을 간다"] * 2000
    t = time.process_time(); [T.tokenize(x) for x in ko]; dt = time.process_time() - t
    print(f"Korean: {dt / len(ko) * 1e3:.2f} ms per {len(ko[0])}-char text, {sum(map(len, ko)) / dt / 1e3:.0f}k chars/s (CPU)")
    EOF
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keymem.text.tokenize import (
    KIWI_MAX_CHARS,
    STOPWORDS,
    literal_key,
    literal_match,
    literal_tokens,
    normalize_text,
    script_of,
    tokenize,
)

# ---------------------------------------------------------------------------- English


def test_english_stopwords_and_case() -> None:
    assert tokenize("The Quick BROWN fox and THE dog") == ["quick", "brown", "fox", "dog"]
    assert tokenize("What is it?") == []
    assert all(t not in STOPWORDS for t in tokenize("I would have been there if they had asked me"))


def test_apostrophes() -> None:
    assert tokenize("the user's dog") == ["user", "dog"]
    assert tokenize("the user\u2019s dog") == ["user", "dog"]  # typographic apostrophe
    assert tokenize("O'Brien") == ["obrien"]
    assert tokenize("I don't know, she'll see, we've lost") == ["know", "see", "lost"]
    assert tokenize("the users' cars") == ["user", "car"]


def test_plural_strip_and_numbers() -> None:
    assert tokenize("apples cities boxes watches glasses") == ["apple", "city", "box", "watch", "glass"]
    assert tokenize("glass bus gas analysis") == ["glass", "bus", "gas", "analysis"]
    assert tokenize("Likes") == tokenize("like")
    assert tokenize("paid 1,000 dollars for python 3.11") == ["paid", "1000", "dollar", "python", "3.11"]
    assert tokenize("1,2,3") == ["1", "2", "3"]


def test_other_scripts() -> None:
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]  # combining vowel signs stay inside words
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]  # CJK bigrams
    assert tokenize("日") == ["日"]
    assert tokenize("Ｆｕｌｌｗｉｄｔｈ ﬁne Straße") == ["fullwidth", "fine", "strasse"]  # NFKC + casefold


# ---------------------------------------------------------------------------- Korean


def test_korean_morphemes() -> None:
    toks = tokenize("사과를 좋아한다")
    assert "사과" in toks
    assert "좋아하" in toks
    assert "를" not in toks and "ᆫ다" not in toks
    toks = tokenize("나는 빨간 사과들을 먹었다")
    assert {"빨갛", "사과", "먹"} <= set(toks)
    assert "나" not in toks  # pronoun
    assert "있" not in tokenize("사과가 있다")  # light verb from Kiwi's stopword list


def test_korean_name_split_by_kiwi_still_matches() -> None:
    # Kiwi analyses 동건이 as 동/MM 건/NNG 이/JKS; the nominal span must still be a term.
    assert "동건" in tokenize("동건이 좋아하는 과일은?")
    assert set(tokenize("동건이 좋아하는 과일은?")) & set(tokenize("동건은 사과를 좋아한다")) >= {
        "동건",
        "좋아하",
    }
    assert {"2024", "2024년", "5월"} <= set(tokenize("2024년 5월"))


def test_mixed_korean_and_latin() -> None:
    toks = tokenize("서울에서 New York까지 3시간 걸렸다")
    assert {"서울", "new", "york", "3시간"} <= set(toks)
    assert "apple" in tokenize("Apples를 샀다")  # foreign words inside Hangul get English rules
    assert {"abc", "gmail", "com"} <= set(tokenize("연락처는 abc@gmail.com 이다"))


# ---------------------------------------------------------------------------- robustness


HOSTILE = [
    "",
    "   \t\n ",
    "\x00\x01\x02 nul \x00",
    "lone \ud800 surrogate \udfff here",
    "\u200f\u202eRTL\u202c marks \u200e",
    "\ufeffbom and zero\u200bwidth",
    "e\u0301\u0301\u0301 combining",
    "😀👍🏽‍👩‍👩‍👧 emoji only",
    "ㅋㅋㅋㅋ ㅠㅠ",
    "\ud800동건\udfff이\x00가 \u200f사과를",
    "!!!???...,,,",
    "a" * 10_000,
]


def test_hostile_inputs_do_not_crash() -> None:
    for text in HOSTILE:
        toks = tokenize(text)
        assert isinstance(toks, list)
        assert all(isinstance(t, str) and t and t == t.strip() for t in toks)
        literal_tokens(text)
        script_of(text)
        normalize_text(text)
    assert tokenize("") == []
    assert literal_tokens("") == set()
    assert "nul" in tokenize("\x00\x01\x02 nul \x00")
    assert tokenize("\ud800동건\udfff이\x00가 \u200f사과를")  # Kiwi never sees the surrogates


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80))
def test_tokenize_any_text(text: str) -> None:
    toks = tokenize(text)
    for t in toks:
        assert t and not any(ch.isspace() for ch in t)
        assert unicodedata.category(t[0]) not in ("Cc", "Cs", "Cf")
    assert tokenize(text) == toks  # deterministic


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="동건지우사과를좋아한다 이가은는 applesNewYork'", max_size=40))
def test_tokenize_korean_alphabet(text: str) -> None:
    toks = tokenize(text)
    assert all(t for t in toks)
    literal_tokens(text)


def test_one_megabyte() -> None:
    english = ("The user's favourite fruits are mangoes and apples, said Caroline Smith. " * 14_000)[
        :1_000_000
    ]
    toks = tokenize(english)
    assert toks[:4] == ["user", "favourite", "fruit", "mango"] or "fruit" in toks[:10]
    assert len(toks) > 100_000
    sentence = "동건이는 어제 친구들과 서울에서 맛있는 사과를 먹었다. "
    korean = sentence * 1_500  # ~48k chars: all of it through Kiwi, in ~2k-char pieces
    assert tokenize(korean).count("사과") == 1_500
    mixed = english[:500_000] + " " + korean[:20_000]
    assert "사과" in tokenize(mixed)


def test_hangul_beyond_the_kiwi_budget_is_split_on_whitespace() -> None:
    text = "사과를 먹었다 " * ((KIWI_MAX_CHARS // 8) * 2)  # twice the budget
    toks = tokenize(text)
    analysed = toks.count("사과")
    assert 0.9 * KIWI_MAX_CHARS / 8 < analysed <= KIWI_MAX_CHARS / 8
    assert toks[-2:] == ["사과를", "먹었다"]  # the tail: surface eojeols
    assert tokenize("가" * 300_000) == []  # a space-free blob is not a word (MAX_TOKEN_CHARS)
    assert tokenize("x" * 300_000 + " 한국 사과") == ["한국", "사과"]  # no quadratic run scan


def test_kiwi_is_lazy_and_built_once_across_threads() -> None:
    code = textwrap.dedent(
        """
        import threading
        from keymem.text import korean as K
        from keymem.text import tokenize as T
        assert T.tokenize("plain English text only") == ["plain", "english", "text"]
        assert not T.kiwi_loaded(), "Kiwi built for English text"
        assert T.script_of("사과") == "hangul" and not T.kiwi_loaded()
        seen, results = [], []
        def tok():
            results.append(tuple(T.tokenize("동건이가 사과를 좋아한다")))
            seen.append(id(K._kiwi))
        threads = [threading.Thread(target=tok) for _ in range(6)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert T.kiwi_loaded()
        assert len(set(results)) == 1 and "사과" in results[0], results
        assert len(set(seen)) == 1, seen
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_tokenize_is_thread_safe() -> None:
    texts = ["동건이 좋아하는 과일은?", "The user's favourite fruit", "서울에서 New York까지"]
    expected = [tokenize(t) for t in texts]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                for t, e in zip(texts, expected, strict=True):
                    assert tokenize(t) == e
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


# ---------------------------------------------------------------------------- literal matching


def test_literal_tokens_ngrams() -> None:
    lt = literal_tokens("Where does Caroline Smith live in New York?")
    assert {"caroline smith", "new york", "live in new york", "caroline"} <= lt
    assert "york where" not in lt
    # n-grams stop at clause punctuation
    assert "paris london" not in literal_tokens("I went to Paris, London was next")
    assert literal_match("Dr. Smith", "Ask Dr. Smith about it")
    assert literal_match("Caroline Smith", "caroline smith's dog")
    assert literal_match("The Who", "I saw the who live")  # stopwords kept inside names
    assert not literal_match("New York", "new jersey and york")


def test_literal_korean_names_with_particles() -> None:
    assert literal_match("동건", "동건이 좋아하는 과일은?")
    assert literal_match("동건", "동건이가 좋아하는 과일은?")
    assert literal_match("동건", "동건은 어디 살아?")
    assert literal_match("동건", "동건씨는 어디 살아?")
    assert literal_match("동건", "(동건이)가 왔다")  # here Kiwi tags 동건이 as one NNP
    assert literal_match("지우", "지우가 사과를 좋아한다")
    assert literal_match("지우", "지우는 학교에 갔다")
    assert not literal_match("지우", "지우개를 샀다")  # an eraser is not a name
    assert not literal_match("건", "동건이 좋아하는 과일은?")  # fragment of a mis-split name
    assert literal_match("New York", "New York에 사는 동건")
    assert literal_key("  동건  ") == "동건"
    assert literal_key("Caroline  SMITH") == "caroline smith"


# ---------------------------------------------------------------------------- script_of / normalize_text


def test_script_of() -> None:
    assert script_of("hello world") == "latin"
    assert script_of("안녕하세요 반갑습니다") == "hangul"
    assert script_of("Привет мир") == "other"
    assert script_of("東京タワー") == "other"
    assert script_of("서울에서 New York까지 3시간 걸렸다") == "hangul"  # a quoted name stays Korean
    assert script_of("나는 iPhone을 좋아해") == "mixed"
    assert script_of("hello 안녕하세요 world 반가워") == "mixed"
    assert script_of("12345 !!") == "other"
    assert script_of("") == "other"


def test_normalize_text() -> None:
    assert normalize_text("  Hello\u200f  WORLD\n\tＡＢＣ ") == "hello world abc"
    assert normalize_text("Straße") == normalize_text("STRASSE")
    assert normalize_text("a\x00b") == "a b"
    assert normalize_text("") == ""
