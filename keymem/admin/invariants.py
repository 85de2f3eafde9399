"""Structural invariants of a store: what must hold after every committed write.

:func:`check_invariants` returns a list of human-readable problems (empty = healthy). It is
what ``keymem doctor --check`` runs, and what the reliability tests run after crashes, under
load and after hostile input. Every statement lives in ``cypher/invariants/*.cypher``.

What is checked:

* no memory without keys (active or superseded); LINKS and RELATED_TO never cross
  namespaces; link weights are finite and within [LINK_MIN, LINK_MAX]; what the association
  walk reads in their place is exact: each link's copy of its memory's active flag and expiry,
  each key's count of lasting links (to active memories without a TTL), and the
  ``has_related`` flag of every memory with a RELATED_TO edge;
* no pointer to a missing node: ``supersedes`` / ``superseded_by``, ``KeyName.key_id``,
  ``Alias.key_id`` (+ its ALIAS_OF edge), ``PendingAlias.key_id``, ``MemoryNorm.memory_id``.
  (Kuzu relationships cannot dangle: nodes are removed with DETACH DELETE. The pointers
  stored as properties can, so those are what is checked.);
* version chains: a superseded version is inactive, an inactive memory has a successor,
  both pointers and the SUPERSEDES edge agree, no two versions supersede one memory, and
  at most one version per chain is active;
* key vectors: every concept key has its KeyVec row, no KeyVec row without a concept key
  (except the ``__sentinel__``, which must be there), namespaces agree, and the in-memory
  vector cache holds as many vectors as the table;
* every key is found by its own normalised name and no key is left without a memory;
* MemoryNorm rows point to active memories, every active memory has exactly one, and its id
  is ``<namespace>\\x1f<sha256(normalised content)>``;
* the lexical (BM25) index holds exactly the active, non-expired memories, each in its own
  namespace. A memory whose TTL has passed but which the periodic sweep has not deleted
  yet may still be in the index (searches filter it out); it is reported only when
  ``strict_expiry=True``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.store.vectors import SENTINEL

if TYPE_CHECKING:
    from keymem.memory.graph import MemoryGraph

SEP = "\x1f"
SHOW = 5  # ids listed per problem


def _ids(rows: list[dict[str, Any]], fmt: str) -> str:
    shown = [fmt.format(**r) for r in rows[:SHOW]]
    more = f" (+{len(rows) - SHOW} more)" if len(rows) > SHOW else ""
    return ", ".join(shown) + more


# (statement, extra params, message prefix, per-row format)
_CHECKS: list[tuple[str, dict[str, Any], str, str]] = [
    ("memory_without_keys", {}, "memories without keys", "{id}"),
    ("link_namespace", {}, "LINKS edges across namespaces", "{key_id}->{memory_id}"),
    ("link_copies", {}, "LINKS edges whose copy of their memory's active flag or expiry is wrong",
     "{key_id}->{memory_id}"),
    ("key_lasting", {}, "keys whose count of lasting links is wrong", "{id} ({stored} vs {n})"),
    ("related_flag", {}, "memories with a RELATED_TO edge but no has_related flag", "{id}"),
    ("related_namespace", {}, "RELATED_TO edges across namespaces", "{src}->{dst}"),
    ("supersedes_missing", {}, "supersedes points to a missing memory", "{id}->{target}"),
    ("superseded_by_missing", {}, "superseded_by points to a missing memory", "{id}->{target}"),
    ("superseded_active", {}, "superseded versions still active", "{id} (superseded by {target})"),
    ("inactive_unsuperseded", {}, "inactive memories with no successor", "{id}"),
    ("superseded_by_mismatch", {}, "superseded_by not mirrored by the successor's supersedes",
     "{id}->{target} (which supersedes {back})"),
    ("supersedes_mismatch", {}, "supersedes not mirrored by the old version's superseded_by",
     "{id}->{target} (whose superseded_by is {back})"),
    ("supersedes_shared", {}, "memories superseded by several versions", "{target} x{n}"),
    ("supersedes_edge_mismatch", {}, "SUPERSEDES edges that disagree with the pointers", "{src}->{dst}"),
    ("supersedes_edge_missing", {}, "supersedes pointers without a SUPERSEDES edge", "{id}->{target}"),
    ("chain_active", {}, "version chains with more than one active version", "{id} & {other}"),
    ("key_without_vec", {}, "concept keys without a KeyVec row", "{id}"),
    ("vec_without_key", {"sentinel": SENTINEL}, "KeyVec rows without a concept key", "{id}"),
    ("vec_namespace", {}, "KeyVec rows in another namespace than their key", "{id} ({vns!r} vs {kns!r})"),
    ("keyname_orphan", {}, "KeyName rows pointing to a missing key", "{id!r}->{target}"),
    ("keyname_namespace", {"sep": SEP}, "KeyName rows pointing into another namespace", "{id!r}->{target}"),
    ("key_name_missing", {"sep": SEP}, "keys not found by their own name", "{id}"),
    ("key_orphan", {}, "keys without any memory", "{id}"),
    ("alias_orphan", {}, "aliases of a missing key", "{id}->{target}"),
    ("pending_orphan", {}, "pending aliases of a missing key", "{id!r}->{target}"),
    ("norm_orphan", {}, "MemoryNorm rows not pointing to an active memory", "{id!r}->{target}"),
    ("norm_missing", {}, "active memories without a MemoryNorm row", "{id}"),
    ("norm_multiple", {}, "memories with several MemoryNorm rows", "{id} x{n}"),
]


def check_invariants(graph: MemoryGraph, *, strict_expiry: bool = False) -> list[str]:
    """Every broken invariant of ``graph``'s store and in-memory mirrors; empty means healthy."""
    from keymem.memory.write import LINK_MAX, LINK_MIN, norm_id

    store = graph.store
    problems: list[str] = []
    for name, params, what, fmt in _CHECKS:
        rows = store.query(f"invariants/{name}", **params)
        if rows:
            problems.append(f"{len(rows)} {what}: {_ids(rows, fmt)}")

    rows = store.query("invariants/link_weight", lo=LINK_MIN - 1e-9, hi=LINK_MAX + 1e-9)
    if rows:
        problems.append(f"{len(rows)} link weights outside [{LINK_MIN}, {LINK_MAX}]: "
                        f"{_ids(rows, '{key_id}->{memory_id}={weight}')}")

    vc = store.query("invariants/vec_counts", sentinel=SENTINEL)[0]
    if int(vc["sentinel"] or 0) != 1:
        problems.append(f"the KeyVec sentinel row {SENTINEL!r} is missing (an indexed table must never be empty)")
    if int(vc["n"] or 0) != len(graph.vectors):
        problems.append(f"the vector cache counts {len(graph.vectors)} key vectors but KeyVec holds {vc['n']}")

    bad_norm = [r for r in store.query("invariants/norm_rows") if r["id"] != norm_id(r["namespace"], r["content"])]
    if bad_norm:
        problems.append(f"{len(bad_norm)} MemoryNorm ids that do not match their memory's text: "
                        f"{_ids(bad_norm, '{memory_id}')}")

    problems.extend(_check_lexical(graph, strict_expiry))
    problems.extend(mirror_problems(graph))
    return problems


