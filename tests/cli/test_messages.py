"""What the command line says when something is wrong: one short line on stderr, the right exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from keymem.errors import shown
from tests.cli.conftest import run_cli

BIG = "x" * 100_000


def test_shown_cuts_long_values_and_says_their_length() -> None:
    assert shown("apple") == "'apple'" and shown("apple", as_json=True) == '"apple"'
    assert shown("a" * 80) == repr("a" * 80)  # up to the limit: whole
    assert shown("a" * 81) == repr("a" * 80 + "…") + " (81 characters)"
    assert shown("b" * 500, as_json=True) == '"' + "b" * 80 + '…" (500 characters)'
    assert shown("c" * 100, quoted=False) == "c" * 80 + "… (100 characters)"
    assert shown(7) == "7" and shown(None) == "None"
    assert shown(list(range(1000))).endswith("characters)") and len(shown(list(range(1000)))) < 120


def _one_short_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 300, stderr[:500]
    return lines[0]


def test_huge_arguments_are_cut_in_error_lines(store_env: dict[str, Any], tmp_path: Path) -> None:
    env = {**store_env["env"], "HOME": str(tmp_path)}
    out = run_cli(["token", "create", BIG], env)
    assert out.returncode == 1 and out.stdout == ""
    line = _one_short_line(out.stderr)
    assert line.startswith("keymem: token name 'xxxx") and "…' (100000 characters) is invalid" in line
    assert not store_env["settings"].token_file.exists()  # nothing written
    page = tmp_path / "graph.html"
    out = run_cli(["viz", "--key", BIG, "-o", str(page)], env)
    assert out.returncode == 1 and not page.exists()
    line = _one_short_line(out.stderr)
    assert line.startswith("keymem: no key named 'xxxx") and "(100000 characters)" in line
    out = run_cli(["init", "--model", BIG], env)
    assert out.returncode == 1 and "'xxxx" in out.stderr and "…' (100000 characters) is not a model" in out.stderr
    assert len(out.stderr) < 1000 and not (tmp_path / ".keymem").exists()
    out = run_cli(["doctor"], {**env, "LOCAL_EMBEDDING_MODEL": BIG, "LOCAL_EMBEDDING_MODEL_PATH": ""})
    assert out.returncode == 1 and max(len(line) for line in (out.stdout + out.stderr).splitlines()) < 400
    # a bad value in an import file, quoted from the file
    export = tmp_path / "bad.jsonl"
    export.write_text(json.dumps({"type": "header", "format": "keymem-export", "version": 1}) + "\n"
                      + json.dumps({"type": "link", "key_id": BIG, "memory_id": "m_0", "weight": 1,
                                    "created_at": 1}) + "\n")
    out = run_cli(["import", str(export)], env)
    assert out.returncode == 1
    assert "(100000 characters)" in _one_short_line(out.stderr)


def test_usage_errors_are_one_line_on_stderr_with_exit_2(tmp_path: Path) -> None:
    env = cli_env_without_store(tmp_path)
    cases = [
        (["export"], "keymem export: missing argument 'FILE' (see `keymem export --help`)"),
        (["token", "create"], "keymem token create: missing argument 'NAME' (see `keymem token create --help`)"),
        (["stats", "--hubs", "many"], "keymem stats: invalid value for '--hubs': "),
        (["viz", "--hops", "9"], "keymem viz: invalid value for '--hops': "),
        (["stats", "--hub", "3"], "keymem stats: no such option: --hub"),
        (["bogus"], "keymem: no such command 'bogus' (see `keymem --help`)"),
        (["cypher", "-f", str(tmp_path / "none.cypher")], "keymem cypher: invalid value for '-f' / '--file': "),
        (["stats", "--bogus", BIG], "keymem stats: no such option: --bogus"),
    ]
    for args, start in cases:
        out = run_cli(args, env)
        assert out.returncode == 2 and out.stdout == "", (args, out.stdout, out.stderr)
        line = _one_short_line(out.stderr)
        assert line.startswith(start), (args, line)
        assert "╭" not in out.stderr and "Usage:" not in out.stderr
    # the usage line names arguments as docs/cli.md does
    assert "Usage: keymem export [OPTIONS] FILE" in run_cli(["export", "--help"], env).stdout
    assert "Usage: keymem token create [OPTIONS] NAME" in run_cli(["token", "create", "--help"], env).stdout
    assert not (tmp_path / "data").exists()  # nothing written


def cli_env_without_store(tmp_path: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KEYMEM_", "OPENAI_"))}
    return {**env, "HOME": str(tmp_path), "KEYMEM_DATA_DIR": str(tmp_path / "data"), "KEYMEM_DAEMON": "off",
            "COLUMNS": "80"}


def test_bare_keymem_in_a_terminal_says_what_it_is_on_stderr(tmp_path: Path) -> None:
    """On a terminal, the stdio server explains itself on stderr and still serves; stdout stays protocol."""
    import os
    import pty
    import subprocess

    from tests.cli.conftest import KEYMEM

    env = cli_env_without_store(tmp_path)
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tty", "version": "1"}}})
    master, slave = pty.openpty()
    proc = subprocess.Popen(KEYMEM, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    try:
        os.write(master, initialize.encode() + b"\n")
        assert proc.stdout is not None
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "keymem"
        os.write(master, b"\x04")  # Ctrl-D: end of input
        rest, err = proc.communicate(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and rest == b""
    notice = err.decode()
    assert notice.startswith("keymem: this is keymem's MCP server on stdio") and "keymem --help" in notice
    # without a terminal (an MCP client's pipe), nothing is said
    piped = subprocess.run(KEYMEM, input=initialize + "\n", capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0 and json.loads(piped.stdout.splitlines()[0])["id"] == 1
    assert "MCP server on stdio" not in piped.stderr
