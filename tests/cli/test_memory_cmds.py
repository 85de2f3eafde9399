"""keymem remember / recall / read / read-key / forget / keys: the memory from a shell, through the real daemon."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from keymem.server.client import DaemonClient
from keymem.server.render import render
from keymem.settings import Settings
from tests.cli.conftest import cli_env, run_cli

NEWTON = "Newton watched an apple fall and thought about gravity"


def _ok(args: list[str], env: dict[str, str]) -> str:
    out = run_cli(args, env)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def _refused(args: list[str], env: dict[str, str], code: int = 2) -> str:
    """A refused command: the exit code, nothing on stdout, one short line on stderr (returned)."""
    out = run_cli(args, env)
    assert out.returncode == code and out.stdout == "", (args, out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 400, (args, out.stderr[:600])
    return lines[0]


@pytest.fixture
def daemon_env(settings: Settings, minilm_dir: Path) -> Any:
    env = cli_env(settings, minilm_dir, KEYMEM_DAEMON="auto")
    yield env
    run_cli(["daemon", "--stop"], env)


def test_bad_input_is_refused_before_anything_starts(settings: Settings, daemon_env: dict[str, str]) -> None:
    line = _refused(["remember", "Apples grow on trees"], daemon_env)  # no key
    assert line == ("keymem: remember: missing required argument 'keys' (a list of 1 to 32 items, each a string of "
                    "1 to 200 characters)")
    assert _refused(["recall", "apples", "--top-k", "500"], daemon_env) == (
        "keymem: recall: argument 'top_k' must be an integer from 1 to 50 (got 500)")
    assert _refused(["remember", "x", "-k", "a", "--key-type", "oops"], daemon_env) == (
        "keymem: --key-type 'oops': give KEY=TYPE, TYPE one of concept, name, proper_noun")
    big = run_cli(["remember", "-", "--key", "fruit"], daemon_env, input="x" * 200_000)  # a huge fact on stdin
    assert big.returncode == 2 and big.stdout == "" and len(big.stderr) < 400, big.stderr[:600]
    assert big.stderr.startswith("keymem: remember: argument 'content' must be a string of 1 to 100000 characters "
                                 "(got \"xxx") and "(200000 characters)" in big.stderr
    assert run_cli(["daemon", "--status"], daemon_env).returncode == 3  # no daemon was started
    assert not settings.db_path.exists()  # and nothing written


def test_remember_recall_read_forget_keys_through_the_daemon(settings: Settings, daemon_env: dict[str, str]) -> None:
    env = daemon_env
    stored = _ok(["remember", NEWTON, "--key", "Newton", "--key", "apple", "--key", "gravity",
                  "--key-type", "Newton=name"], env)
    m = re.fullmatch(r"stored (m_[0-9a-f]+) \(keys: Newton (k_[0-9a-f]+), apple (k_[0-9a-f]+), gravity k_[0-9a-f]+\)\n",
                     stored)
    assert m, stored
    newton, newton_key, apple_key = m.groups()
    other = json.loads(_ok(["remember", "Strawberries are the user's favourite fruit", "-k", "strawberry",
                            "-k", "fruit", "-k", "apple", "--decay", "stable", "--json"], env))
    assert other["duplicate"] is False and [k["key"] for k in other["keys"]] == ["strawberry", "fruit", "apple"]
    # the daemon the first command started holds the store; a status request is no client of its own
    status = _ok(["daemon", "--status"], env)
    assert "0 client(s)" in status and "store: 5 keys, 2 memories" in status, status
    held = DaemonClient(settings, start=False)
    try:
        held.call("ping", timeout=10)
        assert "1 client(s)" in _ok(["daemon", "--status"], env)
    finally:
        held.close()

    # recall prints exactly the lines an agent's recall gets; --json the structured result
    text = _ok(["recall", "Who thought about gravity?"], env)
    data = json.loads(_ok(["recall", "Who thought about gravity?", "--json"], env))
    assert text == render("recall", data) + "\n"
    assert f"[{newton}] {NEWTON}" in text and data["memories"][0]["memory_id"] == newton
    none = _ok(["recall", "What is 17 times 23?"], env)
    assert "no key comes close" in none and "keys below" not in none
    # read, read-key, keys
    read = _ok(["read", newton, "--via", apple_key], env)
    assert read.splitlines()[0] == f"[{newton}] {NEWTON}" and f"Newton {newton_key}" in read
    assert _ok(["read-key", "apple"], env).startswith(f"key: apple {apple_key}; memories 1-2 of 2")
    keys = _ok(["keys"], env)
    assert keys.splitlines()[0] == "keys 1-5 of 5:" and f"apple {apple_key} (2 memories)" in keys

    # refused input: one line, exit 2, nothing written
    assert "decay_profile" in _refused(["remember", "x", "-k", "a", "--decay", "forever"], env)
    assert "is not a keymem id" in _refused(["read", "m_nope"], env)
    page = json.loads(_ok(["keys", "--limit", "2", "--offset", "1", "--json"], env))
    assert page["total"] == 5 and len(page["keys"]) == 2 and page["offset"] == 1

    # forget: gone for good (an id that names nothing: exit 1)
    assert _ok(["forget", newton], env) == f"deleted {newton}\n"
    assert "does not exist" in _refused(["read", newton], env, code=1)


def test_memory_commands_without_a_daemon(settings: Settings, minilm_dir: Path) -> None:
    """KEYMEM_DAEMON=off: the command opens the store itself, as the stdio server then does."""
    env = cli_env(settings, minilm_dir)  # KEYMEM_DAEMON=off
    out = run_cli(["remember", "-", "--key", "kettle", "--key", "office"], env, input="The kettle on floor 3 is broken\n")
    assert out.returncode == 0, out.stderr
    mid = re.match(r"stored (m_[0-9a-f]+)", out.stdout)
    assert mid, out.stdout
    text = _ok(["recall", "kettle"], env)
    assert f"[{mid.group(1)}] The kettle on floor 3 is broken\n" in text
    assert not settings.socket_path.exists()  # no daemon
