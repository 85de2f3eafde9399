"""What a health check costs: the stdio server's memory after a bare ``initialize`` + ``tools/list``.

Starts ``keymem`` (the MCP stdio server) on a fresh, empty data dir with the default settings,
sends ``initialize``, ``notifications/initialized`` and ``tools/list`` as a health check does
(``claude mcp list``), waits ``--settle`` seconds, then reads VmRSS and VmHWM (the peak) from
/proc/<pid>/status and checks that no daemon was started and that neither kuzu nor onnxruntime
is mapped into the process. Median over ``--runs`` fresh processes.

    python bench/startup_rss.py --runs 5

Needs the test extras (it reuses tests/e2e/support.py); loads no model and downloads nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT  # noqa: F401  (puts the repository root on sys.path)

from keymem.server.daemon import rss_kb
from tests.e2e.support import bare_session, daemon_processes, mapped_libraries


def one_run(settle: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="kmrss", dir="/tmp"))
    data = tmp / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_")}
    env.update(KEYMEM_DATA_DIR=str(data), HF_HUB_OFFLINE="1")
    try:
        t0 = time.monotonic()
        with bare_session(env) as (proc, _):
            answered = time.monotonic() - t0
            time.sleep(settle)
            mem = rss_kb(proc.pid)
            return {
                "VmRSS_mib": round(mem["VmRSS"] / 1024, 1),
                "VmHWM_mib": round(mem["VmHWM"] / 1024, 1),
                "tools_list_s": round(answered, 2),
                "heavy_libraries": mapped_libraries(proc.pid),
                "daemons": len(daemon_processes(data)),
                "socket": (data / "daemon.sock").exists(),
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--settle", type=float, default=2.0, help="seconds to wait after tools/list before reading")
    ap.add_argument("--json", type=Path, help="also write the runs and medians here")
    args = ap.parse_args()
    runs = [one_run(args.settle) for _ in range(args.runs)]
    summary = {
        "runs": args.runs,
        "VmRSS_median_mib": statistics.median(r["VmRSS_mib"] for r in runs),
        "VmHWM_median_mib": statistics.median(r["VmHWM_mib"] for r in runs),
        "VmHWM_max_mib": max(r["VmHWM_mib"] for r in runs),
        "tools_list_median_s": statistics.median(r["tools_list_s"] for r in runs),
        "started_nothing": all(not r["heavy_libraries"] and not r["daemons"] and not r["socket"] for r in runs),
    }
    for r in runs:
        print(json.dumps(r))
    print(json.dumps(summary))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "runs": runs}, indent=2) + "\n")
    return 0 if summary["started_nothing"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
