"""The real server and hook of bench/assoc.py: real MCP stdio sessions and one ``keymem hook`` per prompt.

Real ``keymem`` stdio servers (``python -m keymem.cli.main``, MiniLM via ``LOCAL_EMBEDDING_MODEL``
/ ``LOCAL_EMBEDDING_MODEL_PATH``, ``KEYMEM_RERANK=false``, ``KEYMEM_AUTOKEY=false`` so that no alias
is learned between questions) over the SDK's ``Client``: one session for every case's first
``recall`` and the unrelated prompts, each with ``include_seen: true`` (a session holds back what it
already delivered, and no question's answer may depend on the ones asked before it), and one
session per case for its navigation (one agent answering one question: within it, the server holds
back what that navigation already got). The first call starts the shared daemon, which the hook and
the other sessions then talk to. Order, so that nothing measured is changed by what was measured
before it: every case's ``recall``, every case's hook, the unrelated prompts (``recall`` and hook),
then the navigations (``read_memory`` records an access).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from assoc_agent import Navigator, Step, delivered_ids, holds, mentions, navigation_row, previews  # noqa: E402

SERVER_CMD = [sys.executable, "-m", "keymem.cli.main"]


def server_env(data_dir: Path, model_dir: Path) -> dict[str, str]:
    from keymem.settings import env_names

    drop = set(env_names())
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_") and k not in drop}
    env.update(
        KEYMEM_DATA_DIR=str(data_dir),
        EMBEDDING_BACKEND="local",
        LOCAL_EMBEDDING_MODEL=_common.MODEL_NAME,
        LOCAL_EMBEDDING_MODEL_PATH=str(model_dir),
        KEYMEM_RERANK="false",
        KEYMEM_AUTOKEY="false",
        KEYMEM_EMBED_THREADS="1",
        KEYMEM_LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def hook_payload(prompt: str, cwd: str) -> dict[str, Any]:
    """What Claude Code writes to a UserPromptSubmit hook's stdin."""
    return {"session_id": "keymem-assoc-bench", "transcript_path": "/dev/null", "cwd": cwd,
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def run_hook(env: dict[str, str], prompt: str, cwd: str) -> tuple[str, float, str]:
    """The real ``keymem hook`` process: its ``additionalContext`` ("" when it printed nothing), seconds,
    and the failure it reported ("" when none: a hook that fails, e.g. by its time limit on a loaded
    machine, prints nothing, which must not count as keeping quiet)."""
    t0 = time.perf_counter()
    proc = subprocess.run([*SERVER_CMD, "hook"], input=json.dumps(hook_payload(prompt, cwd)), capture_output=True,
                          text=True, env={**env, "KEYMEM_LOG_LEVEL": "DEBUG"}, timeout=120)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"keymem hook exited {proc.returncode}: {proc.stderr[-500:]}")
    failure = " ".join(line for line in proc.stderr.splitlines() if line.startswith("keymem hook:"))
    if not proc.stdout.strip():
        return "", elapsed, failure
    out = json.loads(proc.stdout)
    return str(out["hookSpecificOutput"]["additionalContext"]), elapsed, failure


def injected_ids(text: str, known: dict[str, str]) -> list[str]:
    """Labels of the memories whose id an injection names, in order."""
    return [known[m] for m in re.findall(r"m_[0-9a-f]+", text) if m in known]


async def mcp_call(client: Any, tool: str, args: dict[str, Any]) -> tuple[str, Any, bool]:
    r = await client.call_tool(tool, args)
    text = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    return text, r.structured_content, bool(r.is_error)


