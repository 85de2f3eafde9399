"""A health check starts nothing: ``initialize`` + ``tools/list`` leave no daemon and no model loaded.

Seen from outside, as a health check (``claude mcp list``) leaves the server: no daemon process,
no socket, and neither kuzu nor onnxruntime mapped into the stdio process (/proc/<pid>/maps).
The first tool call then starts the daemon (or, with ``KEYMEM_DAEMON=off``, opens the store in
this process) and succeeds. ``bench/startup_rss.py`` prints the memory figure of docs/mcp.md.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from keymem.server.backends import WARM_AFTER_S
from keymem.server.daemon import rss_kb
from tests.e2e.support import Keymem, bare_session, daemon_processes, mapped_libraries, rpc

pytestmark = pytest.mark.timeout(120)

REMEMBER = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "remember", "arguments": {
    "content": "The first tool call starts the store", "keys": ["lazy start", "daemon"]}}}
RSS_LIMIT_KB = 80 * 1024  # issue 13: a health check loads no model and stays under 80 MB


def started_nothing(km: Keymem, pid: int) -> None:
    assert daemon_processes(km.data_dir) == [] and km.daemon_pid() is None
    assert not (km.data_dir / "daemon.sock").exists()
    assert mapped_libraries(pid) == []


def tool_result(answer: dict[str, Any] | None) -> dict[str, Any]:
    assert answer is not None and answer["id"] == 3, answer
    result = answer["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    return result["structuredContent"]  # type: ignore[no-any-return]


def test_health_check_starts_nothing_then_the_first_call_starts_the_daemon(km: Keymem) -> None:
    with bare_session(km.env) as (proc, init):
        assert "not known yet" in init["instructions"]
        time.sleep(0.5)  # the eager start of before had spawned the daemon by now
        started_nothing(km, proc.pid)
        assert rss_kb(proc.pid)["VmHWM"] < RSS_LIMIT_KB, rss_kb(proc.pid)
        assert tool_result(rpc(proc, REMEMBER))["memory_id"].startswith("m_")
        [daemon_pid] = daemon_processes(km.data_dir)
        libs = " ".join(mapped_libraries(daemon_pid))
        assert "_lbug" in libs and "onnxruntime" in libs  # the check sees a loaded store where there is one ...
        assert mapped_libraries(proc.pid) == []  # ... and the bridge itself never loads it
    # a session opened on a running daemon gets its live counts: test_every_tool_happy_and_error_paths


def test_daemon_off_opens_nothing_before_the_first_call(km: Keymem) -> None:
    """With ``KEYMEM_DAEMON=off`` the store opens on the first tool call (test_daemon_off_runs_in_process)."""
    with bare_session({**km.env, "KEYMEM_DAEMON": "off"}) as (proc, _):
        time.sleep(0.5)
        started_nothing(km, proc.pid)
        assert not (km.data_dir / "keymem.lbug").exists()  # not opened (nor locked) by a health check


def test_with_the_hook_an_open_session_warms_the_daemon(km: Keymem) -> None:
    """The hook never starts the daemon, so a session that stays open starts it after WARM_AFTER_S."""
    env = {**km.env, "KEYMEM_HOOK_INSTALLED": "true"}
    with bare_session(env) as (proc, _):
        started_nothing(km, proc.pid)  # a health check closes well before WARM_AFTER_S
        deadline = time.monotonic() + WARM_AFTER_S + 10
        while not daemon_processes(km.data_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(daemon_processes(km.data_dir)) == 1
        assert mapped_libraries(proc.pid) == []
