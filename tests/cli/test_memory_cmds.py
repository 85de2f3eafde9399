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

README = Path(__file__).resolve().parents[2] / "README.md"


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


def readme_shell_example() -> list[list[str]]:
    """The README's "## From the shell" commands (its bash block, lines joined at a trailing backslash)
    up to its recall, as argument lists."""
    import shlex

    text = README.read_text(encoding="utf-8")
    block = text.split("## From the shell", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    assert all(c[0] == "keymem" for c in commands), commands
    return [c[1:] for c in commands[:4]]


def test_remember_recall_read_forget_keys_through_the_daemon(settings: Settings, daemon_env: dict[str, str]) -> None:
    env = daemon_env
    # the README's example, as written: three facts, then the recall that follows the chain of keys
    *remembers, recall_args = readme_shell_example()
    assert [c[0] for c in remembers] == ["remember"] * 3 and recall_args[0] == "recall"
    ids = [re.match(r"stored (m_[0-9a-f]+) \(keys: ", _ok(args, env)) for args in remembers]
    assert all(ids), ids
    cat, fruit, allergy = (m.group(1) for m in ids if m)
    text = _ok(recall_args, env)
    data = json.loads(_ok([*recall_args, "--json"], env))
    assert text == render("recall", data) + "\n"  # exactly the lines an agent's recall gets
    assert f"[{cat}] The user's cat is named Newton" in text and "(via apple -> strawberry)" in text
    assert f"[{allergy}] The user is allergic to strawberries (via apple -> strawberry)" in text
    assert f"[{fruit}] Apples and strawberries are both fruit of the rose family (via apple)" in text
    newton_key = next(k["key_id"] for k in data["keys"] if k["key"] == "Newton")

    # the daemon the first command started holds the store; a status request is no client of its own
    status = _ok(["daemon", "--status"], env)
    assert "0 client(s)" in status and "store: 6 keys, 3 memories" in status, status
    held = DaemonClient(settings, start=False)
    try:
        held.call("ping", timeout=10)
        assert "1 client(s)" in _ok(["daemon", "--status"], env)
    finally:
        held.close()

    none = _ok(["recall", "What is 17 times 23?"], env)
    assert "no key comes close" in none and "keys below" not in none
    # refused input: one line, exit 2, nothing written
    assert "decay_profile" in _refused(["remember", "x", "-k", "a", "--decay", "forever"], env)
    assert "is not a keymem id" in _refused(["read", "m_nope"], env)
    # keys, read, read-key
    keys = _ok(["keys", "--limit", "10", "--offset", "0"], env)
    apple = re.search(r"^apple (k_[0-9a-f]+) \(2 memories\)$", keys, re.M)
    assert keys.splitlines()[0] == "keys 1-6 of 6:" and apple, keys
    read = _ok(["read", cat, "--via", apple.group(1)], env)
    assert read.splitlines()[0] == f"[{cat}] The user's cat is named Newton, after Isaac Newton and his apple"
    assert f"Newton {newton_key}" in read
    assert _ok(["read-key", "apple"], env).startswith(f"key: apple {apple.group(1)}; memories 1-2 of 2")


    # forget: gone for good (an id that names nothing: exit 1)
    assert _ok(["forget", cat], env) == f"deleted {cat}\n"
    assert "does not exist" in _refused(["read", cat], env, code=1)


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
