"""keymem: associative memory for LLM agents (a key/memory graph in embedded Kuzu).

``keymem.__version__`` is the installed distribution's version (package metadata), or, in a
source tree that is not installed, the ``version`` of the ``pyproject.toml`` beside it. It is
looked up on first access: importing ``importlib.metadata`` costs tens of milliseconds, which
the prompt hook (``keymem hook``, on every prompt) does not pay.
"""

from __future__ import annotations

from typing import Any

__version__: str  # resolved by __getattr__ on first access, then cached in the module

UNKNOWN_VERSION = "0+unknown"


def package_version() -> str:
    """The version of keymem: package metadata, else the source tree's pyproject.toml, else 0+unknown."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("keymem")
    except PackageNotFoundError:
        return _source_tree_version() or UNKNOWN_VERSION


def _source_tree_version() -> str | None:
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return None
    found = project.get("version") if project.get("name") == "keymem" else None
    return found if isinstance(found, str) and found else None


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = package_version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'keymem' has no attribute {name!r}")
