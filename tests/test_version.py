"""keymem.__version__: package metadata, else the source tree's pyproject.toml; looked up lazily."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import keymem

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_installed_metadata_and_matches_pyproject() -> None:
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert keymem.package_version() == metadata.version("keymem") == declared
    assert keymem.__version__ == declared


def test_not_installed_falls_back_to_the_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert keymem.package_version() == declared
    monkeypatch.setattr(keymem, "_source_tree_version", lambda: None)  # an unpacked copy without pyproject
    assert keymem.package_version() == keymem.UNKNOWN_VERSION


def test_importing_keymem_does_not_look_the_version_up() -> None:
    """The prompt hook imports keymem on every prompt; importlib.metadata alone costs tens of ms."""
    code = ("import sys, keymem, keymem.server.client, keymem.server.hook\n"
            "print('importlib.metadata' in sys.modules)\n"
            "print(keymem.__version__, 'importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", metadata.version("keymem"), "True"]
