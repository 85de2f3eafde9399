"""LexicalIndex: ranking, namespaces, instant writes, main+delta equivalence, rebuild races.

Real components only.  The reference below is a brute-force BM25 (Lucene variant) written
from the formula, independent of the index's data structures.

Benchmark behind the figures in ``keymem/index/lexical.py`` (run from the repository root;
not a test, no timed assertions anywhere; CPU times are robust on a shared machine)::

    python - <<'EOF'
    import itertools, json, random, statistics, time
    from keymem.index.lexical import LexicalIndex

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e6

    rng = random.Random(0)
    words = [w for w in json.load(open("tests/fixtures/minilm/tokenizer.json"))["model"]["vocab"]
             if w.isascii() and w.isalpha() and w.islower() and len(w) > 2]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(words))))

    def text(n=20):
        return " ".join(rng.choices(words, cum_weights=cum, k=n))

    def bench(label, ns="big"):
        cpu, wall = [], []
        for q in qs:
            c0, w0 = time.thread_time(), time.perf_counter()
            idx.search(q, 10, ns)
            cpu.append((time.thread_time() - c0) * 1e3)
            wall.append((time.perf_counter() - w0) * 1e3)
        cpu.sort(); wall.sort()
        print(f"{label}: CPU p50 {statistics.median(cpu):.2f} ms p95 {cpu[284]:.2f} ms | wall p50 {statistics.median(wall):.2f} p95 {wall[284]:.2f}")

    qs = [text(rng.randint(3, 6)) for _ in range(300)]
    docs = [(f"m{i}", text(rng.randint(14, 26)), "big") for i in range(100_000)]
    m0 = rss()
    idx = LexicalIndex()
    c0, w0 = time.process_time(), time.perf_counter()
    idx.add_many(docs)
    print(f"add_many 100k: CPU {time.process_time() - c0:.2f}s wall {time.perf_counter() - w0:.2f}s (build wall {idx.stats()['last_rebuild_seconds']:.2f}s), RSS +{rss() - m0:.0f} MB")
    bench("search, no delta")
    more = [text() for _ in range(10_000)]
    c0, w0 = time.process_time(), time.perf_counter()
    for i, x in enumerate(more):
        idx.add(f"n{i}", x, "big")
    idx.wait_rebuild()
    print(f"add(): CPU {(time.process_time() - c0) / len(more) * 1e3:.3f} ms amortised (all threads, incl. {idx.stats()['rebuilds'] - 1} background rebuilds), wall {(time.perf_counter() - w0) / len(more) * 1e3:.3f} ms")
    for i in range(4_000):
        idx.add(f"p{i}", text(), "big")
    idx.wait_rebuild()
    print("delta now", idx.stats("big")["delta"])
    bench("search, ~4k delta")
    for i in range(1_000):
        idx.remove(f"m{i}")
    idx.wait_rebuild()
    bench("search, delta + 1k masked")
    c0, w0 = time.process_time(), time.perf_counter()
    idx.flush()
    print(f"full rebuild of {len(idx)} docs: CPU {time.process_time() - c0:.2f}s wall {time.perf_counter() - w0:.2f}s")
    bench("search, right after rebuild")
    for i in range(1_000):
        idx.add(f"s{i}", text(), "small")
    bench("search, 1k-doc namespace next to it", "small")
    print(f"RSS total +{rss() - m0:.0f} MB")
    EOF
"""

from __future__ import annotations

import math
import random
import threading
from collections import Counter

import bm25s
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keymem.index.bm25 import K1, B, _VectorizedBM25, capped, relevance
from keymem.index.lexical import LexicalIndex
from keymem.text.stem import stem
from keymem.text.tokenize import TERMS_SEP, tokenize

EPS = 1e-4


def index_terms(text: str) -> list[str]:
    """The terms the index scores ``text`` by: the tokenizer's, each stemmed."""
    return [stem(t) for t in tokenize(text)]

# Words tokenize() leaves untouched (no stopwords, no plural endings).
WORDS = ["apple", "mango", "paris", "river", "green", "cloud", "piano", "tiger", "lemon", "storm"]


