"""Graph-side work of the CLI, callable in-process or through the daemon.

Each function takes the graph (a MemoryGraph in the daemon, or a
:class:`keymem.cli.common.StoreView` when a store-only command opened the store itself) and
a JSON params dict, and returns JSON. :func:`keymem.server.host.daemon_method` lets the
daemon run them as ``keymem.cli.ops:<name>`` without a dispatch table.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from keymem.errors import InvalidInput, NotFound, shown
from keymem.memory import validate
from keymem.server.host import daemon_method
from keymem.store import cypher
from keymem.store.db import pool_exhausted
from keymem.store.engine import engine_message

MAX_ROWS = 10_000
SNAPSHOT_FILE = "keymem.lbug"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIRST_WORD = re.compile(r"^\s*(?:(?://[^\n]*|/\*.*?\*/)\s*)*([A-Za-z_]+)", re.S)
# Statements that write files or change the session, which a read-only transaction lets
# through (COPY ... TO, EXPORT DATABASE) or that would break the console's transaction.
FILE_OR_SESSION = {"COPY", "EXPORT", "IMPORT", "ATTACH", "DETACH", "INSTALL", "UNINSTALL", "LOAD", "USE",
                   "CHECKPOINT"}
TRANSACTION = {"BEGIN", "COMMIT", "ROLLBACK"}
_SETTING = re.compile(r"^\s*CALL\s+\w+\s*=", re.I)  # CALL threads = 1: changes the (shared) connection


# -- values ---------------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A LadybugDB value as JSON (nodes and rels stay dicts; times become ISO strings)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "tolist"):  # numpy arrays
        return jsonable(value.tolist())
    return str(value)


def first_word(query: str) -> str:
    m = _FIRST_WORD.match(query)
    return m.group(1).upper() if m else ""


def _result(result: Any, started: float) -> dict[str, Any]:
    if isinstance(result, list):  # several statements in one string: the console sends one at a time
        for r in result[:-1]:
            r.close()
        result = result[-1]
    try:
        columns = result.get_column_names()
        types = [str(t) for t in result.get_column_data_types()]
        rows: list[list[Any]] = []
        truncated = False
        while result.has_next():
            if len(rows) >= MAX_ROWS:
                truncated = True
                break
            rows.append([jsonable(v) for v in result.get_next()])
    finally:
        result.close()
    return {"columns": columns, "types": types, "rows": rows, "truncated": truncated,
            "ms": round((time.perf_counter() - started) * 1000, 2)}


# -- the console --------------------------------------------------------------------------------


@daemon_method
def cypher_run(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Run one console statement: read-only (the engine refuses writes in the transaction) unless ``write``.

    The engine's errors come back in keymem's words (:func:`keymem.store.engine.engine_message`)."""
    query = params.get("query")
    write = bool(params.get("write", False))
    args = params.get("params") or {}
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be a non-empty string")
    if not isinstance(args, dict):
        raise InvalidInput("params must be an object")
    unbound = cypher.param_names(query) - set(args)
    if unbound:  # the engine would run the statement with the parameter silently dropped
        names = ", ".join(f"${n}" for n in sorted(unbound))
        raise InvalidInput(f"the statement uses {names} but the console binds no parameters; write the values in")
    word = first_word(query)
    if word in TRANSACTION:
        raise InvalidInput(f"{word} is not available in the console: each statement runs in its own transaction")
    if not write and (word in FILE_OR_SESSION or _SETTING.match(query)):
        word = "CALL <setting> =" if _SETTING.match(query) else word
        raise InvalidInput(f"read-only console: {word} statements are refused (use --write or :write on)")
    store = graph.store
    if store.capabilities.engine == "falkordb":  # GRAPH.RO_QUERY instead of a read-only transaction
        from keymem.cli import console_falkordb

        out, wrote = console_falkordb.run(store, query, write=write, first_word=word, max_rows=MAX_ROWS,
                                          jsonable=jsonable)
        if wrote:
            graph.reload_caches()
        return out
    started = time.perf_counter()
    if write:
        with store.exclusive() as conn:  # holds keymem's writer, so no tool call writes meanwhile
            try:
                out = _result(conn.conn.execute(query, args), started)
            except RuntimeError as exc:
                raise InvalidInput(engine_message(exc)) from None
        graph.reload_caches()  # the statement bypassed the domain layer: re-read what recall holds
        return out

    def read_only(conn: Any) -> dict[str, Any]:
        """The statement in a read-only transaction of its own, on one connection."""
        conn.run("console/begin_read_only", {})
        try:
            return _result(conn.conn.execute(query, args), started)
        except RuntimeError as exc:
            if pool_exhausted(exc):
                raise  # the store answers it like any call's (Store.adhoc)
            msg = engine_message(exc)
            if "read-only transaction" in str(exc) or "read-only database" in str(exc):
                msg = "read-only console: this statement would change the store; --write or :write on allows it"
            raise InvalidInput(msg) from None
        finally:
            with contextlib.suppress(RuntimeError):  # the engine already rolled back a failed statement's transaction
                conn.run("console/rollback", {})

    return store.adhoc(read_only)  # a heavy read: one at a time, so it cannot starve the tools of pool


