"""MCP over HTTP under load, beside stdio clients, on one daemon: errors, lost writes, latency.

    python bench/scale.py --memories 10000 --dir D --build-only     # a 10k store, once (~90 s)
    python bench/http_load.py --store D/data [--http-clients 8] [--stdio-clients 2] [--calls 250]
                              [--rounds R] [--kill-daemon-after N] [--json OUT]

The store is copied to a temporary data dir; a real ``keymem serve --http`` process and its daemon
serve it (MiniLM int8, reranker off). Measured in one run:

1. **Transport cost, quiet**: the same ``recall`` queries over one HTTP session and one stdio
   session, interleaved call by call (200 each): p50/p95 of each and the difference.
2. **Load**: ``--http-clients`` MCP sessions over streamable HTTP (SDK client, one bearer token
   each) and ``--stdio-clients`` real ``keymem`` stdio servers, each client in a process of its own
   (as each agent's MCP client is), started together, ``--calls`` mixed calls
   each (recall 45%, remember 20%, read_key 15%, read_memory 10%, browse_keys 5%, correct 5%): one
   seeded sequence that every client makes from its own starting point, so both transports make
   the same calls. Errors (tool errors and transport failures), per-transport
   per-tool p50/p95, and recall p95 over HTTP against stdio in the same run.
3. **Lost writes**: every write a client saw acknowledged (``remember`` ids, ``correct``'s new ids)
   is read back from the daemon after the load; a missing one is a lost write. (A version two
   corrections old is deleted by design, ``correct`` keeps one previous version: not checked.)
   With ``--kill-daemon-after N`` the daemon is SIGKILLed once N writes were acknowledged: the
   HTTP server starts a new one and retries the call in flight with the same request id.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import MODEL_NAME, minilm_dir, summary_ms  # noqa: E402

SERVER = [sys.executable, "-m", "keymem.cli.main"]
MIX = (("recall", 45), ("remember", 20), ("read_key", 15), ("read_memory", 10), ("browse_keys", 5), ("correct", 5))
WRITES = ("remember", "correct")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(data_dir: Path, model: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_")}
    env.update(KEYMEM_DATA_DIR=str(data_dir), EMBEDDING_BACKEND="local", LOCAL_EMBEDDING_MODEL=MODEL_NAME,
               LOCAL_EMBEDDING_MODEL_PATH=str(model), KEYMEM_RERANK="false", HF_HUB_OFFLINE="1",
               KEYMEM_LOG_LEVEL="WARNING")
    return env


class Client:
    """One MCP session (HTTP or stdio) that records each call's latency and outcome."""

    def __init__(self, name: str, transport: str, session: Any) -> None:
        self.name, self.transport, self.session = name, transport, session
        self.latency: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.acked: list[str] = []
        self.corrected: dict[str, str] = {}  # old id -> the id correct() gave its new version

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        t0 = time.perf_counter()
        try:
            res = await self.session.call_tool(tool, args)
        except Exception as exc:  # a transport failure: the client saw no answer
            self.errors.append(f"{self.name} {tool}: {type(exc).__name__}: {exc}")
            return None
        self.latency.setdefault(tool, []).append(time.perf_counter() - t0)
        if res.is_error:
            self.errors.append(f"{self.name} {tool}: {res.content[0].text[:200]}")
            return None
        data = res.structured_content or {}
        if tool in WRITES and data.get("memory_id"):
            self.acked.append(data["memory_id"])
            if tool == "correct":
                self.corrected[args["memory_id"]] = data["memory_id"]
        return data

    def must_exist(self) -> list[str]:
        """The acknowledged writes still owed: heads of correction chains and their previous versions
        (``correct`` keeps one previous version, so the generation before that is deleted by design)."""
        out = []
        for mid in self.acked:
            nxt = self.corrected.get(mid)
            if nxt is None or nxt not in self.corrected:
                out.append(mid)
        return out


