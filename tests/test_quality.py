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


def _module_graph() -> dict[str, set[str]]:
    """keymem module -> the keymem modules it imports (type-checking imports included)."""
    mods: dict[str, Path] = {}
    for path in (ROOT / "keymem").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            edges[mod].update(n for n in names if n in mods and n != mod and not mod.startswith(n + "."))
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle() -> None:
    """No two modules import each other, directly or round a loop, even for type checking only:
    the facade (memory/graph.py) imports the operations, which take ``memory.parts.Parts``."""
    assert _cycles(_module_graph()) == []


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_cypher_strings_in_python() -> None:
    """Every statement lives in cypher/*.cypher; Python only names them."""
    import re

    pattern = re.compile(r"""["'](\s*)(MATCH|CREATE|MERGE|UNWIND|CALL)\s""")
    # the sentinel probe inside create_table; the composer that wraps named statements into one
    # FalkorDB query (CALL { ... } around each, the catalogue it reads first)
    allowed = {"keymem/store/vectors.py", "keymem/store/compose.py"}
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