async def server_paths(env: dict[str, str], work: Path, cases: list[dict[str, Any]], ids: dict[str, str],
                       unrelated: list[dict[str, Any]], ntok: Callable[[str], int],
                       args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    label_of = {mid: label for label, mid in ids.items()}
    params = StdioServerParameters(command=SERVER_CMD[0], args=SERVER_CMD[1:], env=env, cwd=str(work))
    out: dict[str, Any] = {"recall": {}, "hook": {}, "navigation": {}, "unrelated": [], "seconds": {}}
    with open(work / "server.stderr", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            t0 = time.perf_counter()
            await mcp_call(client, "browse_keys", {"limit": 1})  # starts the daemon (the hook never does)
            out["seconds"]["daemon_start"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for case in cases:
                content = case["memories"][case["target"]]["content"]
                target = ids[f"{case['id']}#{case['target']}"]
                text, structured, err = await mcp_call(client, "recall", {"query": case["question"],
                                                                           "include_seen": True})
                out["recall"][case["id"]] = {
                    "hit": holds(text, content), "id": mentions(text, target), "tokens": ntok(text), "error": err,
                    "text": text, "confident": (structured or {}).get("confident"),
                    "presented": [label_of.get(str(m.get("memory_id")), "?") for m in previews(structured)],
                    "delivered": [label_of.get(m, "?") for m in delivered_ids(structured)],
                    "keys": [k.get("key") for k in (structured or {}).get("keys") or [] if isinstance(k, dict)]}
            out["seconds"]["recall"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for case in cases:
                content = case["memories"][case["target"]]["content"]
                ctx, secs, failure = await asyncio.to_thread(run_hook, env, case["question"], str(work))
                out["hook"][case["id"]] = {"hit": holds(ctx, content), "injected": injected_ids(ctx, label_of),
                                           "tokens": ntok(ctx), "seconds": round(secs, 3), "text": ctx,
                                           "failure": failure}
            out["seconds"]["hook"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for u in unrelated:
                prompt = u["prompt"]
                text, structured, err = await mcp_call(client, "recall", {"query": prompt, "include_seen": True})
                ctx, secs, failure = await asyncio.to_thread(run_hook, env, prompt, str(work))
                shown = previews(structured)
                out["unrelated"].append({
                    "id": u["id"], "prompt": prompt, "hard": u["hard"], "near_key": u["near_key"],
                    "recall_presents": bool(shown), "recall_tokens": ntok(text),
                    "recall_confident": (structured or {}).get("confident"),
                    "recall_presented": [label_of.get(str(m.get("memory_id")), "?") for m in shown],
                    "recall_delivered": [label_of.get(m, "?") for m in delivered_ids(structured)],
                    "recall_scores": [m.get("score") for m in shown],
                    "hook_injects": bool(ctx), "hook_tokens": ntok(ctx), "hook_injected": injected_ids(ctx, label_of),
                    "error": err, "hook_failure": failure, "recall_text": text, "hook_text": ctx})
            out["seconds"]["unrelated"] = round(time.perf_counter() - t0, 1)

        # Last: read_memory writes (an access, a Hebbian step on the link it came through).
        t0 = time.perf_counter()
        for case in cases:  # a session of its own: what it holds back is what this navigation got
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                content = case["memories"][case["target"]]["content"]
                nav = Navigator(case["question"], max_calls=args.calls)
                steps: list[Step] = []
                while (nxt := nav.next_call()) is not None:
                    tool, targs = nxt
                    text, structured, err = await mcp_call(client, tool, targs)
                    steps.append(Step(tool, targs, ntok(text), holds(text, content), err))
                    nav.observe(tool, targs, None if err else structured)
                out["navigation"][case["id"]] = navigation_row(steps, args.budget)
        out["seconds"]["navigation"] = round(time.perf_counter() - t0, 1)
    return out


def stop_daemon(env: dict[str, str]) -> None:
    from keymem.server import client
    from keymem.server.protocol import pid_alive, read_pid
    from keymem.settings import load_settings

    settings = load_settings(env)
    with contextlib.suppress(Exception):
        client.stop(settings, timeout=15)
    pid = read_pid(settings.pid_path)
    if pid and pid_alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
