"""``keymem hook`` as Claude Code / Codex run it: a process, hook JSON on stdin, context on stdout."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from keymem.server.client import DaemonClient
from keymem.server.hook import namespace_for_cwd
from keymem.server.protocol import write_private
from tests.e2e.support import SERVER_CMD, Keymem, never_answering

pytestmark = pytest.mark.timeout(90)


def run_hook(env: dict[str, str], payload: dict[str, object] | str) -> tuple[subprocess.CompletedProcess[str], float]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    t0 = time.monotonic()
    proc = subprocess.run([*SERVER_CMD, "hook"], input=data, capture_output=True, text=True, env=env, timeout=30)
    return proc, time.monotonic() - t0


def prompt(text: str, cwd: str = "/work/demo") -> dict[str, object]:
    return {"prompt": text, "cwd": cwd, "session_id": "s-1", "hook_event_name": "UserPromptSubmit",
            "transcript_path": "/dev/null"}


def remember(km: Keymem, **args: object) -> str:
    c = DaemonClient(km.settings(), start=False)
    try:
        return str(c.call("remember", dict(args))["memory_id"])
    finally:
        c.close()


def test_hook_with_daemon_up_prints_additional_context(daemon: Keymem) -> None:
    mid = remember(daemon, content="The user's dog is named Biscuit", keys=["dog", "Biscuit", "pet"],
                   key_types=["concept", "name", "concept"])
    proc, _ = run_hook(daemon.env, prompt("what is my dog's name?"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    ctx = out["hookSpecificOutput"]
    assert ctx["hookEventName"] == "UserPromptSubmit"
    assert "Biscuit" in ctx["additionalContext"] and mid in ctx["additionalContext"]


def test_hook_prints_nothing_for_an_unrelated_or_empty_prompt(daemon: Keymem) -> None:
    proc, _ = run_hook(daemon.env, prompt("   "))
    assert proc.returncode == 0 and proc.stdout == ""
    proc, _ = run_hook(daemon.env, "not json at all")
    assert proc.returncode == 0 and proc.stdout == ""


def test_hook_scoped_to_the_working_directory(daemon: Keymem) -> None:
    env = {**daemon.env, "KEYMEM_HOOK_SCOPE_CWD": "true"}
    remember(daemon, content="The billing service deploys on Fridays", keys=["billing", "deploy", "friday"],
             namespace="billing-svc")
    remember(daemon, content="The garden is watered on Fridays", keys=["garden", "watering", "friday"])
    proc, _ = run_hook(env, prompt("when does my billing service deploy?", cwd="/home/u/billing-svc"))
    ctx = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "billing service deploys" in ctx and "garden" not in ctx and "billing-svc" in ctx
    proc, _ = run_hook(env, prompt("when does billing deploy?", cwd="/home/u/other-project"))
    assert proc.stdout == ""


def test_hook_with_daemon_down_prints_nothing_fast(km: Keymem) -> None:
    proc, elapsed = run_hook(km.env, prompt("what is my dog's name?"))
    assert proc.returncode == 0 and proc.stdout == ""
    assert elapsed < 4.0  # interpreter start + light imports (~0.2 s CPU); no daemon is started
    assert not (km.data_dir / "daemon.sock").exists()


@pytest.fixture
def silent_daemon(km: Keymem) -> Iterator[Keymem]:
    """A socket that accepts requests and never answers: a hung or very slow daemon."""
    km.data_dir.mkdir(parents=True, mode=0o700)
    write_private(km.data_dir / "daemon.token", "x" * 64)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(km.data_dir / "daemon.sock"))
    srv.listen(8)
    with never_answering(srv):
        yield km


def test_hook_with_slow_daemon_times_out_silently(silent_daemon: Keymem) -> None:
    env = {**silent_daemon.env, "KEYMEM_HOOK_TIMEOUT_MS": "400"}
    proc, elapsed = run_hook(env, prompt("what is my dog's name?"))
    assert proc.returncode == 0 and proc.stdout == ""
    assert 0.4 <= elapsed < 4.4  # the 0.4 s budget + interpreter start


def test_hook_bad_settings_print_nothing(km: Keymem) -> None:
    proc, _ = run_hook({**km.env, "KEYMEM_HOOK_TIMEOUT_MS": "soon"}, prompt("hello"))
    assert proc.returncode == 0 and proc.stdout == ""


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [("/home/u/my project", "my-project"), ("/srv/api/", "api"), ("/", None), ("", None), (None, None),
     ("/x/日本語", "日本語"), ("/x/" + "a" * 300, "a" * 128)],
)
def test_namespace_for_cwd(cwd: str | None, expected: str | None) -> None:
    assert namespace_for_cwd(cwd) == expected


def test_hook_starts_fast_without_heavy_imports() -> None:
    code = ("import sys, io; sys.stdin = io.StringIO('{}'); from keymem.cli.main import run; sys.argv=['keymem','hook'];\n"
            "import keymem.server.hook as h; h.main();\n"
            "bad=[m for m in ('mcp','ladybug','onnxruntime','numpy','keymem.memory.graph') if m in sys.modules]; print(bad)")
    out = subprocess.run([*SERVER_CMD[:1], "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
