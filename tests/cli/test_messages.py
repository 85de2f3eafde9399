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
    # a bad value in an import file, quoted from the file
    export = tmp_path / "bad.jsonl"
    export.write_text(json.dumps({"type": "header", "format": "keymem-export", "version": 1}) + "\n"
                      + json.dumps({"type": "link", "key_id": BIG, "memory_id": "m_0", "weight": 1,
                                    "created_at": 1}) + "\n")
    out = run_cli(["import", str(export)], env)
    assert out.returncode == 1
    assert "(100000 characters)" in _one_short_line(out.stderr)