def reference(docs: dict[str, tuple[str, str]], namespace: str, query: str, avgdl: float) -> dict[str, float]:
    """Brute-force BM25 (Lucene) over the live docs of one namespace."""
    live = {d: index_terms(text) for d, (text, ns) in docs.items() if ns == namespace}
    n = len(live)
    df: Counter[str] = Counter()
    for toks in live.values():
        df.update(set(toks))
    out: dict[str, float] = {}
    for d, toks in live.items():
        tf = Counter(toks)
        s = 0.0
        for t in set(index_terms(query)):
            if tf[t]:
                w = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += w * tf[t] / (tf[t] + K1 * (1 - B + B * len(toks) / avgdl))
        out[d] = s
    return out


def assert_matches_reference(
    idx: LexicalIndex, docs: dict[str, tuple[str, str]], namespace: str, query: str, k: int = 5
) -> None:
    st_ns = idx.stats(namespace)
    if st_ns["main_rows"] == 0 and st_ns["docs"]:
        assert st_ns["avgdl"] == pytest.approx(st_ns["live_avgdl"] or 1.0)  # no main: exact stats
    ref = reference(docs, namespace, query, float(st_ns["avgdl"]))
    expected = sorted(((d, s) for d, s in ref.items() if s > 0), key=lambda x: (-x[1], x[0]))[:k]
    got = idx.search(query, k, namespace)
    assert len(got) == len(expected), (got, expected)
    # Sorted scores agree pointwise, and every returned id carries its reference score: so the
    # ranking can only differ between documents whose scores are within EPS of each other.
    for (_, gs), (_, es) in zip(got, expected, strict=True):
        assert gs == pytest.approx(es, rel=EPS, abs=EPS)
    for gid, gs in got:
        assert ref[gid] == pytest.approx(gs, rel=EPS, abs=EPS)
    scored = idx.score_docs(query, list(ref))
    for d, s in ref.items():
        assert scored[d] == pytest.approx(s, rel=EPS, abs=EPS)


# ---------------------------------------------------------------------------- basics


CORPUS = {
    "fruit": ("Alice's favourite fruit is the mango; she eats mangoes daily", "ns"),
    "car": ("Bob drives a red car to work in Paris", "ns"),
    "weather": ("The weather in Paris is rainy in November", "ns"),
    "piano": ("Alice practises the piano every evening", "ns"),
    "job": ("Carol started a new job as a nurse in Lyon", "ns"),
}


@pytest.mark.parametrize("background", [False, True])
def test_rare_terms_rank_first(background: bool) -> None:
    idx = LexicalIndex(background=background)
    for d, (text, ns) in CORPUS.items():
        idx.add(d, text, ns)
    assert idx.search("which fruit does Alice like?", 3, "ns")[0][0] == "fruit"
    assert idx.search("Alice piano lessons", 3, "ns")[0][0] == "piano"
    assert [d for d, _ in idx.search("rainy Paris", 5, "ns")] == ["weather", "car"]
    assert idx.search("nurse", 5, "ns") == [("job", pytest.approx(idx.search("nurse", 5, "ns")[0][1]))]
    assert idx.search("submarine", 5, "ns") == []
    assert idx.search("the of and", 5, "ns") == []  # stopwords only
    assert idx.search("mango", 0, "ns") == []
    assert all(s > 0 for _, s in idx.search("Alice Paris", 10, "ns"))
    for q in ["alice", "paris rainy november", "mango daily fruit", "red car"]:
        assert_matches_reference(idx, CORPUS, "ns", q)
    assert len(idx) == 5 and "car" in idx and "nope" not in idx


def test_korean_documents() -> None:
    idx = LexicalIndex()
    idx.add("k1", "동건은 사과를 좋아한다", "ko")
    idx.add("k2", "지우는 바나나를 싫어한다", "ko")
    idx.add("k3", "서울의 날씨는 맑다", "ko")
    assert idx.search("동건이 좋아하는 과일은?", 3, "ko")[0][0] == "k1"
    assert idx.search("지우가 싫어하는 것", 3, "ko")[0][0] == "k2"


def test_word_forms_meet_through_their_stem() -> None:
    idx = LexicalIndex(rebuild_min=2, background=False)
    idx.add_many([("trip", "We camped by the lake and went hiking", "ns"), ("art", "She paints landscapes", "ns"),
                  ("other", "A quiet evening at home", "ns")])
    vocab = idx.stats()["vocab"]
    assert [d for d, _ in idx.search("When did they go camping?", 5, "ns")] == ["trip"]
    assert [d for d, _ in idx.search("painting", 5, "ns")] == ["art"]
    assert idx.score_docs("hikes camp", ["trip"])["trip"] > idx.score_docs("hikes", ["trip"])["trip"] > 0
    assert idx.stats()["vocab"] == vocab  # queries add no terms
    idx.flush()  # the same through a main
    assert [d for d, _ in idx.search("camping", 5, "ns")] == ["trip"]