def _filled(name: str, table: str) -> str:
    if not _IDENT.match(table):
        raise InvalidInput(f"{shown(table)} is not a table name")
    return cypher.load(name).text.replace("{{table}}", table)


EXPAND_COLUMNS = ["hop", "from", "from_text", "via", "key_id", "to", "to_text", "w_from", "w_to", "mass"]
EXPAND_WORDS = 6  # a memory is shown by its first words (at most EXPAND_CHARS characters)
EXPAND_CHARS = 40


def first_words(text: str, words: int = EXPAND_WORDS, chars: int = EXPAND_CHARS) -> str:
    """A memory's first words, for a table cell: "Python is a programming language loved …"."""
    parts = text.split()
    short = " ".join(parts[:words])
    if len(short) > chars:
        return short[: chars - 1].rstrip() + "…"
    return short + (" …" if len(parts) > words else "")
EXPAND_MAX_HOPS = 5


class _Recorder:
    """A Neighbourhood that keeps what the walk asked and got, hop by hop."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.steps: list[tuple[list[str], Any]] = []

    def key_members(self, key_ids: list[str], now: float, fanout: int) -> Any:
        return self.inner.key_members(key_ids, now, fanout)

    def step(self, frontier: list[str], now: float, fanout: int) -> Any:
        hop = self.inner.step(frontier, now, fanout)
        self.steps.append((list(frontier), hop))
        return hop


@daemon_method
def cypher_expand(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The console's ``:expand``: the neighbourhood the association walk reads from one memory or key.

    Runs the walk of ``recall_direct`` (``associative.associate``) from the memory as its only
    seed, or from a key's visible memories (hop 1: key -> memory, weighted by link weight), over
    ``CypherNeighbourhood``: the same ``cypher/neighbourhood`` statements. One row per edge the walk
    follows: the hop, the frontier memory (id and first words), the shared key (its name and id, or
    RELATED_TO), the memory reached (id and first words), the two link weights, and the reached
    memory's association mass (the largest is 1).
    """

    from keymem.index.neighbourhood import CypherNeighbourhood
    from keymem.memory import associative, validate
    from keymem.store import walk

    start = params.get("id")
    if not isinstance(start, str) or not start.startswith(("m_", "k_")):
        raise InvalidInput("usage: :expand <memory id (m_...) or key id (k_...)> [hops]")
    hops = validate.count(params.get("hops"), "hops", default=2, lo=1, hi=EXPAND_MAX_HOPS)
    store = graph.store
    if not walk.copies_ready(store):
        raise InvalidInput("this store has not been through schema step 003 (the links' copies the walk reads); "
                           "open it once with keymem (the daemon applies it) and try again")
    now = graph.now()
    started = time.perf_counter()
    rec = _Recorder(CypherNeighbourhood(store))
    rows: list[list[Any]] = []
    if start.startswith("k_"):
        key = validate.ident(start, "key id", "k")
        if not store.query("key/get", id=key):
            raise NotFound(f"key {key} does not exist")
        members = rec.key_members([key], now, associative.HUB_FANOUT).get(key, [])
        if not members:
            raise InvalidInput(f"key {key} has no visible memory, or more than {associative.HUB_FANOUT} "
                               "(a hub: the walk does not go through it)")
        seeds = {mid: w for mid, w in members}
        first, walk_hops = 2, hops - 1
    else:
        mid = validate.ident(start, "memory id", "m")
        rows_m = store.query("memory/get", id=mid)
        m = rows_m[0]["m"] if rows_m else None
        if m is None or not m["active"] or (m["expires_at"] is not None and m["expires_at"] <= now):
            raise NotFound(f"memory {mid} does not exist or is not visible (superseded or expired)")
        seeds = {mid: 1.0}
        first, walk_hops = 1, hops
    found = associative.Association()
    if walk_hops:
        cands = {mid: associative.Candidate(mid, score) for mid, score in seeds.items()}
        found = associative.associate(rec, cands, walk_hops, now)
    mass = {m: round(a, 4) for m, a in found.mass.items()}
    if start.startswith("k_"):
        rows.extend([1, "", None, start, mid, None, w, mass.get(mid)] for mid, w in members)
    for h, (frontier, hop) in enumerate(rec.steps, start=first):
        for src in dict.fromkeys(frontier):
            for kid, w1 in hop.keys_of.get(src, ()):
                rows.extend([h, src, None, kid, dst, w1, w2, mass.get(dst)] for dst, w2 in hop.members[kid] if dst != src)
            rows.extend([h, src, "RELATED_TO", None, dst, w, w, mass.get(dst)] for dst, w in hop.related.get(src, ()))
    truncated = len(rows) > MAX_ROWS
    rows = rows[:MAX_ROWS]
    texts = {r["k"]["id"]: r["k"]["text"] for r in store.query("key/get_many", ids=sorted({r[3] for r in rows if r[3]}))} \
        if any(r[3] for r in rows) else {}
    mids = sorted({r[1] for r in rows if r[1]} | {r[4] for r in rows})
    words = {r["m"]["id"]: first_words(r["m"]["content"]) for r in store.query("memory/get_many", ids=mids)} \
        if mids else {}
    out = []
    for hop, src, via, kid, dst, w1, w2, reached in rows:
        out.append([hop, src, words.get(src, ""), texts.get(kid, "") if kid else via, kid, dst, words.get(dst, ""),
                    None if w1 is None else round(w1, 4), round(w2, 4), reached])
    return {"columns": EXPAND_COLUMNS, "types": ["INT64", "STRING", "STRING", "STRING", "STRING", "STRING", "STRING",
                                                 "DOUBLE", "DOUBLE", "DOUBLE"],
            "rows": out, "truncated": truncated, "ms": round((time.perf_counter() - started) * 1000, 2)}


