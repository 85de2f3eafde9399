"""``keymem hook``: the UserPromptSubmit hook of Claude Code and Codex (the push path).

Reads the hook JSON (``prompt``, ``cwd``, ``session_id``, ``hook_event_name``) from stdin,
asks the running daemon for ``inject`` within ``KEYMEM_HOOK_TIMEOUT_MS`` and prints
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` when memories
clear the relevance floor. On anything else (no daemon, timeout, bad input, no memory) it
prints nothing and exits 0: a memory hook must never block or break the user's prompt.

It never starts the daemon. Hooks run with the host's environment, not the MCP server's
(which carries the embedding configuration), so a daemon started here could load a different
model; the MCP server starts the daemon (on its first tool call, or ``WARM_AFTER_S`` after
``initialize`` when ``KEYMEM_HOOK_INSTALLED=true``), and the hook uses it from then on. Both
read the same config file (``~/.keymem/config.toml``), the place for settings both need, such
as the data dir.
Imports stay stdlib-only (plus keymem.settings and the socket client) to start fast.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import PurePath
from typing import Any, TextIO

MAX_PROMPT_CHARS = 20_000
_NS_BAD = re.compile(r"[^\w.:@/+-]+")


def namespace_for_cwd(cwd: Any) -> str | None:
    """The namespace of a project directory: its base name, made a valid namespace."""
    if not isinstance(cwd, str) or not cwd.strip():
        return None
    name = _NS_BAD.sub("-", PurePath(cwd.rstrip("/") or "/").name).strip("-")[:128]
    return name or None


def build_output(payload: dict[str, Any], started: float) -> dict[str, Any] | None:
    from keymem.server.client import DaemonClient
    from keymem.settings import load_settings

    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    settings = load_settings()
    namespace = namespace_for_cwd(payload.get("cwd")) if settings.hook_scope_cwd else None
    params: dict[str, Any] = {"prompt": prompt[:MAX_PROMPT_CHARS]}
    if namespace:
        params["namespace"] = namespace
    remaining = settings.hook_timeout_ms / 1000.0 - (time.monotonic() - started)
    if remaining <= 0:
        return None
    client = DaemonClient(settings, start=False)
    try:
        result = client.call("inject", params, timeout=remaining, retry=False)
    finally:
        client.close()
    text = result.get("text") if isinstance(result, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    if namespace:
        text += f"\n(These come from the keymem namespace {namespace!r}, this project's namespace.)"
    event = payload.get("hook_event_name")
    return {
        "hookSpecificOutput": {
            "hookEventName": event if isinstance(event, str) and event else "UserPromptSubmit",
            "additionalContext": text,
        }
    }


def main(stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Always returns 0; prints the hook output or nothing."""
    started = time.monotonic()
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        payload = json.loads(stdin.read() or "{}")
        out = build_output(payload, started) if isinstance(payload, dict) else None
    except BaseException as exc:  # includes timeouts, a missing daemon, bad settings, Ctrl-C
        if os.environ.get("KEYMEM_LOG_LEVEL", "").upper() == "DEBUG":
            print(f"keymem hook: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    if out:
        stdout.write(json.dumps(out, ensure_ascii=False))
        stdout.flush()
    return 0
