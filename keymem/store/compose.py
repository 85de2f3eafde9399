"""A write scope's queued statements as one query (FalkorDB): the scope commits whole or not at all.

FalkorDB runs one ``GRAPH.QUERY`` atomically (a query failing at run time is undone entirely) and has
no transaction spanning several queries, so :class:`~keymem.store.falkordb.FalkorExecutor` queues the
statements of a write scope and sends them here at its end as one query of ``CALL {}`` subqueries, in
order, each one's ``$params`` renamed apart (``$q3_id``). Measured on FalkorDB 4.16.3, each subquery
sees the writes of the ones before it, provided the labels and relationship types they match already
exist in the graph when the query is planned (a ``MATCH (:Label)`` on a label first created in the same
query finds nothing): :func:`register_names` creates every label and type keymem uses once per graph.

A statement that returns rows becomes a subquery that collects them into one list
(``... WITH a AS x RETURN collect({x: x}) AS _kq``), so every subquery yields one row and the next
runs once; the lists come back, in order, as the query's ``rows``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from keymem.store.executor import PendingRows

_MASK = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_RETURN = re.compile(r"\bRETURN\b", re.I)
_ALIAS = re.compile(r"\bAS\s+([A-Za-z_][A-Za-z0-9_]*)\s*$", re.I | re.S)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TAIL = re.compile(r"\b(?:ORDER\s+BY|SKIP|LIMIT)\b", re.I)
# Index and constraint statements cannot run inside a subquery: a scope runs them at once.
_SCHEMA = re.compile(r"^\s*(?:CREATE|DROP)\s+(?:\w+\s+)?(?:INDEX|CONSTRAINT)\b", re.I)


@dataclass
class Queued:
    """One statement of a write scope, waiting for the scope's end."""

    name: str
    text: str
    params: dict[str, Any]
    rows: PendingRows  # handed to the body; filled when the scope commits


def masked(text: str) -> str:
    """``text`` with its string literals and quoted names blanked to the same length (positions hold)."""
    return _MASK.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], text)


def is_schema_change(text: str) -> bool:
    return _SCHEMA.match(text) is not None


def _depth_zero(text: str, pos: int) -> bool:
    depth = 0
    for ch in text[:pos]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth == 0


def _split_columns(projection: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(projection):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(projection[start:i])
            start = i + 1
    out.append(projection[start:])
    return [c.strip() for c in out if c.strip()]


def returned_columns(text: str) -> tuple[int, list[str]] | None:
    """Where a statement's final top-level RETURN starts and the names of its columns; None if it has none.

    A column must be a variable or carry ``AS name`` (the name is the row's key on every engine).
    """
    plain = masked(text)
    found = [m for m in _RETURN.finditer(plain) if _depth_zero(plain, m.start())]
    if not found:
        return None
    start = found[-1].start()
    projection = plain[found[-1].end():]
    if tail := _TAIL.search(projection):
        projection = projection[: tail.start()]
    projection = re.sub(r"^\s*DISTINCT\b", "", projection, flags=re.I)
    names = []
    for column in _split_columns(projection):
        alias = _ALIAS.search(column)
        name = alias.group(1) if alias else column
        if not _NAME.match(name):
            raise ValueError(f"a returned column {column!r} needs `AS name` to be composed into one query")
        names.append(name)
    return start, names


def _rename(text: str, prefix: str) -> str:
    """``$x`` -> ``$<prefix>x`` outside string literals."""
    out, last = [], 0
    for m in _MASK.finditer(text):
        out.append(_PARAM.sub(lambda p: f"${prefix}{p.group(1)}", text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_PARAM.sub(lambda p: f"${prefix}{p.group(1)}", text[last:]))
    return "".join(out)


GROUP = 100  # subqueries per nesting level: FalkorDB plans a flat chain of n subqueries in O(n^2) time


def _group(items: list[tuple[str, dict[int, list[int]]]], *, top: bool) -> tuple[str, dict[int, list[int]]]:
    """Items (a subquery, and for the statements under it that return rows the path to their rows in
    its value) chained into one subquery whose value lists the values of those that return (or the
    query's body, at the top)."""
    parts: list[str] = []
    paths: dict[int, list[int]] = {}
    k = 0
    for text, under in items:
        parts.append(text)
        if under:
            parts.append("WITH rows + [_kq] AS rows" if k else "WITH [_kq] AS rows")
            paths.update((i, [k, *path]) for i, path in under.items())
            k += 1
    body = " ".join(parts)
    if top:
        return f"{body} {'RETURN rows' if k else 'RETURN 1 AS done'}", paths
    return (f"CALL {{ {body} RETURN rows AS _kq }}" if k else f"CALL {{ {body} }}"), paths


def compose(queued: list[Queued]) -> tuple[str, dict[str, Any], dict[int, list[int]]]:
    """One query running ``queued`` in order, its parameters, and for each statement that returns rows
    the path to them in the query's one ``rows`` value (nested lists, one level per nesting).

    Every ``GROUP`` subqueries are nested in one, level by level: a flat chain of 8000 took 8.2 s to run
    on FalkorDB 4.16.3, nested by 100 0.5 s. The lists collected so far travel in one variable
    (``WITH rows + [_kq] AS rows``), so the text grows linearly with the statements.
    """
    params: dict[str, Any] = {}
    items: list[tuple[str, dict[int, list[int]]]] = []
    for i, q in enumerate(queued):
        prefix = f"q{i}_"
        text = _rename(q.text, prefix)
        params.update((prefix + k, v) for k, v in q.params.items())
        ret = returned_columns(text)
        if ret is None:
            items.append((f"CALL {{ {text} }}", {}))
            continue
        start, names = ret
        pairs = ", ".join(f"{n}: {n}" for n in names)
        items.append((f"CALL {{ {text[:start]}WITH{text[start + len('RETURN'):]} RETURN collect({{{pairs}}}) AS _kq }}",
                      {i: []}))
    while len(items) > GROUP:
        items = [_group(items[j:j + GROUP], top=False) for j in range(0, len(items), GROUP)]
    text, paths = _group(items, top=True)
    return text, params, paths


def rows_at(value: Any, path: list[int]) -> list[Any]:
    """One statement's rows in a composed query's ``rows`` value."""
    for step in path:
        value = value[step]
    return list(value)


def names_query(labels: list[str], types: list[str]) -> str:
    """One query that creates a node of every label and an edge of every type, then deletes them."""
    nodes = [f"(n{i}:{label})" for i, label in enumerate(labels)]
    edges = [f"(n0)-[r{i}:{kind}]->(n0)" for i, kind in enumerate(types)]
    gone = [f"r{i}" for i in range(len(types))] + [f"n{i}" for i in range(len(labels))]
    return f"CREATE {', '.join(nodes + edges)} DELETE {', '.join(gone)}"


# The graph's catalogue, read before the first composed scope (``FalkorExecutor.register_names``).
LABELS_QUERY = "CALL db.labels() YIELD label RETURN label"
TYPES_QUERY = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS t"