def mirror_problems(graph: MemoryGraph) -> list[str]:
    """The graph mirror and alias index recall reads must equal the store, row for row."""
    from keymem.index.aliases import AliasIndex
    from keymem.index.mirror import GraphMirror

    fresh = GraphMirror(graph.store, graph.settings)
    fresh_aliases = AliasIndex(graph.store)
    with graph.store.no_writes():  # a write committing between the two reads would look like drift
        fresh.load()
        fresh_aliases.load()
        held, truth = graph.mirror.snapshot(), fresh.snapshot()
        held_aliases, true_aliases = graph.aliases.snapshot(), fresh_aliases.snapshot()
    def differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
        return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))

    problems = []
    diff = differing(held_aliases, true_aliases)
    if diff:
        problems.append(f"the alias index differs from the store for {len(diff)} keys: {', '.join(diff[:5])}")
    for part in ("memories", "keys"):
        diff = differing(held[part], truth[part])
        if diff:
            problems.append(f"the graph mirror differs from the store for {len(diff)} {part}: {', '.join(diff[:5])}")
    if graph.mirror.failures:
        problems.append(f"{graph.mirror.failures} graph mirror refreshes failed since open (see the log)")
    return problems


def _check_lexical(graph: MemoryGraph, strict_expiry: bool) -> list[str]:
    now = graph.now()
    lex = graph.lexical
    live: dict[str, str] = {}
    pending_sweep: set[str] = set()
    for r in graph.store.query("invariants/active_ids"):
        if r["expires_at"] is not None and r["expires_at"] <= now:
            pending_sweep.add(r["id"])
        else:
            live[r["id"]] = r["namespace"]
    problems = []
    missing = sorted(mid for mid in live if mid not in lex)
    if missing:
        problems.append(f"{len(missing)} active memories missing from the lexical index: "
                        f"{_ids([{'id': m} for m in missing], '{id}')}")
    extra_expired = sorted(mid for mid in pending_sweep if mid in lex)
    if strict_expiry and extra_expired:
        problems.append(f"{len(extra_expired)} expired memories still in the lexical index: "
                        f"{_ids([{'id': m} for m in extra_expired], '{id}')}")
    allowed = len(live) - len(missing) + len(extra_expired)
    if len(lex) != allowed:
        problems.append(
            f"the lexical index holds {len(lex)} documents but only {allowed} are active memories "
            f"({len(lex) - allowed} forgotten, superseded or unknown ids are still searchable)"
        )
    per_ns = Counter(live.values())
    for mid in extra_expired:
        per_ns[_namespace_of(graph, mid)] += 1
    for ns in sorted(set(per_ns) | set(lex.namespaces())):
        docs = int(lex.stats(ns)["docs"])
        if docs != per_ns.get(ns, 0) and not missing:
            problems.append(f"namespace {ns!r}: the lexical index holds {docs} documents, the store {per_ns.get(ns, 0)}")
    return problems


