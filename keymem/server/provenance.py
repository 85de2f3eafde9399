"""Which host conversation a memory came from: ``source = {host_session, host_agent, host_turn}``.

Runs in the stdio client (it has the host's environment; the shared daemon does not) and
travels with the write request. Two ways to find the session:

1. Deterministic: the host injects its session id into every MCP server it starts
   (``CLAUDE_CODE_SESSION_ID`` for Claude Code, ``CODEX_THREAD_ID`` for Codex).
2. Heuristic: the most recently modified transcript, if it changed in the last
   ``STALE_AFTER_S`` seconds (hosts such as Claude Desktop expose no id).

Transcripts are local, possibly sensitive history, so they are opened only when a recognised
host injected its session variable or ``KEYMEM_TRANSCRIPT_ACCESS=true``;
``KEYMEM_TRANSCRIPT_ACCESS=false`` forbids it even then (the session id from the environment
is still recorded, without ``host_turn``). Only a line count is taken from a transcript:
no content ever leaves this module, and no tool exposes transcripts.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STALE_AFTER_S = 15 * 60
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")

CLAUDE = "claude-code"
CODEX = "codex"


def claude_root(env: Mapping[str, str]) -> Path:
    base = env.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else _home(env) / ".claude") / "projects"


def codex_root(env: Mapping[str, str]) -> Path:
    base = env.get("CODEX_HOME")
    return (Path(base).expanduser() if base else _home(env) / ".codex") / "sessions"


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


class _LineCounter:
    """Counts transcript lines incrementally: a transcript only grows, so re-read only the tail."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int, int]] = {}  # path -> (inode, size, lines)
        self._lock = threading.Lock()

    def count(self, path: Path) -> int | None:
        try:
            with path.open("rb") as fh:
                st = os.fstat(fh.fileno())
                with self._lock:
                    inode, size, lines = self._seen.get(path, (st.st_ino, 0, 0))
                if inode != st.st_ino or st.st_size < size:
                    size, lines = 0, 0
                fh.seek(size)
                while chunk := fh.read(1 << 20):
                    lines += chunk.count(b"\n")
                    size += len(chunk)
        except OSError:
            return None
        with self._lock:
            self._seen[path] = (st.st_ino, size, lines)
        return lines


_counter = _LineCounter()
_found: dict[tuple[str, str, str], Path | None] = {}


def find_transcript(agent: str, session_id: str, env: Mapping[str, str]) -> Path | None:
    """The transcript file of one session, or None (cached per session once found)."""
    if not _SAFE_ID.match(session_id):
        return None
    root = claude_root(env) if agent == CLAUDE else codex_root(env)
    key = (agent, str(root), session_id)
    cached = _found.get(key)
    if cached is not None and cached.exists():
        return cached
    pattern = f"{session_id}.jsonl" if agent == CLAUDE else f"rollout-*-{session_id}.jsonl"
    best: Path | None = None
    best_mtime = -1.0
    try:
        for p in root.rglob(pattern):
            mtime = _mtime(p)
            if mtime > best_mtime:
                best, best_mtime = p, mtime
    except OSError:
        return None
    if best is not None:
        _found[key] = best
    return best


def newest_transcript(env: Mapping[str, str], now: float) -> tuple[str, str, Path] | None:
    """(agent, session id, path) of the most recently written transcript, unless stale."""
    candidates: list[tuple[float, str, str, Path]] = []
    croot = claude_root(env)
    for p in _glob(croot, "*/*.jsonl"):
        candidates.append((_mtime(p), CLAUDE, p.stem, p))
    xroot = codex_root(env)
    for p in _glob(xroot, "**/rollout-*.jsonl"):
        m = _UUID_TAIL.search(p.stem)
        candidates.append((_mtime(p), CODEX, m.group(1) if m else p.stem.removeprefix("rollout-"), p))
    if not candidates:
        return None
    mtime, agent, session, path = max(candidates, key=lambda c: c[0])
    if now - mtime > STALE_AFTER_S:
        return None
    return agent, session, path


def resolve_source(
    transcript_access: bool | None, env: Mapping[str, str] | None = None, now: float | None = None
) -> dict[str, Any] | None:
    """The ``source`` for a write from this process, or None when no host can be named."""
    env = os.environ if env is None else env
    now = time.time() if now is None else now
    for agent, var in ((CLAUDE, "CLAUDE_CODE_SESSION_ID"), (CODEX, "CODEX_THREAD_ID")):
        session = (env.get(var) or "").strip()
        if session:
            turn = None
            if transcript_access is not False:
                path = find_transcript(agent, session, env)
                turn = _counter.count(path) if path else None
            return {"host_session": session, "host_agent": agent, "host_turn": turn}
    if transcript_access is True:
        newest = newest_transcript(env, now)
        if newest:
            agent, session, path = newest
            return {"host_session": session, "host_agent": agent, "host_turn": _counter.count(path)}
    return None


def _glob(root: Path, pattern: str) -> list[Path]:
    try:
        return list(root.glob(pattern)) if root.is_dir() else []
    except OSError:
        return []


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return -1.0
