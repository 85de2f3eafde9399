"""Provenance: which host session and turn a write came from, and when transcripts may be read."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from keymem.server import provenance
from keymem.server.provenance import resolve_source

UUID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    provenance._found.clear()


def claude_transcript(home: Path, session: str, lines: int, project: str = "-work-demo") -> Path:
    p = home / ".claude" / "projects" / project / f"{session}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join('{"type":"user"}\n' for _ in range(lines)))
    return p


def codex_transcript(root: Path, session: str, lines: int) -> Path:
    p = root / "sessions" / "2026" / "05" / "07" / f"rollout-2026-05-07T17-24-21-{session}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join("{}\n" for _ in range(lines)))
    return p


def test_claude_session_variable_is_deterministic(tmp_path: Path) -> None:
    claude_transcript(tmp_path, "sess-a", 5)
    claude_transcript(tmp_path, "sess-b", 9)  # newer, but not ours
    env = {"HOME": str(tmp_path), "CLAUDE_CODE_SESSION_ID": "sess-a"}
    assert resolve_source(None, env) == {"host_session": "sess-a", "host_agent": "claude-code", "host_turn": 5}


def test_claude_config_dir_overrides_home(tmp_path: Path) -> None:
    claude_transcript(tmp_path / "elsewhere", "s1", 2)
    cfg = tmp_path / "elsewhere" / ".claude"
    env = {"HOME": str(tmp_path / "nohome"), "CLAUDE_CONFIG_DIR": str(cfg), "CLAUDE_CODE_SESSION_ID": "s1"}
    assert resolve_source(None, env)["host_turn"] == 2  # type: ignore[index]


def test_codex_thread_id_and_codex_home(tmp_path: Path) -> None:
    codex_transcript(tmp_path / "cx", UUID, 4)
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "cx"), "CODEX_THREAD_ID": UUID}
    assert resolve_source(None, env) == {"host_session": UUID, "host_agent": "codex", "host_turn": 4}


def test_access_false_keeps_the_session_id_but_reads_no_transcript(tmp_path: Path) -> None:
    claude_transcript(tmp_path, "sess-a", 5)
    env = {"HOME": str(tmp_path), "CLAUDE_CODE_SESSION_ID": "sess-a"}
    assert resolve_source(False, env) == {"host_session": "sess-a", "host_agent": "claude-code", "host_turn": None}


def test_no_host_and_access_unset_records_nothing(tmp_path: Path) -> None:
    claude_transcript(tmp_path, "sess-a", 5)
    assert resolve_source(None, {"HOME": str(tmp_path)}) is None
    assert resolve_source(False, {"HOME": str(tmp_path)}) is None


def test_access_true_uses_the_newest_fresh_transcript(tmp_path: Path) -> None:
    old = claude_transcript(tmp_path, "older", 3)
    os.utime(old, (time.time() - 120, time.time() - 120))
    codex_transcript(tmp_path / ".codex", UUID, 7)
    env = {"HOME": str(tmp_path)}
    assert resolve_source(True, env) == {"host_session": UUID, "host_agent": "codex", "host_turn": 7}


def test_access_true_ignores_stale_transcripts(tmp_path: Path) -> None:
    p = claude_transcript(tmp_path, "idle", 3)
    stale = time.time() - provenance.STALE_AFTER_S - 60
    os.utime(p, (stale, stale))
    assert resolve_source(True, {"HOME": str(tmp_path)}) is None


def test_turn_count_follows_the_growing_transcript(tmp_path: Path) -> None:
    p = claude_transcript(tmp_path, "grow", 2)
    env = {"HOME": str(tmp_path), "CLAUDE_CODE_SESSION_ID": "grow"}
    assert resolve_source(None, env)["host_turn"] == 2  # type: ignore[index]
    with p.open("a") as fh:
        fh.write('{"type":"assistant"}\n{"type":"user"}\n')
    assert resolve_source(None, env)["host_turn"] == 4  # type: ignore[index]
    p.write_text('{"type":"user"}\n')  # rewritten (compacted): counted afresh
    assert resolve_source(None, env)["host_turn"] == 1  # type: ignore[index]


def test_unsafe_session_ids_never_reach_a_glob(tmp_path: Path) -> None:
    claude_transcript(tmp_path, "x", 3)
    for bad in ("../x", "*", "a/b", "x" * 200):
        src = resolve_source(None, {"HOME": str(tmp_path), "CLAUDE_CODE_SESSION_ID": bad})
        assert src is not None and src["host_turn"] is None


def test_missing_transcript_still_names_the_session(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_THREAD_ID": UUID}
    assert resolve_source(None, env) == {"host_session": UUID, "host_agent": "codex", "host_turn": None}
