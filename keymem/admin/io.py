"""Export and import of a store as JSON Lines (``keymem export`` / ``keymem import``).

The file is the portable form of the graph: every key with its aliases, its pending aliases
(queries counted towards a learned alias) and type, every visible memory with its version
chain, validity fields, source and TTL, every key-memory link with its weight and every
memory-memory relation. Vectors are not exported: they depend on the embedding model, so
concept keys are re-embedded on import. A memory's stored BM25 terms (the key texts it was
written with and its content, tokenised) travel with it when the tokenizer that made them is
the one named in the header and they hold no Korean (whose terms depend on Kiwi's build): an
import by a keymem with that tokenizer stores them as they were, so recall ranks alike on
both sides; other memories are tokenised again from their keys and content.

Import keeps ids as they are, which makes it idempotent (a record whose id exists is
skipped, links are MERGEd), and validates the whole file before anything is written: a bad
line is reported with its number and the store stays untouched. A key whose name already
exists under another id in the target store is merged into that key (as the write path
would), and so is an active memory whose normalised content already exists.

This is domain code: it never imports the interface layer (keymem.cli, keymem.server).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keymem.errors import InvalidInput, shown
from keymem.memory import validate
from keymem.memory.names import add_literal_name, name_id
from keymem.memory.write import norm_id
from keymem.store import changes
from keymem.text.tokenize import normalize_text

if TYPE_CHECKING:
    from keymem.memory.graph import MemoryGraph
    from keymem.memory.namespace_graphs import NamespaceGraphs
    from keymem.store.db import Store

FORMAT = "keymem-export"
VERSION = 2  # 2: pending aliases, memory terms and the header's tokenizer
READS = (1, 2)
EMBED_BATCH = 64

Progress = Callable[[str, int, int], None]  # (phase, done, total)

_ID = {"k": re.compile(r"^k_[0-9a-f]{8,64}$"), "m": re.compile(r"^m_[0-9a-f]{8,64}$"),
       "a": re.compile(r"^a_[0-9a-f]{8,64}$")}


# -- export ---------------------------------------------------------------------------------


def export_records(store: Store, namespace: str | None, now: float) -> Iterator[dict[str, Any]]:
    """The records of an export, header first, in a stable order (keys, memories, links, related)."""
    ns = "" if namespace is None else validate.namespace(namespace)
    scope = {"any_ns": namespace is None, "namespace": ns}
    from keymem.text.tokenize import has_hangul, tokenizer_fingerprint

    tokenizer = tokenizer_fingerprint()
    stamp = store.query("meta/get", name="lexical_tokenizer")
    current = bool(stamp) and stamp[0]["value"] == tokenizer  # the stored terms are this tokenizer's
    yield {"type": "header", "format": FORMAT, "version": VERSION, "namespace": namespace,
           "tokenizer": tokenizer if current else None}
    memories = store.query("io/export_memories", now=now, **scope)
    for m in memories:
        terms = m.pop("terms")
        if current and terms is not None and not has_hangul(terms):
            m["terms"] = terms
    kept = {m["id"] for m in memories}
    links = [link for link in store.query("io/export_links", **scope) if link["memory_id"] in kept]
    linked = {link["key_id"] for link in links}  # a key whose memories all expired goes with them
    aliases: dict[str, list[dict[str, Any]]] = {}
    for a in store.query("io/export_aliases", **scope):
        key_id = a.pop("key_id")
        aliases.setdefault(key_id, []).append(a)
    pending: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(store.query("io/export_pending"), key=lambda p: p["id"]):
        pending.setdefault(p.pop("key_id"), []).append(p)
    for k in store.query("io/export_keys", **scope):
        if k["id"] in linked:
            # "pending" only when there are some: such a file stays readable by keymem versions before the field
            extra = {"pending": pending[k["id"]]} if k["id"] in pending else {}
            yield {"type": "key", **k, "aliases": aliases.get(k["id"], []), **extra}
    for m in memories:
        yield {"type": "memory", **m}
    for link in links:
        yield {"type": "link", **link}
    for rel in store.query("io/export_related", **scope):
        if rel["src"] in kept and rel["dst"] in kept:
            yield {"type": "related", **rel}


def export_lines(store: Store, namespace: str | None, now: float) -> list[str]:
    """The export as text lines (no trailing newlines); the same store gives the same lines."""
    return [json.dumps(r, ensure_ascii=False, sort_keys=False) for r in export_records(store, namespace, now)]


def export_lines_of(stores: list[Store], now: float) -> list[str]:
    """The export of every namespace of a store with a graph per namespace (``stores``, one per graph): one
    header, then each kind of record in the order one graph's export gives them."""
    order = ("key", "memory", "link", "related")
    header: dict[str, Any] | None = None
    kinds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in order}
    for store in stores:
        for r in export_records(store, None, now):
            if r["type"] == "header":
                if header is not None and header["tokenizer"] != r["tokenizer"]:
                    header["tokenizer"] = None  # the terms are then recomputed on import
                header = header or r
            else:
                kinds[r["type"]].append(r)
    records = [header or {"type": "header", "format": FORMAT, "version": VERSION, "namespace": None, "tokenizer": None}]
    for kind in order:
        records.extend(sorted(kinds[kind], key=lambda r: (r.get("id") or "", r.get("key_id") or r.get("src") or "",
                                                          r.get("memory_id") or r.get("dst") or "")))
    return [json.dumps(r, ensure_ascii=False, sort_keys=False) for r in records]


