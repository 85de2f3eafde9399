"""How long an MCP client waits for keymem: time to ``--version`` and to the ``initialize`` answer.

    python3 scripts/startup_time.py --runs 5 -- plugin/bin/keymem-run

Runs ``CMD --version`` and, in fresh processes, ``CMD`` as a stdio MCP server: sends ``initialize``,
times its answer, then reads the resident memory (VmRSS) of every process of the session (the one
started and its descendants: a ``uv`` that stays for the session shows here) before closing stdin.
Prints each run and the medians. Standard library only; it loads no model and downloads nothing
itself (a ``uvx`` it runs may). Set KEYMEM_DATA_DIR to keep it away from your own data dir.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "startup_time", "version": "1"}}}


def descendants(pid: int) -> list[int]:
    found = [pid]
    for p in found:
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                found.extend(int(c) for c in (task / "children").read_text().split())
    return found


def rss_mb(pid: int) -> tuple[str, float]:
    """The process's name and VmRSS in MB (10^6 bytes)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "?", 0.0
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    kb = int(fields.get("VmRSS", "0 kB").split()[0])
    return fields.get("Name", "?").strip(), kb * 1024 / 1e6


def version_time(cmd: list[str]) -> float:
    t0 = time.monotonic()
    done = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} --version -> {done.returncode}: {done.stderr.strip()}")
    return elapsed


def initialize_time(cmd: list[str]) -> tuple[float, dict[str, float]]:
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.monotonic() - t0
        if "serverInfo" not in line.decode(errors="replace"):
            sys.exit(f"{' '.join(cmd)}: no initialize answer: {line[:200]!r}")
        time.sleep(0.5)  # what stays resident once the session runs
        memory: dict[str, float] = {}
        for pid in descendants(proc.pid):
            name, mb = rss_mb(pid)
            memory[name] = round(memory.get(name, 0.0) + mb, 1)
        return elapsed, memory
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("cmd", nargs="+", help="the command that runs keymem (after --)")
    args = ap.parse_args()
    versions, inits = [], []
    for i in range(args.runs):
        v = version_time(args.cmd)
        t, memory = initialize_time(args.cmd)
        versions.append(v)
        inits.append(t)
        print(f"run {i + 1}: --version {v:.2f} s, initialize {t:.2f} s, resident MB {memory}", flush=True)
    print(f"median of {args.runs}: --version {statistics.median(versions):.2f} s "
          f"(min {min(versions):.2f}, max {max(versions):.2f}), initialize {statistics.median(inits):.2f} s "
          f"(min {min(inits):.2f}, max {max(inits):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