def _namespace_of(graph: MemoryGraph, memory_id: str) -> str:
    rows = graph.store.query("memory/get", id=memory_id)
    return rows[0]["m"]["namespace"] if rows else ""


# Left out of the digest: this store's own bookkeeping, which the same content on another store or engine
# does not share. When each schema step ran here, the results of mutating calls kept an hour for client
# retries (Request), the change records daemons sharing a store catch up from (Change, ChangeHead:
# written on a shared FalkorDB store only), and each memory's stored BM25 terms (a cache of the
# tokenizer's output, filled on open when missing, as after an import).
DIGEST_SKIPS_LABELS = frozenset({"Request", "Change", "ChangeHead"})
DIGEST_SKIPS_PROPERTIES = {"KeymemMigration": frozenset({"applied_at"}), "Memory": frozenset({"terms"})}
DIGEST_DIGITS = 15  # FalkorDB answers doubles with 15 significant digits
# What every graph of a graph-per-namespace store holds once for itself (its schema steps and settings):
# digested from the first graph only, so the store digests as the same data in one graph does.
PER_GRAPH_LABELS = frozenset({"Meta", "KeymemMigration"})


def _digest_parts(graph: Any) -> list[Any]:
    """The graphs a digest reads: each namespace's on a graph-per-namespace store (the default one first),
    else the one."""
    from keymem.memory.namespace_graphs import NamespaceGraphs

    if isinstance(graph, NamespaceGraphs):
        return [graph.home, *(g for ns, g in graph.graphs() if g is not graph.home)]
    return [graph]


def _canonical(value: Any) -> Any:
    """A value as both engines give it: numbers at DIGEST_DIGITS significant digits (FalkorDB keeps a
    DOUBLE written as a whole number an integer, and answers 15 digits), lists and maps element-wise."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(f"{float(value):.{DIGEST_DIGITS}g}")
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def store_digest(graph: MemoryGraph) -> dict[str, Any]:
    """Row counts per table and one sha256 over every node, edge and key vector, alike on every engine.

    Two digests are equal exactly when nothing in the store changed (internal offsets are
    left out), and a store moved to another engine (``keymem export`` / ``keymem import``) digests
    as its source did. Rows are hashed in an order of their own (not the engine's), with absent and
    null properties alike and numbers at 15 significant digits (DIGEST_DIGITS); what the digest
    leaves out is DIGEST_SKIPS_*. The reliability tests compare digests around refused calls.
    Coalesced ``read_memory`` accesses are written first, so the digest covers what the agent was shown.
    """
    import hashlib
    import json

    parts = _digest_parts(graph)
    for part in parts:
        access = getattr(part, "access", None)  # a store-only view (the CLI's own open) has none
        if access is not None:
            access.flush()

    counts: Counter[str] = Counter()
    lines: list[str] = []

    def feed(label: str, row: dict[str, Any]) -> None:
        if label in DIGEST_SKIPS_LABELS:
            return
        counts[label] += 1
        skip = DIGEST_SKIPS_PROPERTIES.get(label, frozenset())
        clean = {k: _canonical(v) for k, v in row.items() if not k.startswith("_") and v is not None and k not in skip}
        lines.append(json.dumps([label, clean], sort_keys=True, default=repr))

    vecs: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        for r in part.store.query("invariants/digest_nodes"):
            if i == 0 or r["label"] not in PER_GRAPH_LABELS:
                feed(r["label"], r["n"])
        for r in part.store.query("invariants/digest_rels"):
            feed(r["label"], {**r["r"], "src": r["src"], "dst": r["dst"]})
        vecs.extend(r for r in part.store.query("invariants/digest_vecs") if i == 0 or r["id"] != SENTINEL)
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line.encode("utf-8"))
    for r in sorted(vecs, key=lambda r: r["id"]):
        feed("KeyVec", {"id": r["id"], "namespace": r["namespace"]})
        h.update(lines.pop().encode("utf-8"))
        h.update(np.asarray(r["vec"], dtype=np.float32).tobytes())
    return {"counts": dict(sorted(counts.items())), "sha256": h.hexdigest()}