def test_namespace_isolation() -> None:
    idx = LexicalIndex(rebuild_min=4, background=False)
    for i in range(12):
        idx.add(f"a{i}", f"shared secret apple {WORDS[i % 10]}", "A")
    before = idx.search("secret apple", 20, "A")
    for i in range(30):
        idx.add(f"b{i}", "shared secret apple tiger tiger", "B")
    assert all(d.startswith("a") for d, _ in idx.search("secret apple tiger", 50, "A"))
    assert all(d.startswith("b") for d, _ in idx.search("secret apple tiger", 50, "B"))
    assert idx.search("secret", 5, "C") == []
    # B's writes do not move A's scores: statistics are per namespace.
    assert idx.search("secret apple", 20, "A") == before
    idx.add("a0", "moved to B now", "B")
    assert "a0" not in {d for d, _ in idx.search("shared secret", 50, "A")}
    assert "a0" in {d for d, _ in idx.search("moved", 50, "B")}
    assert idx.namespaces() == ["A", "B"]


@pytest.mark.parametrize("flushed", [False, True])
def test_remove_and_replace_visible_on_next_search(flushed: bool) -> None:
    idx = LexicalIndex(rebuild_min=2, background=False)
    idx.add_many([("x", "apple river", "ns"), ("y", "mango river", "ns"), ("z", "lemon storm", "ns")])
    if flushed:
        idx.flush()
        assert idx.stats("ns")["main"] == 3  # the next writes hit main rows (masking path)
    idx.remove("x")
    assert [d for d, _ in idx.search("apple river", 5, "ns")] == ["y"]
    idx.add("y", "tiger cloud", "ns")  # replace: old text gone at once
    assert idx.search("mango", 5, "ns") == []
    assert [d for d, _ in idx.search("tiger", 5, "ns")] == ["y"]
    idx.remove("nope")  # unknown id: no-op
    idx.remove("x")  # twice: no-op
    assert len(idx) == 2
    assert [d for d, _ in idx.search("lemon cloud", 5, "ns", exclude={"z"})] == ["y"]
    assert idx.search("lemon", 5, "ns", exclude=["z"]) == []


def test_exclude_does_not_consume_k() -> None:
    idx = LexicalIndex(rebuild_min=5, background=False)
    idx.add_many((f"d{i}", "apple " * (1 + i % 4) + WORDS[i % 10], "ns") for i in range(40))
    idx.add_many((f"e{i}", "apple mango", "ns") for i in range(3))  # some in the delta too
    full = idx.search("apple", 40, "ns")
    top = [d for d, _ in full]
    skip = set(top[:7])
    got = idx.search("apple", 5, "ns", exclude=skip)
    assert [d for d, _ in got] == top[7:12]