def plan(seed: int, n: int, words: list[str], key_ids: list[str], memory_ids: list[str], who: str) -> list[Any]:
    """The seeded call sequence of one client: (tool, args) or ("correct", None) for its own last write."""
    rng = random.Random(seed)
    tools = [t for t, w in MIX for _ in range(w)]
    out: list[Any] = []
    for i in range(n):
        tool = rng.choice(tools)
        if tool == "recall":
            out.append((tool, {"query": " ".join(rng.sample(words, rng.randint(1, 3)))}))
        elif tool == "remember":
            ks = rng.sample(words, 2)
            out.append((tool, {"content": f"{who} note {i}: {' '.join(rng.sample(words, 8))}", "keys": ks}))
        elif tool == "read_key":
            out.append((tool, {"key_id": rng.choice(key_ids), "limit": 5}))
        elif tool == "read_memory":
            out.append((tool, {"memory_id": rng.choice(memory_ids)}))
        elif tool == "browse_keys":
            out.append((tool, {"limit": 20, "offset": rng.randint(0, 200)}))
        else:
            out.append(("correct", {"content": f"{who} corrected note {i}: {' '.join(rng.sample(words, 8))}"}))
    return out


def client_process(conn: Any, transport: str, name: str, url: str, token: str, env: dict[str, str],
                   calls: list[Any], acked_total: Any) -> None:
    """One client in a process of its own (an agent's MCP client is its own process): connects, says
    "ready", waits for "go", makes its calls, sends back what it saw."""
    async def main() -> None:
        opener = http_session(url, token) if transport == "http" else stdio_session(env)
        async with opener as session:
            c = Client(name, transport, session)
            conn.send("ready")
            await asyncio.to_thread(conn.recv)
            servers = stdio_servers([os.getpid()])  # its stdio server (none for HTTP)
            cpu0 = (time.process_time(), sum(cpu_s(p) for p in servers))
            progress = {"acked": 0, "calls": 0}
            for tool, args in calls:
                if tool == "correct":
                    if not c.acked:
                        continue
                    args = {**args, "memory_id": c.acked[-1]}
                before = len(c.acked)
                await c.call(tool, args)
                if len(c.acked) > before:
                    with acked_total.get_lock():
                        acked_total.value += 1
                progress["calls"] += 1
            conn.send({"latency": c.latency, "errors": c.errors, "acked": c.acked, "corrected": c.corrected,
                       "calls": progress["calls"], "client_cpu_s": time.process_time() - cpu0[0],
                       "stdio_server_cpu_s": sum(cpu_s(p) for p in servers) - cpu0[1]})

    asyncio.run(main())


@contextlib.asynccontextmanager
async def http_session(url: str, token: str) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=300) as hc,
                streamable_http_client(url, http_client=hc) as (r, w, *_), ClientSession(r, w) as s):
        await s.initialize()
        yield s


@contextlib.asynccontextmanager
async def stdio_session(env: dict[str, str]) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=env)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield s


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stdio_servers(parents: list[int]) -> list[int]:
    """The ``keymem`` stdio servers these processes started (the SDK's stdio client spawns them)."""
    mine, found = {str(p) for p in parents}, []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if ppid in mine and b"keymem.cli.main" in cmd and b"serve" not in cmd:
                found.append(int(entry.name))
    return found


