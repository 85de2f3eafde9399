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
With ``KEYMEM_HOOK_URL`` set (a team's memory on a remote ``keymem serve --http``), the hook
asks that server instead, with the token of ``KEYMEM_HOOK_TOKEN_FILE``, the same request and the
same time limit (:mod:`keymem.server.hook_remote`); the server answers with its daemon's own
``inject``, so the context is the one a local hook on that store would add. A failure there (a
refused token, a server down or slow) prints nothing either, and leaves one line in
``<data dir>/logs/hook.log`` and on stderr. ``keymem hook --remote`` (the keymem-remote plugin)
refuses to ask the local daemon when no URL is set.
Imports stay stdlib-only (plus keymem.settings and the socket or HTTP client) to start fast.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import PurePath
from typing import Any, TextIO

from keymem.settings import Settings, SettingsError, load_settings

MAX_PROMPT_CHARS = 20_000
_NS_BAD = re.compile(r"[^\w.:@/+-]+")


def namespace_for_cwd(cwd: Any) -> str | None:
    """The namespace of a project directory: its base name, made a valid namespace."""
    if not isinstance(cwd, str) or not cwd.strip():
        return None
    name = _NS_BAD.sub("-", PurePath(cwd.rstrip("/") or "/").name).strip("-")[:128]
    return name or None


def build_output(payload: dict[str, Any], started: float, settings: Settings, remote: bool = False) -> dict[str, Any] | None:
    """The hook's JSON for ``payload``, or None (nothing to add); raises on a failure to ask."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    namespace = namespace_for_cwd(payload.get("cwd")) if settings.hook_scope_cwd else None
    params: dict[str, Any] = {"prompt": prompt[:MAX_PROMPT_CHARS]}
    if namespace:
        params["namespace"] = namespace
    remaining = settings.hook_timeout_ms / 1000.0 - (time.monotonic() - started)
    if settings.hook_url:
        from keymem.server.hook_remote import RemoteHookError, remote_inject

        if remaining <= 0:
            raise RemoteHookError("the time limit (KEYMEM_HOOK_TIMEOUT_MS) passed before the request was sent")
        result: Any = remote_inject(settings, params, remaining)
    elif remote:
        raise SettingsError("`keymem hook --remote` needs KEYMEM_HOOK_URL (the server's MCP URL) and "
                            "KEYMEM_HOOK_TOKEN_FILE in the config file")
    else:
        if remaining <= 0:
            return None
        result = _local_inject(settings, params, remaining)
    return render(result, namespace, payload.get("hook_event_name"))


def _local_inject(settings: Settings, params: dict[str, Any], timeout: float) -> Any:
    from keymem.server.client import DaemonClient

    client = DaemonClient(settings, start=False)
    try:
        return client.call("inject", params, timeout=timeout, retry=False)
    finally:
        client.close()


def render(result: Any, namespace: str | None, event: Any) -> dict[str, Any] | None:
    """The ``inject`` result as the hook's output (the same for the daemon's and a remote server's)."""
    text = result.get("text") if isinstance(result, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    if namespace:
        text += f"\n(These come from the keymem namespace {namespace!r}, this project's namespace.)"
    return {
        "hookSpecificOutput": {
            "hookEventName": event if isinstance(event, str) and event else "UserPromptSubmit",
            "additionalContext": text,
        }
    }


def main(stdin: TextIO | None = None, stdout: TextIO | None = None, *, remote: bool = False) -> int:
    """Always returns 0; prints the hook output or nothing. ``remote``: only ever ask KEYMEM_HOOK_URL."""
    started = time.monotonic()
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    settings: Settings | None = None
    try:
        settings = load_settings()
        payload = json.loads(stdin.read() or "{}")
        out = build_output(payload, started, settings, remote) if isinstance(payload, dict) else None
    except BaseException as exc:  # includes timeouts, a missing daemon, bad settings, Ctrl-C
        if remote or (settings is not None and settings.hook_url):
            _log_failure(settings, exc)
        elif os.environ.get("KEYMEM_LOG_LEVEL", "").upper() == "DEBUG":
            print(f"keymem hook: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    if out:
        stdout.write(json.dumps(out, ensure_ascii=False))
        stdout.flush()
    return 0


def _log_failure(settings: Settings | None, exc: BaseException) -> None:
    """One line on stderr and, when the settings loaded, in <data dir>/logs/hook.log (owner-only)."""
    from keymem.server.hook_remote import RemoteHookError

    what = str(exc) if isinstance(exc, RemoteHookError | SettingsError) else f"{type(exc).__name__}: {exc}"
    line = " ".join(f"remote hook: {what}; no memories added to this prompt".split())
    print(f"keymem hook: {line}", file=sys.stderr)
    if settings is None:
        return
    import logging

    from keymem.server.logs import setup_logging

    try:
        setup_logging(settings, stderr=False, path=settings.data_dir / "logs" / "hook.log")
        logging.getLogger("keymem.hook").warning("%s", line)
    except Exception:  # a hook must never fail; stderr has the line already
        return