def test_score_docs() -> None:
    idx = LexicalIndex(rebuild_min=3, background=False)
    docs = {f"d{i}": (f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} river", "ns") for i in range(10)}
    docs["o"] = ("apple apple apple", "other")
    idx.add_many((d, t, ns) for d, (t, ns) in docs.items())
    idx.add("late", "apple green", "ns")
    docs["late"] = ("apple green", "ns")
    scores = idx.score_docs("apple green", ["d0", "d1", "late", "o", "unknown"])
    assert "unknown" not in scores
    hits = dict(idx.search("apple green", 20, "ns"))
    for d in ("d0", "d1", "late"):
        assert scores[d] == pytest.approx(hits.get(d, 0.0), rel=EPS, abs=EPS)
    assert scores["o"] > 0  # scored against its own namespace
    assert idx.score_docs("submarine", ["d0"]) == {"d0": 0.0}


def test_capped_and_relevance() -> None:
    assert capped(0.0) == 0.0
    assert capped(1.0) == 0.5
    assert capped(-3.0) == 0.0
    assert capped(float("nan")) == 0.0
    assert 0.99 < capped(200.0) < 1.0
    assert capped(2.0) > capped(1.0)
    text = "Alice's favourite fruit is the mango"
    one = relevance("mango", text)
    two = relevance("mango fruit", text)
    assert 0 < one < two
    assert relevance("submarine", text) == 0.0
    assert relevance("", text) == 0.0
    assert relevance("mango", "") == 0.0
    assert relevance("mango", "mango") > relevance("mango", "mango " + "river " * 30)
    assert 0.3 < capped(one) < 0.6  # one matched term in a short text reads as moderate


def test_stats_and_flush() -> None:
    idx = LexicalIndex(rebuild_min=10, background=False)
    idx.add_many((f"d{i}", f"apple {WORDS[i % 10]}", "ns") for i in range(25))
    for i in range(5):
        idx.remove(f"d{i}")
    s = idx.stats()
    assert s["docs"] == 20 and s["namespaces"] == 1 and s["masked"] == 5
    assert {"main", "delta", "masked", "last_rebuild_seconds", "rebuilds", "vocab"} <= set(s)
    idx.flush()
    s = idx.stats()
    assert (s["main"], s["delta"], s["masked"]) == (20, 0, 0)
    ns = idx.stats("ns")
    assert ns["avgdl"] == pytest.approx(ns["live_avgdl"])
    for i in range(5, 25):
        idx.remove(f"d{i}")
    idx.flush()
    assert idx.stats()["docs"] == 0 and idx.search("apple", 5, "ns") == []
    idx.add("again", "apple", "ns")
    assert [d for d, _ in idx.search("apple", 5, "ns")] == ["again"]


# ---------------------------------------------------------------------------- equivalence


def test_vectorized_builder_matches_bm25s() -> None:
    rng = np.random.default_rng(3)
    vocab_size = 300
    p = 1 / np.arange(1, vocab_size + 1)
    p /= p.sum()
    docs = [rng.choice(vocab_size, size=int(rng.integers(0, 30)), p=p) for _ in range(2000)]
    flat = np.concatenate(docs)
    uniq, inv = np.unique(flat, return_inverse=True)
    ends = np.cumsum([len(d) for d in docs])
    corpus = [inv[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    vocab = {int(u): i for i, u in enumerate(uniq)}
    fast = _VectorizedBM25(k1=K1, b=B, method="lucene")
    fast.index((corpus, dict(vocab)), create_empty_token=False, show_progress=False)
    stock = bm25s.BM25(k1=K1, b=B, method="lucene")
    stock.index(([c.tolist() for c in corpus], dict(vocab)), create_empty_token=False, show_progress=False)
    assert np.array_equal(fast.scores["indptr"], stock.scores["indptr"])
    assert np.array_equal(fast.scores["indices"], stock.scores["indices"])
    np.testing.assert_allclose(fast.scores["data"], stock.scores["data"], rtol=1e-6)
    assert fast.scores["data"].dtype == stock.scores["data"].dtype


def test_after_flush_equals_bm25s_from_scratch() -> None:
    rng = random.Random(5)
    idx = LexicalIndex(rebuild_min=20, background=False)
    docs = {f"d{i}": " ".join(rng.choices(WORDS, k=rng.randint(1, 9))) for i in range(300)}
    idx.add_many((d, t, "ns") for d, t in docs.items())
    for i in range(0, 300, 7):
        idx.remove(f"d{i}")
        docs.pop(f"d{i}")
    for i in range(300, 340):
        docs[f"d{i}"] = " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))
        idx.add(f"d{i}", docs[f"d{i}"], "ns")
    idx.flush()
    ids = list(docs)
    stock = bm25s.BM25(k1=K1, b=B, method="lucene")
    stock.index([tokenize(docs[d]) for d in ids], show_progress=False)
    for q in ["apple", "mango storm", "tiger tiger piano", "cloud lemon river green"]:
        expected = stock.get_scores(list(set(tokenize(q))))
        got = dict(idx.search(q, len(ids), "ns"))
        for d, e in zip(ids, expected, strict=True):
            assert got.get(d, 0.0) == pytest.approx(float(e), rel=1e-5, abs=1e-6)


op = st.one_of(
    st.tuples(
        st.just("add"),
        st.integers(0, 14),
        st.sampled_from(["A", "B"]),
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=8),
    ),
    st.tuples(st.just("remove"), st.integers(0, 14)),
    st.tuples(
        st.just("bulk"),
        st.lists(
            st.tuples(
                st.integers(0, 14),
                st.sampled_from(["A", "B"]),
                st.lists(st.sampled_from(WORDS), min_size=0, max_size=8),
            ),
            max_size=8,
        ),
    ),
    st.tuples(st.just("flush")),
    st.tuples(st.just("check"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=60), rebuild_min=st.integers(1, 6))
def test_main_plus_delta_matches_reference(ops: list[tuple], rebuild_min: int) -> None:  # type: ignore[type-arg]
    idx = LexicalIndex(rebuild_min=rebuild_min, rebuild_ratio=0.3, background=False)
    docs: dict[str, tuple[str, str]] = {}
    for o in ops:
        if o[0] == "add":
            _, i, ns, words = o
            docs[f"d{i}"] = (" ".join(words), ns)
            idx.add(f"d{i}", " ".join(words), ns)
        elif o[0] == "remove":
            docs.pop(f"d{o[1]}", None)
            idx.remove(f"d{o[1]}")
        elif o[0] == "bulk":
            for i, ns, words in o[1]:
                docs[f"d{i}"] = (" ".join(words), ns)
            idx.add_many((f"d{i}", " ".join(words), ns) for i, ns, words in o[1])
        elif o[0] == "flush":
            idx.flush()
        else:
            for ns in ("A", "B"):
                assert_matches_reference(idx, docs, ns, " ".join(o[1]))
    assert len(idx) == len(docs)
    for ns in ("A", "B"):
        for q in ["apple", "mango paris", "river green cloud"]:
            assert_matches_reference(idx, docs, ns, q, k=20)
    idx.flush()
    for ns in ("A", "B"):
        if any(n == ns for _, n in docs.values()):
            assert idx.stats(ns)["avgdl"] == pytest.approx(idx.stats(ns)["live_avgdl"] or 1.0)
        for q in ["apple tiger", "storm lemon piano"]:
            assert_matches_reference(idx, docs, ns, q, k=20)


# ---------------------------------------------------------------------------- concurrency


def test_background_rebuild_racing_with_writers_loses_nothing() -> None:
    idx = LexicalIndex(rebuild_min=150, rebuild_ratio=0.05, background=True)
    idx.add_many((f"pre{i}", f"common filler {WORDS[i % 10]} pre{i}x", "main") for i in range(2000))
    idx.add_many((f"oth{i}", "common filler secret", "other") for i in range(300))
    n = 2500
    errors: list[BaseException] = []
    removed: set[str] = set()
    to_remove: list[str] = []
    cv = threading.Condition()
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(n):
                idx.add(f"w{i}", f"common filler {WORDS[i % 10]} zq{i}x", "main")
                # A write is visible to the very next search, rebuild or not.
                assert [d for d, _ in idx.search(f"zq{i}x", 3, "main")] == [f"w{i}"]
                if i % 5 == 0:
                    with cv:
                        to_remove.append(f"w{i}")
                        cv.notify()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()
            with cv:
                cv.notify()

    def remover() -> None:
        try:
            while True:
                with cv:
                    while not to_remove and not done.is_set():
                        cv.wait(0.05)
                    batch, to_remove[:] = list(to_remove), []
                for d in batch:
                    idx.remove(d)
                    assert idx.search(f"zq{d[1:]}x", 3, "main") == []
                    removed.add(d)
                if done.is_set() and not to_remove:
                    return
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    def reader() -> None:
        try:
            while not done.is_set():
                for d, s in idx.search("common secret filler", 50, "main"):
                    assert not d.startswith("oth") and s > 0
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in (writer, remover, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    assert idx.wait_rebuild(timeout=60)
    assert idx.stats()["rebuilds"] >= 3
    assert idx.stats()["rebuild_failures"] == 0
    for i in range(n):
        d = f"w{i}"
        hits = [h for h, _ in idx.search(f"zq{i}x", 3, "main")]
        assert hits == ([] if d in removed else [d]), d
    assert len(idx) == 2000 + 300 + n - len(removed)
    assert len(removed) == n // 5
    idx.flush()
    assert idx.stats()["delta"] == 0 and idx.stats()["masked"] == 0
    assert [h for h, _ in idx.search("zq1x", 3, "main")] == ["w1"]


def test_writes_during_a_build_are_carried_into_the_swap() -> None:
    """Drive snapshot -> build -> swap by hand with writes in between (deterministic race)."""
    from keymem.index.bm25 import _build_main

    idx = LexicalIndex(rebuild_min=10**6, background=False)
    docs = {
        "a": ("apple river", "ns"),
        "b": ("mango river", "ns"),
        "c": ("lemon storm", "ns"),
    }
    idx.add_many((d, t, ns) for d, (t, ns) in docs.items())
    idx.flush()
    idx.add("d", "piano cloud", "ns")  # in the delta at snapshot time
    docs["d"] = ("piano cloud", "ns")
    begun = idx._begin_rebuild("ns")
    assert begun is not None
    shard, snapshot = begun
    assert idx._begin_rebuild("ns") is None  # one rebuild per namespace at a time
    main = _build_main(snapshot)
    # Writes while the build runs: replace a main doc and a delta doc, remove one, add one.
    for d, t in [("a", "tiger green"), ("d", "storm tiger"), ("e", "apple cloud")]:
        idx.add(d, t, "ns")
        docs[d] = (t, "ns")
    idx.remove("b")
    docs.pop("b")
    assert {h for h, _ in idx.search("tiger", 5, "ns")} == {"a", "d"}  # visible mid-build
    idx._finish_rebuild("ns", shard, main, 0.0)
    st_ns = idx.stats("ns")
    assert (st_ns["main"], st_ns["delta"], st_ns["masked"]) == (1, 3, 3)  # only c survived as-is
    assert idx.search("mango", 5, "ns") == []
    assert idx.search("river", 5, "ns") == []  # old texts of a and b are masked
    assert [h for h, _ in idx.search("piano", 5, "ns")] == []  # old text of d
    for q in ["apple", "tiger", "storm", "cloud lemon", "apple river tiger storm cloud"]:
        assert_matches_reference(idx, docs, "ns", q, k=10)
    idx.flush()
    for q in ["apple", "tiger storm"]:
        assert_matches_reference(idx, docs, "ns", q, k=10)


def test_equal_scores_are_ordered_by_id() -> None:
    idx = LexicalIndex(rebuild_min=3, background=False)
    idx.add_many((d, "apple river", "ns") for d in ["d3", "d1", "d5", "d2", "d4"])
    idx.flush()
    idx.add("d0", "apple river", "ns")  # same score, in the delta
    assert [d for d, _ in idx.search("apple", 4, "ns")] == ["d0", "d1", "d2", "d3"]


def test_load_fills_mains_that_score_and_change_like_added_documents() -> None:
    """``load`` (opening a store) builds each namespace's main directly; everything after it is exact."""
    rng = random.Random(11)
    docs = {f"d{i}": (" ".join(rng.choices(WORDS, k=rng.randint(0, 8))), ("a", "b")[i % 3 == 0]) for i in range(400)}
    idx = LexicalIndex(rebuild_min=50, background=False)
    given = [(d, TERMS_SEP.join(tokenize(t)), ns) for d, (t, ns) in docs.items()]
    given.insert(5, ("d7", TERMS_SEP.join(tokenize("storm storm lemon")), docs["d7"][1]))  # the last one counts
    # pages as the store gives them: a namespace, ids, joined terms
    pages = [(ns, [d for d, _, n in part if n == ns], [t for _, t, n in part if n == ns])
             for part in (given[:100], given[100:101], [], given[101:]) for ns in ("a", "b", "c")]
    assert ("c", [], []) in pages  # a namespace whose page holds nothing to load (its terms are missing)
    idx.load(pages)
    assert idx.stats()["delta"] == 0 and idx.stats()["main"] == len(docs) == len(idx)
    assert docs["d7"][1] == "a" and idx.stats("a")["masked"] == 1 and idx.stats("b")["masked"] == 0
    for ns in ("a", "b"):
        for q in ["apple", "storm lemon", "piano cloud tiger", "mango river green paris"]:
            assert_matches_reference(idx, docs, ns, q, k=10)
    with pytest.raises(RuntimeError, match="empty index"):
        idx.load([("a", ["x"], ["apple"])])
    # Replace, remove and add after the load, then let rebuilds run: still exact.
    for i in range(0, 400, 7):
        d = f"d{i}"
        idx.add(d, "tiger tiger paris", docs[d][1])
        docs[d] = ("tiger tiger paris", docs[d][1])
    for i in range(3, 400, 11):
        idx.remove(f"d{i}")
        docs.pop(f"d{i}", None)
    idx.add("late", "lemon piano", "a")
    docs["late"] = ("lemon piano", "a")
    assert "late" in idx and "d3" not in idx and len(idx) == len(docs)
    for ns in ("a", "b"):
        for q in ["tiger paris", "lemon piano", "apple"]:
            assert_matches_reference(idx, docs, ns, q, k=10)
    idx.flush()
    assert idx.stats()["rebuilds"] >= 1 and idx.stats()["delta"] == 0
    for ns in ("a", "b"):
        for q in ["tiger paris", "lemon piano", "storm apple"]:
            assert_matches_reference(idx, docs, ns, q, k=10)
