"""The Cypher console's statements on a FalkorDB store (``keymem cypher`` with ``KEYMEM_STORE_URL``).

LadybugDB runs a console statement inside a read-only transaction (``cypher/console/begin_read_only``).
FalkorDB has no transactions; it has ``GRAPH.RO_QUERY``, which runs a statement only if the statement
writes nothing (CREATE, SET, MERGE, DELETE, index procedures are refused before they run). So the
read-only console sends every statement as ``GRAPH.RO_QUERY``, and ``--write`` sends ``GRAPH.QUERY``
under keymem's writer. ``EXPLAIN`` is ``GRAPH.EXPLAIN``; ``PROFILE`` (``GRAPH.PROFILE`` runs the
statement outside ``RO_QUERY``) is refused. FalkorDB's labels are schemaless, so ``:schema`` lists labels
and relationship types with the properties keymem writes on them, not declared columns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from keymem.errors import InvalidInput

READ_ONLY_REFUSED = "graph.RO_QUERY is to be executed only on read-only queries"
WRITE_REFUSED = "read-only console: this statement would change the store; --write or :write on allows it"
NO_PROFILE = ("PROFILE is not available in the console on FalkorDB (GRAPH.PROFILE runs the statement outside "
              "the read-only GRAPH.RO_QUERY); :explain shows the plan")
NO_FUNCTIONS = "FalkorDB lists no functions (no show_functions()): completion offers keywords, labels and properties"
SCHEMALESS = "FalkorDB labels are schemaless: the properties shown are those keymem writes (no table_info())"


def _type_name(value: Any) -> str:
    """A column's type as LadybugDB names it, from a value FalkorDB answered with."""
    from falkordb import Edge, Node

    kinds = ((bool, "BOOL"), (int, "INT64"), (float, "DOUBLE"), (str, "STRING"), (Node, "NODE"), (Edge, "REL"),
             (list, "LIST"), (dict, "MAP"))  # bool before int: a bool is an int
    return next((name for kind, name in kinds if isinstance(value, kind)), "ANY" if value is not None else "")


def run(store: Any, query: str, *, write: bool, first_word: str, max_rows: int,
        jsonable: Callable[[Any], Any]) -> tuple[dict[str, Any], bool]:
    """One console statement on ``store`` (a FalkorStore): (the result as ``ops.cypher_run`` returns it,
    whether it may have changed the graph); ``jsonable`` is ops' value-to-JSON rule."""
    import redis

    from keymem.store.falkordb import _plain

    graph = store.executor.graph
    started = time.perf_counter()
    if first_word == "PROFILE":
        raise InvalidInput(NO_PROFILE)
    try:
        if first_word == "EXPLAIN":
            plan = graph.explain(query.lstrip()[len("EXPLAIN"):].strip())
            return {"columns": ["explain result"], "types": ["STRING"], "rows": [[str(plan)]], "truncated": False,
                    "ms": round((time.perf_counter() - started) * 1000, 2)}, False
        if write:
            with store.exclusive():  # holds keymem's writer, so no tool call writes meanwhile
                result = graph.query(query)
        else:
            result = graph.ro_query(query)
    except redis.exceptions.ResponseError as exc:
        text = str(exc).strip()
        if READ_ONLY_REFUSED in text:
            raise InvalidInput(WRITE_REFUSED) from None
        raise InvalidInput("FalkorDB: " + " ".join(text.split())) from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise InvalidInput(f"the FalkorDB server {store.describe()} did not answer ({exc})") from None
    columns = [str(c[1]) for c in result.header]
    values = result.result_set
    types = [next((_type_name(row[i]) for row in values if row[i] is not None), "") for i in range(len(columns))]
    rows = [[jsonable(_plain(v)) for v in row] for row in values[:max_rows]]
    return {"columns": columns, "types": types, "rows": rows, "truncated": len(values) > max_rows,
            "ms": round((time.perf_counter() - started) * 1000, 2)}, write


def schema(store: Any) -> dict[str, Any]:
    """``cypher_schema`` on FalkorDB: labels and relationship types on the graph, each with the properties
    keymem writes on it (from the shared schema), and a note for what FalkorDB cannot list."""
    from keymem.store.falkordb import schema_columns

    columns = schema_columns()
    tables = []
    for t in sorted(store.query("console/tables"), key=lambda t: (t["type"], t["name"])):
        tables.append({"name": t["name"], "type": t["type"],
                       "properties": [{"name": c, "type": "", "pk": False} for c in columns.get(t["name"], ())]})
    return {"tables": tables, "functions": [], "notes": [SCHEMALESS, NO_FUNCTIONS]}