def split_by_namespace(plan: ImportPlan) -> dict[str, ImportPlan]:
    """A validated plan as one plan per namespace (a store with a graph per namespace writes each alone);
    links and related edges go with their memory's namespace (validation keeps both ends in one)."""
    where = {m["id"]: m["namespace"] for m in plan.memories}
    out: dict[str, ImportPlan] = {}

    def part(namespace: str) -> ImportPlan:
        return out.setdefault(namespace, ImportPlan(tokenizer=plan.tokenizer))

    for k in plan.keys:
        part(k["namespace"]).keys.append(k)
    for m in plan.memories:
        part(m["namespace"]).memories.append(m)
    for link in plan.links:
        part(where[link["memory_id"]]).links.append(link)
    for rel in plan.related:
        if where[rel["src"]] != where[rel["dst"]]:
            raise _fail(rel["line"], "related joins memories of two namespaces, and this store keeps each "
                                     "namespace in its own graph (KEYMEM_FALKORDB_GRAPHS=namespace)")
        part(where[rel["src"]]).related.append(rel)
    return out


# -- validation ----------------------------------------------------------------------------------


class ImportError_(InvalidInput):
    """A line of an import file is invalid; nothing was written."""


def _fail(lineno: int, msg: str) -> ImportError_:
    return ImportError_(f"line {lineno}: {msg}")


def _num(rec: dict[str, Any], name: str, lineno: int, *, optional: bool = False) -> float | None:
    v = rec.get(name)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise _fail(lineno, f"{name} must be a finite number, not {shown(v)}")
    return float(v)


def _int(rec: dict[str, Any], name: str, lineno: int) -> int:
    v = rec.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _fail(lineno, f"{name} must be a non-negative whole number, not {shown(v)}")
    return v


def _str(rec: dict[str, Any], name: str, lineno: int, *, optional: bool = False) -> str | None:
    v = rec.get(name)
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v.strip():
        raise _fail(lineno, f"{name} must be a non-empty string, not {shown(v)}")
    return v


def _ident(rec: dict[str, Any], name: str, kind: str, lineno: int, *, optional: bool = False) -> str | None:
    v = rec.get(name)
    if v is None and optional:
        return None
    if not isinstance(v, str) or not _ID[kind].match(v):
        raise _fail(lineno, f"{name} {shown(v)} is not a valid {kind}_... id")
    return v


def _bool(rec: dict[str, Any], name: str, lineno: int) -> bool:
    v = rec.get(name)
    if not isinstance(v, bool):
        raise _fail(lineno, f"{name} must be true or false, not {shown(v)}")
    return v


