"""LadybugDB against Kuzu 0.11.3: the same scale benchmark on both engines, side by side, from one command.

Usage::

    python bench/ladybug_kuzu.py [--memories 10000,100000] [--baseline 7cd5a62] [--rounds 1] [--json OUT]

The baseline is keymem as it was on Kuzu 0.11.3 (commit 7cd5a62, the last one before the move),
checked out into a temporary git worktree; the candidate is this tree, or with ``--candidate REV``
that revision (391747f: the move to LadybugDB 0.22.0 with the baseline's retrieval code, so the
figures compare the engines alone). Both run
``bench/scale.py --memories N --no-baseline`` in a child process of this Python (the environment
must hold both ``kuzu`` and ``ladybug``; keymem's dependencies do), with that tree first on the
path. For each size the two engines run alternately (``--rounds`` times each, the baseline
first in odd rounds and second in even ones), so a machine that gets busier affects both alike.

Printed per size: writes/s (remember_batch), recall p50/p95, recall_direct p50/p95 (read-only
and with Hebbian updates), read_key and read_memory p50, reopen time, store size on disk, each
engine's median over its rounds and the ratio LadybugDB / Kuzu.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = (  # (label, path into scale.py's JSON, better when higher)
    ("writes/s", ("remember_batch_per_s",), True),
    ("recall p50 ms", ("recall_ms", "p50"), False),
    ("recall p95 ms", ("recall_ms", "p95"), False),
    ("recall_direct p50 ms", ("recall_direct_ms", "p50"), False),
    ("recall_direct p95 ms", ("recall_direct_ms", "p95"), False),
    ("recall_direct+Hebbian p95 ms", ("recall_direct_hebbian_ms", "p95"), False),
    ("read_key p50 ms", ("read_key_ms", "p50"), False),
    ("read_memory p50 ms", ("read_memory_ms", "p50"), False),
    ("reopen s", ("reopen_s",), False),
    ("store MB", ("store_mb",), False),
)


def _get(res: dict[str, Any], path: tuple[str, ...]) -> float:
    v: Any = res
    for k in path:
        v = v[k]
    return float(v)


def run_scale(tree: Path, n: int, queries: int, out: Path, keep: Path | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, str(tree / "bench" / "scale.py"), "--memories", str(n), "--queries", str(queries),
           "--no-baseline", "--json", str(out)]
    if keep is not None:  # the store stays there (bench/neighbourhood.py reads it); a kept store is reused
        cmd += ["--dir", str(keep)]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=str(tree))
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", default="10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--baseline", default="7cd5a62", help="git revision of keymem on Kuzu 0.11.3")
    p.add_argument("--candidate", default=None,
                   help="git revision on LadybugDB (default: this tree); 391747f has the baseline's retrieval code")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--json", default=None)
    p.add_argument("--keep", default=None, help="keep each store in KEEP/<engine>-<memories> (rerun: reused)")
    args = p.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="keymem-engines-") as tmp:
        base_tree = Path(tmp) / "kuzu"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.baseline],
                       check=True, capture_output=True)
        cand_tree = ROOT
        if args.candidate:
            cand_tree = Path(tmp) / "ladybug"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(cand_tree), args.candidate],
                           check=True, capture_output=True)
        try:
            for n in (int(x) for x in args.memories.split(",")):
                runs: dict[str, list[dict[str, Any]]] = {"kuzu": [], "ladybug": []}
                for r in range(args.rounds):
                    order = [("kuzu", base_tree), ("ladybug", cand_tree)]
                    for name, tree in order if r % 2 == 0 else order[::-1]:
                        print(f"{n} memories, round {r + 1}: {name} ...", file=sys.stderr, flush=True)
                        keep = Path(args.keep) / f"{name}-{n}" if args.keep else None
                        runs[name].append(run_scale(tree, n, args.queries, Path(tmp) / f"{name}-{n}-{r}.json", keep))
                results[str(n)] = _table(n, runs)
        finally:
            for tree in {base_tree, cand_tree} - {ROOT}:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))


def _table(n: int, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    print(f"\n{n:,} memories ({len(runs['kuzu'])} round(s) each; medians)")
    print(f"  {'figure':<30} {'Kuzu 0.11.3':>12} {'LadybugDB':>12} {'ratio':>7}")
    rows: dict[str, Any] = {}
    for label, path, higher in FIGURES:
        k = statistics.median(_get(x, path) for x in runs["kuzu"])
        lb = statistics.median(_get(x, path) for x in runs["ladybug"])
        ratio = lb / k if k else float("nan")
        worse = (ratio < 0.9) if higher else (ratio > 1.1)
        print(f"  {label:<30} {k:>12.2f} {lb:>12.2f} {ratio:>7.2f}{'  worse >10%' if worse else ''}")
        rows[label] = {"kuzu": k, "ladybug": lb, "ratio": round(ratio, 3)}
    return {"figures": rows, "runs": runs}


if __name__ == "__main__":
    main()
