"""Plot latency vs N from bench/scale.py JSON files (keymem vs the linear-scan baseline).

Usage::

    python bench/plot_scale.py bench/out/scale-*.json --out docs/scale.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", default="docs/scale.png")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((json.loads(Path(f).read_text()) for f in args.files), key=lambda r: r["memories"])
    ns = [r["memories"] for r in runs]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for ax, metric, title in ((axes[0], "recall_ms", "recall (MCP tool path)"),
                              (axes[1], "recall_direct_ms", "recall_direct (2 hops)")):
        for q, style in (("p50", "-o"), ("p95", "--o")):
            ax.plot(ns, [r[metric][q] for r in runs], style, color="tab:blue", label=f"keymem {q}")
            base = [r.get("baseline", {}).get(metric, {}).get(q) for r in runs]
            if any(b is not None for b in base):
                ax.plot([n for n, b in zip(ns, base, strict=True) if b is not None], [b for b in base if b is not None],
                        style, color="tab:gray", label=f"linear scan {q}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories (N)")
        ax.set_ylabel("ms")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("keymem latency vs store size (2 cores, MiniLM int8, reranker off)")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