def _only(rec: dict[str, Any], allowed: Iterable[str], lineno: int) -> None:
    extra = set(rec) - set(allowed) - {"type"}
    if extra:
        raise _fail(lineno, f"unknown field(s) {shown(', '.join(sorted(extra)), quoted=False)}")


KEY_FIELDS = ("id", "namespace", "text", "key_type", "created_at", "last_hit_at", "aliases", "pending")
ALIAS_FIELDS = ("id", "text", "learned", "hits", "created_at", "last_hit_at")
PENDING_FIELDS = ("id", "query", "count", "last_at")
MEMORY_FIELDS = (
    "id", "namespace", "content", "active", "created_at", "updated_at", "last_confirmed_at", "last_access_at",
    "access_count", "confirmation_count", "depth", "decay_profile", "ttl_seconds", "expires_at", "supersedes",
    "superseded_by", "source", "evidence", "terms",
)
LINK_FIELDS = ("key_id", "memory_id", "weight", "created_at")
RELATED_FIELDS = ("src", "dst", "weight", "created_at")


@dataclass
class ImportPlan:
    """A whole, validated import file."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    related: list[dict[str, Any]] = field(default_factory=list)
    tokenizer: str | None = None  # the exporting keymem's tokenizer, when the memories' terms are its

    def dump(self) -> dict[str, Any]:
        return {"keys": self.keys, "memories": self.memories, "links": self.links, "related": self.related,
                "tokenizer": self.tokenizer}

    @classmethod
    def load(cls, data: dict[str, Any]) -> ImportPlan:
        return cls(data["keys"], data["memories"], data["links"], data["related"], data.get("tokenizer"))

    @property
    def size(self) -> int:
        return len(self.keys) + len(self.memories) + len(self.links) + len(self.related)


def _key(rec: dict[str, Any], n: int) -> dict[str, Any]:
    _only(rec, KEY_FIELDS, n)
    try:
        ns = validate.namespace(rec.get("namespace"))
    except InvalidInput as exc:
        raise _fail(n, str(exc)) from None
    key_type = rec.get("key_type")
    if key_type not in validate.KEY_TYPES:
        raise _fail(n, f"key_type {shown(key_type)} must be one of {', '.join(validate.KEY_TYPES)}")
    text = _str(rec, "text", n)
    assert text is not None
    if len(text) > validate.MAX_KEY_CHARS:
        raise _fail(n, f"key text is longer than {validate.MAX_KEY_CHARS} characters")

    def alias(a: dict[str, Any]) -> dict[str, Any]:
        _only(a, ALIAS_FIELDS, n)
        return {"id": _ident(a, "id", "a", n), "text": _str(a, "text", n), "learned": _bool(a, "learned", n),
                "hits": _int(a, "hits", n), "created_at": _num(a, "created_at", n),
                "last_hit_at": _num(a, "last_hit_at", n, optional=True)}

    out_aliases = _objects(rec, "aliases", n, alias)
    return {
        "id": _ident(rec, "id", "k", n), "namespace": ns, "text": text, "key_type": key_type,
        "created_at": _num(rec, "created_at", n), "last_hit_at": _num(rec, "last_hit_at", n, optional=True),
        "aliases": out_aliases, "pending": _pending(rec, n), "line": n,
    }


def _objects(rec: dict[str, Any], field: str, n: int,
             parse: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """A record's list of objects under ``field`` (absent: none), each parsed, an error naming its place."""
    items = rec.get(field, [])
    if not isinstance(items, list):
        raise _fail(n, f"{field} must be a list")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _fail(n, f"{field}[{i}] must be an object")
        try:
            out.append(parse(item))
        except ImportError_ as exc:
            raise ImportError_(str(exc).replace(": ", f": {field}[{i}]: ", 1)) from None
    return out


