"""Project checks that run with the tests: lint, types, layering, packaging."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_ruff_clean() -> None:
    proc = run(sys.executable, "-m", "ruff", "check", "keymem", "tests", "bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean() -> None:
    proc = run(sys.executable, "-m", "mypy", "keymem")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


ROOMS = ("keymem.server", "keymem.cli", "keymem.admin", "keymem.memory", "keymem.index", "keymem.text",
         "keymem.store", "keymem.models")


@pytest.mark.parametrize("layer, forbidden", [
    ("store", ("keymem.memory", "keymem.index", "keymem.text", "keymem.admin", "keymem.server", "keymem.cli")),
    ("models", ("keymem.memory", "keymem.index", "keymem.text", "keymem.admin", "keymem.server", "keymem.cli",
                "keymem.store")),
    ("text", ("keymem.memory", "keymem.index", "keymem.admin", "keymem.server", "keymem.cli", "keymem.store",
              "keymem.models")),
    ("index", ("keymem.memory", "keymem.admin", "keymem.server", "keymem.cli", "keymem.models")),
    ("memory", ("keymem.admin", "keymem.server", "keymem.cli")),
    ("admin", ("keymem.server", "keymem.cli")),
    ("", ROOMS),  # keymem/*.py (settings, errors, decay, native): shared by every room, import none
])
def test_layers_only_import_downwards(layer: str, forbidden: tuple[str, ...]) -> None:
    bad = []
    top = ROOT / "keymem" / layer
    for path in top.rglob("*.py") if layer else top.glob("*.py"):
        for name in _imports(path):
            if name.startswith(forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_no_cypher_strings_in_python() -> None:
    """Every statement lives in cypher/*.cypher; Python only names them."""
    import re

    pattern = re.compile(r"""["'](\s*)(MATCH|CREATE|MERGE|UNWIND|CALL)\s""")
    allowed = {"keymem/store/vectors.py"}  # the sentinel probe inside create_table
    bad = []
    for path in (ROOT / "keymem").rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        if rel in allowed or rel.startswith("keymem/cli/"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_wheel_ships_cypher(tmp_path: Path) -> None:
    proc = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), ".")
    if proc.returncode != 0:  # hatchling missing from the env: build isolated
        proc = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel = next(tmp_path.glob("keymem-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("keymem/cypher/") and n.endswith(".cypher")}
    expected = {"keymem/cypher/" + str(p.relative_to(ROOT / "cypher")) for p in (ROOT / "cypher").rglob("*.cypher")}
    assert shipped == expected