def p95_difference_interval(http: list[float], stdio: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval (seeded) of p95(HTTP) - p95(stdio), in ms: how far the sampled
    difference can be trusted (it leaves out round-to-round variation, which the rounds show)."""
    import numpy as np

    rng = np.random.default_rng(0)
    h, s = np.asarray(http) * 1000, np.asarray(stdio) * 1000
    diffs = [np.percentile(rng.choice(h, h.size), 95) - np.percentile(rng.choice(s, s.size), 95) for _ in range(draws)]
    low, high = np.percentile(diffs, [2.5, 97.5])
    return round(float(low), 1), round(float(high), 1)


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process in MiB (Linux /proc)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(rest.split()[0]) / 1024, 1)
    return out


def daemon_call(env: dict[str, str], method: str, params: dict[str, Any] | None = None) -> Any:
    from keymem.server.client import DaemonClient
    from keymem.settings import load_settings

    c = DaemonClient(load_settings(env), start=False)
    try:
        return c.call(method, params or {}, timeout=120)
    finally:
        c.close()


async def killer(data_dir: Path, after: int, acked: Any, progress: dict[str, int], report: dict[str, Any]) -> None:
    while acked.value < after:
        if progress["done"]:
            return
        await asyncio.sleep(0.02)
    pid = int((data_dir / "daemon.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    report["killed"] = {"pid": pid, "after_acked_writes": acked.value}


async def plan_material(probe: Any) -> tuple[list[str], list[str], list[str]]:
    """The load's key ids, words and memory ids, read through one session: the first 300 keys,
    their words, and up to 10 memories of each of the first 30 keys."""
    listed = (await probe.call_tool("browse_keys", {"limit": 300})).structured_content or {}
    keys = listed.get("keys") or []
    key_ids = [k["key_id"] for k in keys]
    words = sorted({w for k in keys for w in k["key"].split() if w.isalpha() and len(w) > 2})[:300]
    memory_ids: list[str] = []
    for kid in key_ids[:30]:
        page = (await probe.call_tool("read_key", {"key_id": kid, "limit": 10})).structured_content or {}
        memory_ids += [m["memory_id"] for m in page.get("memories") or []]
    return key_ids, words, memory_ids


async def measure(args: argparse.Namespace, url: str, token: str, env: dict[str, str], data_dir: Path,
                  front_pid: int) -> dict[str, Any]:
    async with http_session(url, token) as probe:
        key_ids, words, memory_ids = await plan_material(probe)
    report: dict[str, Any] = {"keys_sampled": len(key_ids), "memories_sampled": len(memory_ids)}

    # 1. transport cost, quiet: interleaved recall over HTTP and stdio
    rng = random.Random(11)
    queries = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(args.quiet_calls)]
    async with http_session(url, token) as hs, stdio_session(env) as ss:
        h, s = Client("quiet-http", "http", hs), Client("quiet-stdio", "stdio", ss)
        for q in queries[:10]:  # warm both paths
            await h.call("recall", {"query": q})
            await s.call("recall", {"query": q})
        h.latency.clear()
        s.latency.clear()
        for i, q in enumerate(queries):
            pair = (h, s) if i % 2 == 0 else (s, h)
            for c in pair:
                await c.call("recall", {"query": q})
    report["quiet"] = {"http_recall_ms": summary_ms(h.latency["recall"], 0.5, 0.95),
                       "stdio_recall_ms": summary_ms(s.latency["recall"], 0.5, 0.95),
                       "errors": h.errors + s.errors}

    # 2. load: HTTP and stdio clients at once, ``--rounds`` times (new sessions each round)
    rss_before = rss_mb(front_pid)
    progress = {"acked": 0, "calls": 0, "done": 0}
    daemon_pids = {int((data_dir / "daemon.pid").read_text().split()[0])}  # more than one: a restart
    clients: list[Client] = []
    rounds: list[dict[str, float]] = []
    wall, cpu = 0.0, [0.0, 0.0, 0.0, 0.0]
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    acked_total = ctx.Value("i", 0)
    for r in range(args.rounds):
        names = [(f"http-{i}-r{r}", "http") for i in range(args.http_clients)]
        names += [(f"stdio-{i}-r{r}", "stdio") for i in range(args.stdio_clients)]

        # every client makes the same calls (one seeded sequence, its own content, a rotated start),
        # so HTTP and stdio latencies are of the same queries, not of two draws of them
        def rotated(i: int, who: str, r: int = r, n: int = len(names)) -> list[Any]:
            calls = plan(1000 + r, args.calls, words, key_ids, memory_ids, who)
            k = (i * args.calls) // n
            return calls[k:] + calls[:k]

        procs, conns = [], []
        for i, (who, transport) in enumerate(names):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=client_process, args=(child, transport, who, url, token, env,
                                                            rotated(i, who), acked_total))
            proc.start()
            procs.append(proc)
            conns.append(parent)
        for conn in conns:
            assert await asyncio.to_thread(conn.recv) == "ready"
        daemon_pid = int((data_dir / "daemon.pid").read_text().split()[0])
        cpu0 = (cpu_s(front_pid), cpu_s(daemon_pid))
        t0 = time.perf_counter()
        for conn in conns:
            conn.send("go")
        progress["done"] = 0
        kill = (killer(data_dir, args.kill_daemon_after, acked_total, progress, report)
                if args.kill_daemon_after and r == 0 else None)
        kill_task = asyncio.ensure_future(kill) if kill else None
        results = [await asyncio.to_thread(conn.recv) for conn in conns]
        progress["done"] = 1
        daemon_pids |= {daemon_pid, int((data_dir / "daemon.pid").read_text().split()[0])}
        wall += time.perf_counter() - t0
        cpu[0] += cpu_s(front_pid) - cpu0[0]
        cpu[1] += cpu_s(daemon_pid) - cpu0[1] if "killed" not in report else float("nan")
        cpu[2] += sum(got["stdio_server_cpu_s"] for got in results)
        cpu[3] += sum(got["client_cpu_s"] for got in results)
        if kill_task:
            await kill_task
        for proc in procs:
            proc.join(timeout=60)
        this: list[Client] = []
        for (who, transport), got in zip(names, results, strict=True):
            c = Client(who, transport, None)
            c.latency, c.errors, c.acked, c.corrected = got["latency"], got["errors"], got["acked"], got["corrected"]
            progress["calls"] += got["calls"]
            this.append(c)
        clients += this
        p95 = {t: summary_ms([x for c in this if c.transport == t for x in c.latency.get("recall", [])], 0.95)["p95"]
               for t in ("http", "stdio")}
        rounds.append({"http_recall_p95_ms": p95["http"], "stdio_recall_p95_ms": p95["stdio"],
                       "difference_ms": round(p95["http"] - p95["stdio"], 1)})
        print(f"round {r + 1}: recall p95 HTTP {p95['http']:.1f} ms, stdio {p95['stdio']:.1f} ms, "
              f"difference {p95['http'] - p95['stdio']:+.1f} ms", flush=True)
    final_pid = int((data_dir / "daemon.pid").read_text().split()[0])
    daemon_pids.add(final_pid)
    killed = 1 if "killed" in report else 0
    stats = json.loads(subprocess.run([*SERVER, "stats", "--json"], env=env, capture_output=True, text=True,
                                      timeout=120).stdout or "{}").get("process") or {}
    report["daemon"] = {"restarts": len(daemon_pids) - 1 - killed, "rss_mb": rss_mb(final_pid),
                        "buffer_pool_mib": (stats.get("buffer_pool") or {}).get("capacity_bytes", 0) // 2**20,
                        "pool_auto": (stats.get("buffer_pool") or {}).get("auto"),
                        "refused_statements": (stats.get("buffer_pool") or {}).get("refused_statements")}
    load: dict[str, Any] = {"http_server_rss_mb": {"before": rss_before, "after": rss_mb(front_pid)}, "rounds": rounds, "wall_s": round(wall, 1), "calls": progress["calls"],
                            "calls_per_s": round(progress["calls"] / wall, 1),
                            "cpu_s": {"http_server": round(cpu[0], 1), "daemon": round(cpu[1], 1),
                                      "stdio_servers": round(cpu[2], 1), "client_processes": round(cpu[3], 1)}}
    pooled: dict[str, list[float]] = {}  # every recall latency of each transport
    for transport in ("http", "stdio"):
        group = [c for c in clients if c.transport == transport]
        per_tool: dict[str, Any] = {}
        for tool, _ in MIX:
            xs = [x for c in group for x in c.latency.get(tool, [])]
            if xs:
                per_tool[tool] = {"n": len(xs), **summary_ms(xs, 0.5, 0.95)}
            if tool == "recall":
                pooled[transport] = xs
        load[transport] = {"clients": len(group), "errors": sum(len(c.errors) for c in group), "tools": per_tool}
    if pooled["http"] and pooled["stdio"]:
        load["recall_p95_difference_interval_ms"] = p95_difference_interval(pooled["http"], pooled["stdio"])
    load["error_lines"] = [e for c in clients for e in c.errors][:20]
    report["load"] = load

    # 3. lost writes: every acknowledged write read back
    acked = [m for c in clients for m in c.must_exist()]
    missing = []
    for mid in acked:
        try:
            daemon_call(env, "read_memory", {"memory_id": mid})
        except Exception as exc:
            missing.append(f"{mid}: {exc}")
    report["writes"] = {"acknowledged": sum(len(c.acked) for c in clients), "checked": len(acked),
                        "lost": len(missing), "lost_ids": missing[:10]}
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, required=True, help="a keymem data dir (copied; never changed)")
    ap.add_argument("--http-clients", type=int, default=8)
    ap.add_argument("--stdio-clients", type=int, default=2)
    ap.add_argument("--calls", type=int, default=250, help="calls per client")
    ap.add_argument("--quiet-calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1, help="repeat the load with new sessions; latencies pooled")
    ap.add_argument("--kill-daemon-after", type=int, default=0, help="SIGKILL the daemon after N acknowledged writes")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (args.store / "keymem.lbug").exists():
        raise SystemExit(f"{args.store} holds no keymem.lbug (build one: bench/scale.py --memories 10000 --dir D "
                         "--build-only)")
    tmp = Path(tempfile.mkdtemp(prefix="kmload", dir="/tmp"))
    data_dir = tmp / "data"
    shutil.copytree(args.store, data_dir)
    os.chmod(data_dir, 0o700)
    env = env_for(data_dir, minilm_dir(tmp / "model"))
    token = subprocess.run([*SERVER, "token", "create", "bench"], env=env, capture_output=True, text=True,
                           check=True).stdout.strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen([*SERVER, "serve", "--http", f"127.0.0.1:{port}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"keymem serve did not start: {server.stderr.read() if server.stderr else ''}")
            time.sleep(0.2)
        while daemon_call(env, "ping").get("state") != "ready":
            time.sleep(0.2)
        counts = daemon_call(env, "counts")
        report = asyncio.run(measure(args, f"http://127.0.0.1:{port}/mcp", token, env, data_dir, server.pid))
        report = {"store": {k: counts.get(k) for k in ("keys", "memories", "links")},
                  "http_clients": args.http_clients, "stdio_clients": args.stdio_clients,
                  "calls_per_client": args.calls, "cpus": os.cpu_count(), **report}
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=20)
        with contextlib.suppress(Exception):
            daemon_call(env, "shutdown")
        time.sleep(1)
        shutil.rmtree(tmp, ignore_errors=True)
    q = report["quiet"]
    print(f"store: {report['store']}")
    print(f"quiet recall, interleaved: HTTP p50 {q['http_recall_ms']['p50']:.1f} / p95 {q['http_recall_ms']['p95']:.1f} ms; "
          f"stdio p50 {q['stdio_recall_ms']['p50']:.1f} / p95 {q['stdio_recall_ms']['p95']:.1f} ms; "
          f"p95 difference {q['http_recall_ms']['p95'] - q['stdio_recall_ms']['p95']:+.1f} ms")
    ld = report["load"]
    print(f"load: {ld['calls']} calls in {ld['wall_s']} s ({ld['calls_per_s']}/s); errors: HTTP {ld['http']['errors']}, "
          f"stdio {ld['stdio']['errors']}; CPU s: HTTP server {ld['cpu_s']['http_server']}, "
          f"stdio servers {ld['cpu_s']['stdio_servers']}, daemon {ld['cpu_s']['daemon']}, "
          f"clients {ld['cpu_s']['client_processes']}")
    r0, r1 = ld["http_server_rss_mb"]["before"], ld["http_server_rss_mb"]["after"]
    print(f"HTTP server RSS: {r0['VmRSS']} MiB before the load, {r1['VmRSS']} MiB after (peak {r1['VmHWM']} MiB)")
    for transport in ("http", "stdio"):
        for tool, f in ld[transport]["tools"].items():
            print(f"  {transport:5} {tool:12} n={f['n']:4}  p50 {f['p50']:7.1f}  p95 {f['p95']:7.1f} ms")
    hr, sr = ld["http"]["tools"].get("recall"), ld["stdio"]["tools"].get("recall")
    if hr and sr:
        print(f"recall p95 under load, {args.rounds} round(s) pooled: HTTP {hr['p95']:.1f} ms, stdio {sr['p95']:.1f} ms, "
              f"difference {hr['p95'] - sr['p95']:+.1f} ms (95% bootstrap interval "
              f"{ld['recall_p95_difference_interval_ms'][0]:+.1f} to {ld['recall_p95_difference_interval_ms'][1]:+.1f}); "
              f"p50 difference {hr['p50'] - sr['p50']:+.1f} ms")
    for line in ld["error_lines"]:
        print(f"  error: {line}")
    d = report["daemon"]
    print(f"daemon: {d['restarts']} restart(s) not caused by the kill; RSS {d['rss_mb']['VmRSS']} MiB at the end "
          f"(peak {d['rss_mb']['VmHWM']} MiB); buffer pool {d['buffer_pool_mib']} MiB "
          f"({'sized from the store' if d['pool_auto'] else 'KEYMEM_BUFFER_POOL_MB'}), "
          f"{d['refused_statements']} statement(s) refused for lack of pool")
    w = report["writes"]
    print(f"writes: {w['acknowledged']} acknowledged, {w['checked']} owed and read back, {w['lost']} lost" + (f"; killed {report['killed']}" if "killed" in report else ""))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if not (ld["http"]["errors"] or ld["stdio"]["errors"] or w["lost"] or d["restarts"]) else 1


if __name__ == "__main__":
    sys.exit(main())