def _pending(rec: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """A key record's pending aliases: ids are the key's id, U+001F and the normalised query; counts >= 1."""

    def pending(p: dict[str, Any]) -> dict[str, Any]:
        _only(p, PENDING_FIELDS, n)
        pid = _str(p, "id", n)
        if not isinstance(pid, str) or not pid.startswith(f"{rec.get('id')}\x1f"):
            raise _fail(n, f"id {shown(pid)} must be the key's id, U+001F and the normalised query")
        count = _int(p, "count", n)
        if count < 1:
            raise _fail(n, f"count must be at least 1, not {count}")
        return {"id": pid, "query": _str(p, "query", n), "count": count, "last_at": _num(p, "last_at", n)}

    return _objects(rec, "pending", n, pending)


def _memory(rec: dict[str, Any], n: int, max_chars: int) -> dict[str, Any]:
    _only(rec, MEMORY_FIELDS, n)
    try:
        ns = validate.namespace(rec.get("namespace"))
        content = validate.text(rec.get("content"), "content", max_chars=max_chars)
        profile = validate.decay_profile(rec.get("decay_profile"))
        ttl = validate.ttl(rec.get("ttl_seconds"))
    except InvalidInput as exc:
        raise _fail(n, str(exc)) from None
    active = _bool(rec, "active", n)
    out = {
        "id": _ident(rec, "id", "m", n), "namespace": ns, "content": content, "active": active,
        "created_at": _num(rec, "created_at", n), "updated_at": _num(rec, "updated_at", n),
        "last_confirmed_at": _num(rec, "last_confirmed_at", n),
        "last_access_at": _num(rec, "last_access_at", n, optional=True),
        "access_count": _int(rec, "access_count", n), "confirmation_count": _int(rec, "confirmation_count", n),
        "depth": _num(rec, "depth", n), "decay_profile": profile, "ttl_seconds": ttl,
        "expires_at": _num(rec, "expires_at", n, optional=True),
        "supersedes": _ident(rec, "supersedes", "m", n, optional=True),
        "superseded_by": _ident(rec, "superseded_by", "m", n, optional=True),
        "source": _str(rec, "source", n, optional=True), "evidence": _str(rec, "evidence", n, optional=True),
        "terms": _terms(rec, n), "line": n,
    }
    if not active and out["superseded_by"] is None:
        raise _fail(n, "an inactive memory must name the version that superseded it (superseded_by)")
    if active and out["superseded_by"] is not None:
        raise _fail(n, "an active memory cannot be superseded (superseded_by must be null)")
    if isinstance(out["source"], str):
        try:
            json.loads(out["source"])
        except ValueError:
            raise _fail(n, "source must hold a JSON object as text") from None
    return out


def _terms(rec: dict[str, Any], n: int) -> str | None:
    """A memory's stored BM25 terms, joined by U+001F as the store keeps them (the empty string: none)."""
    v = rec.get("terms")
    if v is not None and not isinstance(v, str):
        raise _fail(n, f"terms must be a string, not {shown(v)}")
    return v


def parse_lines(lines: Iterable[str], *, max_content_chars: int = 100_000) -> ImportPlan:
    """Validate a whole import file; raises ImportError_ naming the first bad line (1-based)."""
    plan = ImportPlan()
    seen: dict[str, int] = {}
    header = False
    for n, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            rec = json.loads(text)
        except ValueError as exc:
            raise _fail(n, f"not JSON ({exc})") from None
        if not isinstance(rec, dict):
            raise _fail(n, "a record must be a JSON object")
        kind = rec.get("type")
        if not header:
            if kind != "header" or rec.get("format") != FORMAT:
                raise _fail(n, f"the first record must be the {FORMAT} header; is this a keymem export?")
            if rec.get("version") not in READS:
                raise _fail(n, f"export format version {shown(rec.get('version'))} is not supported "
                               f"(this keymem reads {' and '.join(map(str, READS))})")
            tokenizer = rec.get("tokenizer")
            plan.tokenizer = tokenizer if isinstance(tokenizer, str) else None
            header = True
            continue
        if kind == "key":
            item = _key(rec, n)
            ids = [item["id"], *(a["id"] for a in item["aliases"])]
            plan.keys.append(item)
        elif kind == "memory":
            item = _memory(rec, n, max_content_chars)
            ids = [item["id"]]
            plan.memories.append(item)
        elif kind == "link":
            _only(rec, LINK_FIELDS, n)
            plan.links.append({
                "key_id": _ident(rec, "key_id", "k", n), "memory_id": _ident(rec, "memory_id", "m", n),
                "weight": _num(rec, "weight", n), "created_at": _num(rec, "created_at", n), "line": n,
            })
            ids = []
        elif kind == "related":
            _only(rec, RELATED_FIELDS, n)
            plan.related.append({
                "src": _ident(rec, "src", "m", n), "dst": _ident(rec, "dst", "m", n),
                "weight": _num(rec, "weight", n), "created_at": _num(rec, "created_at", n), "line": n,
            })
            ids = []
        else:
            raise _fail(n, f"unknown record type {shown(kind)} (expected key, memory, link or related)")
        for i in ids:
            if i in seen:
                raise _fail(n, f"id {i} already appeared on line {seen[i]}")
            seen[i] = n
    if not header:
        raise ImportError_("the file is empty: no keymem export header")
    _check_references(plan)
    return plan


def _check_references(plan: ImportPlan) -> None:
    keys = {k["id"]: k for k in plan.keys}
    mems = {m["id"]: m for m in plan.memories}
    for m in plan.memories:
        for name in ("supersedes", "superseded_by"):
            other = m[name]
            if other is not None:
                if other not in mems:
                    raise _fail(m["line"], f"{name} names memory {other}, which is not in the file")
                if mems[other]["namespace"] != m["namespace"]:
                    raise _fail(m["line"], f"{name} names memory {other} of another namespace")
        if m["superseded_by"] is not None and mems[m["superseded_by"]]["supersedes"] != m["id"]:
            raise _fail(m["line"], f"the version chain is broken: {m['superseded_by']} does not supersede {m['id']}")
    linked: set[str] = set()
    for link in plan.links:
        k, lm = keys.get(link["key_id"]), mems.get(link["memory_id"])
        if k is None:
            raise _fail(link["line"], f"link names key {link['key_id']}, which is not in the file")
        if lm is None:
            raise _fail(link["line"], f"link names memory {link['memory_id']}, which is not in the file")
        if k["namespace"] != lm["namespace"]:
            raise _fail(link["line"], "link joins a key and a memory of different namespaces")
        linked.add(lm["id"])
    for rel in plan.related:
        for name in ("src", "dst"):
            if rel[name] not in mems:
                raise _fail(rel["line"], f"related {name} names memory {rel[name]}, which is not in the file")
    for m in plan.memories:
        if m["id"] not in linked:
            raise _fail(m["line"], f"memory {m['id']} has no link to any key (every memory needs keys)")
    used = {link["key_id"] for link in plan.links}
    for k in plan.keys:
        if k["id"] not in used:
            raise _fail(k["line"], f"key {k['id']} is linked to no memory (keymem keeps no empty keys)")


# -- import ------------------------------------------------------------------------------------


def import_plan(graph: MemoryGraph | NamespaceGraphs, plan: ImportPlan, progress: Progress | None = None) -> dict[str, int]:
    """Write a validated plan in one transaction; records already present are left alone. On a store with a
    graph per namespace, each namespace's records are one transaction in its graph."""
    from keymem.memory.namespace_graphs import NamespaceGraphs, summed

    if isinstance(graph, NamespaceGraphs):
        parts = split_by_namespace(plan)  # checked whole before anything is written
        return summed(import_plan(graph.graph(namespace), part, progress) for namespace, part in parts.items())
    store = graph.store
    report = {"keys_created": 0, "keys_merged": 0, "aliases_created": 0, "memories_created": 0,
              "memories_existing": 0, "links_created": 0, "links_existing": 0, "related_created": 0,
              "related_existing": 0}
    key_map: dict[str, str] = {}
    mem_map: dict[str, str] = {}
    existing_keys = {r["id"] for r in store.query("io/key_ids", ids=[k["id"] for k in plan.keys])}
    names = {name_id(k["namespace"], normalize_text(k["text"])): k for k in plan.keys}
    taken = {r["id"]: r["key_id"] for r in store.query("io/name_ids", ids=list(names))}
    new_keys = []
    for k in plan.keys:
        nid = name_id(k["namespace"], normalize_text(k["text"]))
        if k["id"] in existing_keys:
            key_map[k["id"]] = k["id"]
        elif nid in taken:
            key_map[k["id"]] = taken[nid]
            report["keys_merged"] += 1
        else:
            key_map[k["id"]] = k["id"]
            new_keys.append(k)
    vectors: dict[str, Any] = {}
    concept = [k for k in new_keys if k["key_type"] == "concept"]
    for start in range(0, len(concept), EMBED_BATCH):
        chunk = concept[start:start + EMBED_BATCH]
        for k, vec in zip(chunk, graph.embed([k["text"] for k in chunk]), strict=True):
            vectors[k["id"]] = vec
        if progress:
            progress("embedding keys", min(start + EMBED_BATCH, len(concept)), len(concept))
    existing_mems = {r["id"] for r in store.query("io/memory_ids", ids=[m["id"] for m in plan.memories])}
    norms = {norm_id(m["namespace"], m["content"]): m for m in plan.memories if m["active"]}
    norm_taken = {r["id"]: r["memory_id"] for r in store.query("io/norm_ids", ids=list(norms))}
    alias_ids = [a["id"] for k in new_keys for a in k["aliases"]]
    existing_aliases = {r["id"] for r in store.query("io/alias_ids", ids=alias_ids)} if alias_ids else set()
    pending_ids = [p["id"] for k in new_keys for p in k.get("pending", [])]
    existing_pending = {r["id"] for r in store.query("io/pending_ids", ids=pending_ids)} if pending_ids else set()
    lexical: list[tuple[str, str | list[str], str]] = []
    from keymem.text.tokenize import TERMS_SEP, tokenizer_fingerprint

    same_tokenizer = plan.tokenizer is not None and plan.tokenizer == tokenizer_fingerprint()
    total, done = plan.size, 0

    def tick(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress and (done % 200 == 0 or done == total):
            progress("writing", done, total)

    # bulk: on FalkorDB sent in queries of BULK_STATEMENTS as it goes (docs/engines.md), on LadybugDB one transaction
    with store.write(bulk=True) as tx:
        for k in new_keys:
            norm = normalize_text(k["text"])
            tx.run("io/key_create", id=k["id"], namespace=k["namespace"], text=k["text"], norm=norm,
                   key_type=k["key_type"], created_at=k["created_at"], last_hit_at=k["last_hit_at"])
            tx.run("key/name_create", id=name_id(k["namespace"], norm), key_id=k["id"])
            add_literal_name(tx, k["namespace"], k["text"], k["id"])
            taken[name_id(k["namespace"], norm)] = k["id"]
            if k["id"] in vectors:
                graph.vectors.insert(tx, k["id"], k["namespace"], vectors[k["id"]])
            report["keys_created"] += 1
            for a in k["aliases"]:
                anorm = normalize_text(a["text"])
                anid = name_id(k["namespace"], anorm)
                if a["id"] in existing_aliases or anid in taken:
                    continue
                tx.run("io/alias_create", id=a["id"], key_id=k["id"], namespace=k["namespace"], text=a["text"],
                       norm=anorm, learned=a["learned"], hits=a["hits"], created_at=a["created_at"],
                       last_hit_at=a["last_hit_at"])
                tx.run("alias/link", alias_id=a["id"], key_id=k["id"])
                graph.aliases.touch(tx, [k["id"]])
                tx.run("key/name_create", id=anid, key_id=k["id"])
                add_literal_name(tx, k["namespace"], a["text"], k["id"])
                taken[anid] = k["id"]
                report["aliases_created"] += 1
            for p in k.get("pending", []):
                if p["id"] not in existing_pending:
                    tx.run("io/pending_create", key_id=k["id"], **p)
            tick()
        tick(len(plan.keys) - len(new_keys))
        for m in plan.memories:
            nid = norm_id(m["namespace"], m["content"])
            if m["id"] in existing_mems:
                mem_map[m["id"]] = m["id"]
                report["memories_existing"] += 1
            elif m["active"] and nid in norm_taken:
                mem_map[m["id"]] = norm_taken[nid]
                report["memories_existing"] += 1
            else:
                mem_map[m["id"]] = m["id"]
                params = {f: m[f] for f in MEMORY_FIELDS}
                if not same_tokenizer:
                    params["terms"] = None  # tokenised again at the next open, and for the index below
                tx.run("io/memory_create", norm=normalize_text(m["content"]), **params)
                if m["active"]:
                    tx.run("memory/norm_create", id=nid, memory_id=m["id"])
                    norm_taken[nid] = m["id"]
                report["memories_created"] += 1
            tick()
        key_texts: dict[str, list[str]] = {}
        key_text = {k["id"]: k["text"] for k in plan.keys}
        linked = _pairs(tx, "io/link_pairs", "key_id", "memory_id", {mem_map[x["memory_id"]] for x in plan.links})
        for link in plan.links:
            kid, mid = key_map[link["key_id"]], mem_map[link["memory_id"]]
            tx.run("io/link_merge", key_id=kid, memory_id=mid, weight=link["weight"], created_at=link["created_at"])
            key_texts.setdefault(link["memory_id"], []).append(key_text[link["key_id"]])
            _count(report, "links", (kid, mid), linked)
            tick()
        related = _pairs(tx, "io/related_pairs", "src", "dst", {mem_map[x["src"]] for x in plan.related})
        for rel in plan.related:
            src, dst = mem_map[rel["src"]], mem_map[rel["dst"]]
            tx.run("io/related_merge", src=src, dst=dst, weight=rel["weight"], created_at=rel["created_at"])
            _count(report, "related", (src, dst), related)
            tick()
        for m in plan.memories:
            if m["supersedes"] is not None and mem_map[m["id"]] == m["id"] and mem_map[m["supersedes"]] == m["supersedes"]:
                tx.run("io/supersedes_merge", new_id=m["id"], old_id=m["supersedes"], at=m["created_at"])
            if m["active"] and m["id"] not in existing_mems and mem_map[m["id"]] == m["id"]:
                if same_tokenizer and m["terms"] is not None:
                    lexical.append((m["id"], m["terms"].split(TERMS_SEP) if m["terms"] else [], m["namespace"]))
                else:
                    lexical.append((m["id"], " ".join([*key_texts.get(m["id"], []), m["content"]]), m["namespace"]))
        tx.after_commit(lambda: graph.lexical.add_many(lexical))
        tx.after_commit(graph.mirror.load)
        changes.note(graph.store, tx, everything=True)  # other daemons on a shared store reload too
    graph.vectors.maybe_switch()
    return report


def _pairs(tx: Any, statement: str, a: str, b: str, ids: set[str]) -> set[tuple[str, str]]:
    """The edges (a, b) the store already holds from or to ``ids``, read before the import merges its own."""
    return {(r[a], r[b]) for r in tx.run(statement, ids=sorted(ids))} if ids else set()


def _count(report: dict[str, int], kind: str, pair: tuple[str, str], present: set[tuple[str, str]]) -> None:
    """An edge the import merged: created if it was not there, else existing (its weight kept)."""
    report[f"{kind}_existing" if pair in present else f"{kind}_created"] += 1
    present.add(pair)


def import_lines(graph: MemoryGraph, lines: Iterable[str], progress: Progress | None = None) -> dict[str, int]:
    """Validate every line, then write; the convenience form of parse_lines + import_plan."""
    plan = parse_lines(lines, max_content_chars=graph.settings.max_content_chars)
    return import_plan(graph, plan, progress)
