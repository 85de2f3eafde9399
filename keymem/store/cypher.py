"""Load Cypher statements from ``cypher/*.cypher`` by name and check their parameters.

Every statement keymem runs lives in a ``.cypher`` file shipped in the wheel. Kuzu's
``execute()`` silently drops an unbound ``$x`` (a ``WHERE id = $x DELETE`` then deletes
every row), so each statement's ``$names`` are parsed once and every call must bind
exactly those names: :func:`check_params` refuses a mismatch before Kuzu sees it.

Statements are shared by the engines where their dialects agree. Where they differ, an engine's
own file ``cypher/engines/<engine>/<name>.cypher`` is read first (:data:`ENGINES`); LadybugDB's
text is the shared tree, so it has no overrides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


class QueryParamError(AssertionError):
    """A statement was called with missing or unexpected parameters (a programming error)."""


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    params: frozenset[str]
    # False for statements Kuzu cannot bind ahead of their values (a parameter inside a
    # recursive-pattern predicate); the file says so with a "// keymem: no-prepare" line.
    prepare: bool = True
    # True for statements whose engine memory grows with the store (whole-table reads, exports,
    # checks): each runs alone (Store._read), so it cannot exhaust the buffer pool under other
    # statements. The file says so with a "// keymem: heavy" line.
    heavy: bool = False
    # True for statements that change the graph (a CREATE, MERGE, SET, DELETE or REMOVE clause), read
    # from the text: on an engine that defers a write scope's writes to its commit (FalkorDB), these
    # are the ones queued, and reads run at once against the state before the scope.
    writes: bool = False


_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_TEMPLATE = re.compile(r"\{\{([a-z_]+)\}\}")
_WRITE_CLAUSE = re.compile(r"\b(?:CREATE|MERGE|SET|DELETE|REMOVE|DROP)\b", re.I)


def _strip(text: str) -> str:
    """Text with comments and string literals removed, so only real parameters remain."""
    return _STRING.sub("''", _COMMENT.sub(" ", text))


def writes(text: str) -> bool:
    """Whether a statement's text holds a clause that changes the graph (comments and strings aside)."""
    return _WRITE_CLAUSE.search(_strip(text)) is not None


def param_names(text: str) -> frozenset[str]:
    return frozenset(_PARAM.findall(_strip(text)))


def cypher_root() -> Path:
    """The shipped ``keymem/cypher`` in a wheel, else the repository's ``cypher/``."""
    packaged = resources.files("keymem") / "cypher"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "cypher"


ENGINES = ("ladybug", "falkordb")
DEFAULT_ENGINE = "ladybug"
OVERRIDES = "engines"  # cypher/engines/<engine>/<name>.cypher


def statement_path(name: str, engine: str = DEFAULT_ENGINE) -> Path:
    """The file of ``name`` for ``engine``: the engine's override if it has one, else the shared file."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    root = cypher_root()
    own = root / OVERRIDES / engine / f"{name}.cypher"
    return own if own.is_file() else root / f"{name}.cypher"


def shared_names() -> list[str]:
    """Every statement name of the shared tree (the overrides under ``engines/`` excluded)."""
    root = cypher_root()
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.cypher")
                  if p.relative_to(root).parts[0] != OVERRIDES)


@cache
def load(name: str, engine: str = DEFAULT_ENGINE) -> Statement:
    """One statement by name, e.g. ``"memory/create"`` for ``cypher/memory/create.cypher``."""
    path = statement_path(name, engine)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyError(f"no Cypher statement named {name!r} ({path})") from None
    text = _COMMENT.sub(" ", raw).strip().rstrip(";").strip()
    if ";" in _strip(text):
        raise ValueError(f"{name}.cypher holds several statements; use load_script")
    return Statement(name, text, param_names(text), prepare="keymem: no-prepare" not in raw,
                     heavy="keymem: heavy" in raw, writes=writes(text))


def load_script(name: str, engine: str = DEFAULT_ENGINE, **template: int) -> list[str]:
    """The statements of a multi-statement file (schema steps), in order; none for a file of comments
    only (a step an engine does not need keeps its name, as the store records step names).

    ``{{name}}`` placeholders take integers only (a vector dimension in DDL, where Kuzu
    accepts no parameters); anything else is refused.
    """
    raw = statement_path(name, engine).read_text(encoding="utf-8")

    def fill(match: re.Match[str]) -> str:
        value = template[match.group(1)]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"template value {match.group(1)}={value!r} must be a positive integer")
        return str(value)

    text = _TEMPLATE.sub(fill, _COMMENT.sub(" ", raw))
    parts = [p.strip() for p in text.split(";")]
    return [p for p in parts if p]


def check_params(stmt: Statement, params: dict[str, Any]) -> None:
    given = set(params)
    missing = stmt.params - given
    extra = given - stmt.params
    if missing or extra:
        detail = []
        if missing:
            detail.append("missing " + ", ".join(f"${n}" for n in sorted(missing)))
        if extra:
            detail.append("unexpected " + ", ".join(f"${n}" for n in sorted(extra)))
        raise QueryParamError(f"statement {stmt.name!r}: {'; '.join(detail)}")