@daemon_method
def cypher_schema(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Tables with their properties (and a rel's endpoints), plus function names for completion.

    On FalkorDB, labels and relationship types, and ``notes`` naming what that engine cannot list."""
    store = graph.store
    if store.capabilities.engine == "falkordb":
        from keymem.cli import console_falkordb

        return console_falkordb.schema(store)
    tables = []
    for t in store.query("console/tables"):
        props = store.raw(_filled("console/table_info", t["name"]))
        entry: dict[str, Any] = {"name": t["name"], "type": t["type"],
                                 "properties": [{"name": p["name"], "type": p["type"], "pk": bool(p.get("primary key"))}
                                                for p in props]}
        if t["type"] == "REL":
            ends = store.raw(_filled("console/connection", t["name"]))
            entry["connections"] = [[e["source table name"], e["destination table name"]] for e in ends]
        tables.append(entry)
    functions = [r["name"] for r in store.query("console/functions")] if params.get("functions", True) else []
    return {"tables": tables, "functions": functions}


# -- snapshot, stats ----------------------------------------------------------------------------


@daemon_method
def snapshot(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A consistent copy of the store file into a directory (checkpoint + copy under the writer)."""
    dest_dir = Path(str(params.get("dest", "")))
    if not dest_dir.is_absolute():
        raise InvalidInput("the snapshot directory must be an absolute path")
    dest = dest_dir / SNAPSHOT_FILE
    if dest.exists() and not params.get("force"):
        raise InvalidInput(f"{dest} already exists; pass --force to replace it")
    if dest.exists():
        for p in dest_dir.glob(SNAPSHOT_FILE + ".wal"):
            p.unlink()
    _flush_access(graph)
    graph.store.copy_to(dest)
    return {"path": str(dest), "bytes": dest.stat().st_size}


@daemon_method
def stats(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Counts, hubs, namespaces, store size, model and fingerprint, schema steps; on a graph per namespace,
    the counts, hubs, namespaces and size of every graph, the rest the default namespace's graph's."""
    from keymem.memory.namespace_graphs import summed

    parts = _namespace_parts(graph)
    if parts is None:
        return _stats_of(graph, params)
    home = _stats_of(graph.home, params)
    each = [home if part is graph.home else _stats_of(part, params) for _, part in parts]
    home["counts"] = summed(s["counts"] for s in each)
    home["hubs"] = sorted((h for s in each for h in s["hubs"]), key=lambda h: -int(h["n"]))[:int(params.get("hubs", 10))]
    home["namespaces"] = [row for s in each for row in s["namespaces"]]
    home["store"]["bytes"] = sum(s["store"]["bytes"] for s in each)
    home["store"]["path"] = f"{graph.url.shown()} (a graph per namespace: {len(each)})"
    return home


def _stats_of(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    from keymem.store import migrations

    store = graph.store
    now = graph.now()
    ns = params.get("namespace")
    counts = store.query("admin/counts", now=now)
    c = counts[0] if counts else {"keys": 0, "memories": 0, "links": 0}
    totals = store.query("console/totals")[0]
    hub_min = graph.settings.key_hub_min_links
    top = store.query("console/hubs", any_ns=ns is None, namespace=ns or "", now=now, limit=int(params.get("hubs", 10)))
    meta = {r["name"]: r["value"] for r in store.query("meta/all")}
    embedder = getattr(graph, "embedder", None)
    return {
        "counts": {"keys": int(c["keys"]), "memories": int(c["memories"]), "links": int(c["links"]),
                   "superseded": int(totals["superseded"] or 0), "aliases": int(totals["aliases"]),
                   "pending_aliases": int(totals["pending_aliases"]), "related": int(totals["related"])},
        "hubs": [{**h, "hub": int(h["n"]) >= hub_min} for h in top],
        "hub_min_links": hub_min,
        "namespaces": store.query("memory/namespaces", now=now),
        "store": {"path": store.describe(), "bytes": store.size_bytes(), "engine": meta.get("engine"),
                  "wal_recovery": meta.get("wal_recovery"), "server": server_of(store)},
        "model": {"stored_fingerprint": meta.get("embedding_fingerprint"), "dim": meta.get("embedding_dim"),
                  "loaded": getattr(embedder, "fingerprint", None)},
        "schema": {"applied": migrations.applied(store), "available": migrations.available()},
        "process": process_memory(store),
    }


def process_memory(store: Any) -> dict[str, Any]:
    """The serving process's RSS now and at its peak, and the engine's buffer pool (used includes cache)."""
    from keymem.server.daemon import rss_kb

    rss = rss_kb()
    out: dict[str, Any] = {"pid": os.getpid(), "rss_kb": rss.get("VmRSS"), "peak_rss_kb": rss.get("VmHWM"),
                           "buffer_pool": None}  # a server engine: its memory is the server's
    if store.capabilities.local_file:
        used, capacity = store.pool_usage()
        out["buffer_pool"] = {"used_bytes": used, "capacity_bytes": capacity, "auto": store.pool_auto,
                              "refused_statements": store.pool_failures, "reopens": store.reopens}
    return out


def server_of(store: Any) -> dict[str, Any] | None:
    """A server engine's versions, durability settings and keymem's acknowledgement policy (None for the
    embedded file); ``{"error": ...}`` when the server does not answer within the connect deadline."""
    if store.capabilities.local_file:
        return None
    from keymem.errors import KeymemError
    from keymem.store.falkor_connect import server_facts

    try:
        facts = server_facts(store.url)
    except KeymemError as exc:
        return {"error": str(exc), "ack": store.ack.describe()}
    return {**facts, "ack": store.ack.describe()}


# -- export / import / check --------------------------------------------------------------------


@daemon_method
def export(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    from keymem.admin import io

    namespace = params.get("namespace")
    parts = _namespace_parts(graph)
    if parts is None:
        _flush_access(graph)
        return {"lines": io.export_lines(graph.store, namespace, graph.now())}
    if namespace is not None:  # one namespace: its own graph's export
        part = graph.graph(validate.namespace(namespace))
        _flush_access(part)
        return {"lines": io.export_lines(part.store, namespace, graph.now())}
    for _, part in parts:
        _flush_access(part)
    return {"lines": io.export_lines_of([part.store for _, part in parts], graph.now())}


def _namespace_parts(graph: Any) -> list[tuple[str, Any]] | None:
    """(namespace, graph) of each namespace on a graph-per-namespace store; None for a store in one graph."""
    from keymem.memory.namespace_graphs import NamespaceGraphs

    return list(graph.graphs()) if isinstance(graph, NamespaceGraphs) else None


def _flush_access(graph: Any) -> None:
    """Write the coalesced read_memory accesses first, so the copy holds what the agent was shown."""
    access = getattr(graph, "access", None)  # a store-only view has none
    if access is not None:
        access.flush()


@daemon_method
def import_records(graph: Any, params: dict[str, Any]) -> dict[str, int]:
    """Write an already validated plan (the client validated every line before sending it)."""
    from keymem.admin import io

    return io.import_plan(graph, io.ImportPlan.load(params["plan"]))


@daemon_method
def check(graph: Any, params: dict[str, Any]) -> list[str]:
    from keymem.admin.invariants import check_invariants

    parts = _namespace_parts(graph)
    if parts is None:
        return check_invariants(graph)
    return [f"namespace {namespace}: {problem}" for namespace, part in parts for problem in check_invariants(part)]


@daemon_method
def digest(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The store digest (counts per table, one sha256), alike on both engines: export and import print it."""
    from keymem.admin.invariants import store_digest

    return store_digest(graph)


# -- viz ------------------------------------------------------------------------------------------


@daemon_method
def viz_data(graph: Any, params: dict[str, Any]) -> dict[str, Any]:
    """A neighbourhood as nodes and edges: around a key (``hops`` key-memory-key steps) or recent memories."""
    from keymem.memory.validity import freshness, status
    from keymem.text.tokenize import normalize_text

    store = graph.store
    s = graph.settings
    now = graph.now()
    ns = params.get("namespace")
    scope = {"any_ns": ns is None, "namespace": ns or ""}
    limit = int(params.get("limit", 300))
    hops = max(1, min(5, int(params.get("hops", 2))))
    key = params.get("key")
    links: dict[tuple[str, str], float] = {}
    mem_ids: set[str] = set()
    key_ids: set[str] = set()
    if key:
        norm = normalize_text(str(key))
        start = {r["id"] for r in store.query("console/viz_find_keys", text=str(key), norm=norm, **scope)}
        start |= {r["id"] for r in store.query("console/viz_alias_keys", norm=norm, **scope)}
        if not start:
            where = f" in namespace {shown(ns)}" if ns else ""
            raise NotFound(f"no key named {shown(key)}{where}")
        frontier = set(start)
        key_ids |= start
        for _ in range(hops):
            new_mems: set[str] = set()
            for r in store.query("console/viz_key_links", ids=sorted(frontier), now=now):
                if r["memory_id"] not in mem_ids and len(mem_ids) + len(new_mems) >= limit:
                    continue
                links[(r["key_id"], r["memory_id"])] = r["weight"]
                if r["memory_id"] not in mem_ids:
                    new_mems.add(r["memory_id"])
            mem_ids |= new_mems
            if not new_mems:
                break
            frontier = set()
            for r in store.query("console/viz_memory_links", ids=sorted(new_mems)):
                links[(r["key_id"], r["memory_id"])] = r["weight"]
                if r["key_id"] not in key_ids:
                    frontier.add(r["key_id"])
            key_ids |= frontier
            if not frontier:
                break
    else:
        mem_ids = {r["id"] for r in store.query("console/viz_recent", now=now, limit=limit, **scope)}
        for r in store.query("console/viz_memory_links", ids=sorted(mem_ids)):
            links[(r["key_id"], r["memory_id"])] = r["weight"]
            key_ids.add(r["key_id"])
    mems = {r["m"]["id"]: r["m"] for r in store.query("memory/get_many", ids=sorted(mem_ids))} if mem_ids else {}
    keys = {r["k"]["id"]: r["k"] for r in store.query("key/get_many", ids=sorted(key_ids))} if key_ids else {}
    counts = {r["id"]: int(r["n"]) for r in store.query("key/counts", ids=sorted(key_ids), now=now)} if key_ids else {}
    nodes: list[dict[str, Any]] = []
    for kid, k in sorted(keys.items()):
        n = counts.get(kid, 0)
        nodes.append({"id": kid, "kind": "key", "label": k["text"], "key_type": k["key_type"],
                      "namespace": k["namespace"], "memories": n, "hub": n >= s.key_hub_min_links})
    for mid, m in sorted(mems.items()):
        fresh = freshness(m["last_confirmed_at"], now, s.half_life_days(m["decay_profile"]))
        st = "superseded" if not m["active"] else status(fresh)
        text = m["content"]
        nodes.append({"id": mid, "kind": "memory", "label": text if len(text) <= 60 else text[:57] + "...",
                      "content": text[:500], "namespace": m["namespace"], "status": st,
                      "stale": st in ("stale", "superseded"), "freshness": round(fresh, 3)})
    edges: list[dict[str, Any]] = [
        {"source": k, "target": m, "kind": "link", "weight": round(float(w), 3)}
        for (k, m), w in sorted(links.items()) if k in keys and m in mems
    ]
    for mid, m in sorted(mems.items()):
        if m["supersedes"] and m["supersedes"] in mems:
            edges.append({"source": mid, "target": m["supersedes"], "kind": "supersedes", "weight": 1.0})
    if mems:
        for r in store.query("console/viz_related", ids=sorted(mems)):
            edges.append({"source": r["src"], "target": r["dst"], "kind": "related", "weight": round(float(r["weight"]), 3)})
    return {"nodes": nodes, "edges": edges, "key": key, "namespace": ns, "hops": hops,
            "hub_min_links": s.key_hub_min_links, "generated_at": now}


OPS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "cypher_run": cypher_run, "cypher_schema": cypher_schema, "cypher_expand": cypher_expand, "snapshot": snapshot,
    "stats": stats,
    "export": export, "import_records": import_records, "check": check, "digest": digest,
    "viz_data": viz_data,
}
