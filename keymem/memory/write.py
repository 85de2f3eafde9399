"""The write path: remember, correct, forget, dismiss, confirm. Each call is one transaction.

Nothing here writes a memory without keys, and every check runs before the transaction
opens, so a refused call leaves the store untouched.
Each mutating call also records its result in its transaction when the daemon runs it for a
request id (``graph.requests.record``), so a client's retry gets that result (memory/requests.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.errors import InvalidInput, KeymemError, NotFound, StoreError, shown
from keymem.memory import validate
from keymem.memory.calls import ConfirmRequest, CorrectRequest, DismissRequest, ForgetRequest, RememberRequest
from keymem.memory.keys import KeyResolver, keys_by_names
from keymem.memory.names import name_id, new_id
from keymem.memory.validity import DEPTH_STEP, SUPERSEDED_DEPTH_FACTOR
from keymem.memory.views import (
    BatchResult,
    CorrectResult,
    DismissResult,
    ForgetResult,
    KeyBrief,
    RememberResult,
)
from keymem.store.db import Tx
from keymem.text.tokenize import (
    KOREAN_META,
    TERMS_SEP,
    has_hangul,
    korean_fingerprint,
    normalize_text,
    tokenize,
)

if TYPE_CHECKING:
    from keymem.memory.parts import Parts

LINK_INIT = 1.0
LINK_MIN = 0.1
LINK_MAX = 3.0
RELATED_WEIGHT = 1.0
LINK_SCAN_MAX_KEYS = 12_000  # below: link a memory's keys in one statement (a Key scan); above: one per key


@dataclass
class Item:
    """One validated memory to write."""

    content: str
    keys: list[tuple[str, str]]
    namespace: str
    ttl_seconds: float | None
    decay_profile: str
    related_to: list[str]
    source: dict[str, Any] | None


def norm_id(namespace: str, content: str) -> str:
    digest = hashlib.sha256(normalize_text(content).encode("utf-8")).hexdigest()
    return f"{namespace}\x1f{digest}"


def parse_item(graph: Parts, raw: dict[str, Any], *, where: str = "") -> Item:
    s = graph.settings
    allowed = {"content", "keys", "key_types", "namespace", "ttl_seconds", "decay_profile", "related_to", "source"}
    unknown = set(raw) - allowed
    if unknown:
        raise InvalidInput(f"{where}unknown field(s): {', '.join(sorted(unknown))}")
    try:
        source = validate.source(raw.get("source"))
        if source is not None and not isinstance(source, dict):
            raise InvalidInput("source must be an object")
        return Item(
            content=validate.text(raw.get("content"), "content", max_chars=s.max_content_chars),
            keys=validate.key_list(raw.get("keys"), raw.get("key_types"), max_keys=s.max_keys),
            namespace=validate.namespace(raw.get("namespace")),
            ttl_seconds=validate.ttl(raw.get("ttl_seconds")),
            decay_profile=validate.decay_profile(raw.get("decay_profile")),
            related_to=validate.id_list(raw.get("related_to"), "related_to", "m"),
            source=source,
        )
    except InvalidInput as exc:
        raise InvalidInput(f"{where}{exc}") from None


def _key_vectors(graph: Parts, items: list[Item]) -> dict[str, np.ndarray]:
    """Embed, in one batch and outside the write lock, the concept keys not yet stored by name."""
    wanted: dict[str, str] = {}
    for it in items:
        for text, kind in it.keys:
            if kind == "concept":
                wanted.setdefault(name_id(it.namespace, normalize_text(text)), text)
    if not wanted:
        return {}
    known = keys_by_names(graph, graph.store.query, list(wanted))
    todo = {normalize_text(t): t for nid, t in wanted.items() if nid not in known}
    if not todo:
        return {}
    vecs = graph.embed(list(todo.values()))
    return dict(zip(todo.keys(), vecs, strict=True))


def _scope(tx: Tx) -> dict[str, Any]:
    """What this write scope wrote so far, as its later steps need it.

    A scope's reads see the store as it was before the scope on an engine that defers writes to
    the commit (FalkorDB), and its own writes on one that runs them at once (LadybugDB), so the body
    never reads back what it wrote: memories created (id -> namespace), their norm ids (-> result),
    memories deleted and keys linked or deleted are kept here instead.
    """
    scope: dict[str, Any] | None = tx.scratch.get("write_scope")
    if scope is None:
        scope = tx.scratch["write_scope"] = {"created": {}, "norms": {}, "deleted": set(), "linked": set(),
                                             "keys_deleted": set()}
    return scope


def _check_related(tx: Tx, ids: list[str], namespace: str) -> None:
    if not ids:
        return
    created: dict[str, str] = _scope(tx)["created"]  # a batch item may name one written before it
    stored = [mid for mid in ids if mid not in created]
    rows = {r["m"]["id"]: r["m"]["namespace"] for r in tx.run("memory/get_many", ids=stored)} if stored else {}
    rows.update((mid, created[mid]) for mid in ids if mid in created)
    for mid in ids:
        if rows.get(mid) != namespace or mid in _scope(tx)["deleted"]:
            raise NotFound(f"related_to: memory {mid} does not exist in namespace {shown(namespace)}")


def _write_one(graph: Parts, tx: Tx, resolver: KeyResolver, it: Item, now: float,
               *, supersedes: str | None = None, depth: float = 0.0) -> RememberResult:
    nid = norm_id(it.namespace, it.content)
    scope = _scope(tx)
    if nid in scope["norms"]:  # the same content earlier in this batch
        first: RememberResult = scope["norms"][nid]
        keys = sorted(first.keys, key=lambda k: k.key)  # as memory/keys orders a new memory's (equal) links
        return RememberResult(memory_id=first.memory_id, keys=keys, duplicate=True)
    dup = tx.run("memory/norm_get", id=nid)
    if dup:
        mid = dup[0]["memory_id"]
        keys = [KeyBrief(key_id=r["key_id"], key=r["key"], key_type=r["key_type"])
                for r in tx.run("memory/keys", id=mid)]
        return RememberResult(memory_id=mid, keys=keys, duplicate=True)
    _check_related(tx, it.related_to, it.namespace)
    mid = new_id("m")
    resolved = [resolver.resolve(text, kind, it.namespace) for text, kind in it.keys]
    expires = now + it.ttl_seconds if it.ttl_seconds else None
    terms = tokenize(" ".join([*(rk.text for rk in resolved), *(t for t, _ in it.keys), it.content]))
    joined = TERMS_SEP.join(terms)
    tx.run(
        "memory/create", id=mid, namespace=it.namespace, content=it.content, norm=normalize_text(it.content),
        now=now, depth=depth, decay_profile=it.decay_profile, ttl_seconds=it.ttl_seconds, expires_at=expires,
        supersedes=supersedes, source=json.dumps(it.source, ensure_ascii=False) if it.source else None,
        terms=joined,
    )
    tx.run("memory/norm_create", id=nid, memory_id=mid)
    if not graph.korean_stamped and has_hangul(joined):
        _stamp_korean(graph, tx)
    key_ids = list(dict.fromkeys(rk.key_id for rk in resolved))
    # Never store a memory short of its keys: each key is created in this scope, or known to the
    # mirror (the committed keys) or to the store, and not deleted earlier in this scope. Checked
    # before linking, as a scope never reads back what it wrote (the link count arrives at commit).
    created = {rk.key_id for rk in resolved if rk.created}
    missing = [k for k in key_ids if k in scope["keys_deleted"] or (
        k not in created and graph.mirror.key(k) is None and not tx.run("key/get", id=k))]
    if missing:
        raise StoreError(f"could not link memory to {len(missing)} of its keys (missing: {', '.join(missing)}); "
                         "nothing was written")
    if graph.mirror.key_count() < LINK_SCAN_MAX_KEYS:
        tx.run("memory/link_keys", key_ids=key_ids, memory_id=mid, weight=LINK_INIT, now=now)
    else:
        for key_id in key_ids:
            tx.run("link/create", key_id=key_id, memory_id=mid, weight=LINK_INIT, now=now)
    scope["linked"].update(key_ids)
    for other in it.related_to:
        tx.run("memory/relate", src=mid, dst=other, weight=RELATED_WEIGHT, now=now)
    graph.mirror.touch(tx, memories=[mid])  # keys new to the mirror are read with the memory's links
    tx.after_commit(lambda: graph.lexical.add(mid, "", it.namespace, tokens=terms))
    tx.after_commit(lambda: graph.memvecs.add_soon(mid, it.content))
    briefs = {rk.key_id: KeyBrief(key_id=rk.key_id, key=rk.text, key_type=rk.key_type) for rk in resolved}  # type: ignore[arg-type]
    result = RememberResult(memory_id=mid, keys=list(briefs.values()), duplicate=False)
    scope["created"][mid] = it.namespace
    scope["norms"][nid] = result
    return result


def _stamp_korean(graph: Parts, tx: Tx) -> None:
    """Record, with the first Korean terms stored, which Kiwi made them (the next open then reuses them).

    Without it every open would re-tokenise every Korean memory: the open path compares this stamp
    to the running Kiwi's fingerprint. After an open the store's Korean terms all match the running
    Kiwi (a mismatch re-tokenises them there), so stamping it here is exact.
    """
    tx.run("meta/set", name=KOREAN_META, value=korean_fingerprint())

    def stamped() -> None:
        graph.korean_stamped = True

    tx.after_commit(stamped)


def remember_items(graph: Parts, items: list[Item], source: dict[str, Any] | None) -> list[RememberResult]:
    source = validate.source(source, "host source")  # type: ignore[assignment]
    vectors = _key_vectors(graph, items)
    now = graph.now()
    with graph.store.write() as tx:
        resolver = KeyResolver(graph, tx, vectors, now)
        resolver.prefetch([(text, it.namespace) for it in items for text, _ in it.keys])
        results = []
        for i, it in enumerate(items):
            if source and not it.source:
                it.source = source
            try:
                results.append(_write_one(graph, tx, resolver, it, now))
            except KeymemError as exc:
                if len(items) == 1:
                    raise
                raise type(exc)(f"items[{i}]: {exc}") from None
        graph.requests.record(tx, BatchResult(results=results))  # committed with the write (memory/requests.py)
    graph.vectors.maybe_switch()
    return results


def remember(graph: Parts, request: RememberRequest, source: dict[str, Any] | None = None) -> RememberResult:
    return remember_items(graph, [parse_item(graph, dataclasses.asdict(request))], source)[0]


def remember_batch(graph: Parts, items: Any, source: dict[str, Any] | None = None) -> BatchResult:
    if not isinstance(items, list) or not items:
        raise InvalidInput("items must be a non-empty list of memories")
    if len(items) > 1000:
        raise InvalidInput(f"items holds {len(items)} memories; the limit is 1000 per batch")
    parsed = []
    for i, raw in enumerate(items):
        if not isinstance(raw, dict):
            raise InvalidInput(f"items[{i}] must be an object")
        parsed.append(parse_item(graph, raw, where=f"items[{i}]: "))
    return BatchResult(results=remember_items(graph, parsed, source))


def get_memory(graph: Parts, memory_id: Any, namespace: Any = None, *, tx: Tx | None = None,
               active_only: bool = False) -> dict[str, Any]:
    """A visible memory row (not expired; in ``namespace`` when given) or NotFound."""
    mid = validate.ident(memory_id, "memory_id", "m")
    rows = tx.run("memory/get", id=mid) if tx else graph.store.query("memory/get", id=mid)
    m = rows[0]["m"] if rows else None
    ns = None if namespace is None else validate.namespace(namespace)
    if m is None or (ns is not None and m["namespace"] != ns) or graph.expired(m):
        where = f" in namespace {ns!r}" if ns else ""
        raise NotFound(f"memory {mid} does not exist{where}")
    if active_only and not m["active"]:
        raise InvalidInput(
            f"memory {mid} is an old version superseded by {m['superseded_by']}; act on the current version"
        )
    return m


def correct(graph: Parts, request: CorrectRequest, source: dict[str, Any] | None = None) -> CorrectResult:
    old = get_memory(graph, request.memory_id, request.namespace, active_only=True)
    raw = {k: v for k, v in dataclasses.asdict(request).items() if k not in ("memory_id", "namespace")}
    # What is carried over is read from the mirror, the copy read_memory shows (kept exact after
    # every commit, loaded by table scans at open). A join from the memory's id (memory/keys) was
    # seen to miss its links after Kuzu 0.11.3 replayed a WAL (docs/reliability.md).
    if request.keys is None:
        weight = dict(graph.mirror.memory_keys(old["id"]))
        old_keys = sorted(graph.mirror.keys(weight), key=lambda k: (-weight[k["id"]], k["text"]))
        raw["keys"] = [k["text"] for k in old_keys]
        raw["key_types"] = [k["key_type"] for k in old_keys]
    if request.decay_profile is None:
        raw["decay_profile"] = old["decay_profile"]
    if request.ttl_seconds is None and old["ttl_seconds"]:
        remaining = old["expires_at"] - graph.now()
        raw["ttl_seconds"] = max(1.0, remaining) if old["expires_at"] else old["ttl_seconds"]
    raw["namespace"] = old["namespace"]
    if request.related_to is None:
        raw["related_to"] = graph.mirror.related_ids(old["id"])
    it = parse_item(graph, raw)
    if normalize_text(it.content) == old["norm"]:
        raise InvalidInput("the corrected content is the same as the current version; nothing to correct")
    if source and not it.source:
        it.source = source
    vectors = _key_vectors(graph, [it])
    now = graph.now()
    with graph.store.write() as tx:
        current = get_memory(graph, old["id"], tx=tx, active_only=True)  # re-checked under the writer
        resolver = KeyResolver(graph, tx, vectors, now)
        result = _write_one(graph, tx, resolver, it, now, supersedes=current["id"])
        if result.duplicate:
            raise InvalidInput(
                f"the corrected content already exists as memory {result.memory_id}; forget this one instead"
            )
        tx.run("memory/supersede", old_id=current["id"], new_id=result.memory_id, factor=SUPERSEDED_DEPTH_FACTOR, now=now)
        tx.run("link/memory_inactive", id=current["id"])  # the links' copy of the active flag follows
        graph.mirror.touch(tx, memories=[current["id"]])
        tx.run("memory/norm_delete", memory_id=current["id"])
        tx.after_commit(lambda: graph.lexical.remove(current["id"]))
        if current["supersedes"]:  # one-step history: the generation before the old one goes
            _delete(graph, tx, current["supersedes"])
        done = CorrectResult(memory_id=result.memory_id, supersedes=current["id"])
        graph.requests.record(tx, done)
    return done


def _delete(graph: Parts, tx: Tx, memory_id: str) -> None:
    """Remove a memory, its links and the keys left with no memory.

    The keys left with none are read before anything is deleted: those whose links all go to the
    memories this scope deletes, less the keys it linked to a memory or deleted already.
    """
    scope = _scope(tx)
    scope["deleted"].add(memory_id)
    key_ids = [r["key_id"] for r in tx.run("memory/keys", id=memory_id)]
    candidates = [k for k in key_ids if k not in scope["linked"] and k not in scope["keys_deleted"]]
    orphans = tx.run("key/orphaned_by", ids=candidates, gone=sorted(scope["deleted"])) if candidates else []
    tx.run("memory/norm_delete", memory_id=memory_id)
    tx.run("memory/clear_supersedes", id=memory_id)
    tx.run("link/memory_released", id=memory_id)  # its keys' counts of lasting links
    tx.run("memory/delete", id=memory_id)
    graph.mirror.touch(tx, memories=[memory_id])  # keys left orphaned are touched by delete_key
    tx.after_commit(lambda: graph.lexical.remove(memory_id))
    for orphan in orphans:
        delete_key(graph, tx, orphan["id"], orphan["namespace"])


def delete_key(graph: Parts, tx: Tx, key_id: str, namespace: str) -> None:
    _scope(tx)["keys_deleted"].add(key_id)
    tx.run("key/name_delete_for_key", key_id=key_id)
    tx.run("alias/delete_for_key", key_id=key_id)
    graph.aliases.touch(tx, [key_id])
    tx.run("alias/pending_cancel", key_id=key_id)
    rows = tx.run("key/get", id=key_id)
    if rows and rows[0]["k"]["key_type"] == "concept":
        graph.vectors.delete(tx, key_id, namespace)
    tx.run("key/delete", id=key_id)
    graph.mirror.touch(tx, keys=[key_id])


def forget(graph: Parts, request: ForgetRequest) -> ForgetResult:
    m = get_memory(graph, request.memory_id, request.namespace)
    with graph.store.write() as tx:
        m = get_memory(graph, m["id"], tx=tx)
        if m["active"] and m["supersedes"]:  # the current version takes its history with it
            _delete(graph, tx, m["supersedes"])
        _delete(graph, tx, m["id"])
        done = ForgetResult(memory_id=m["id"], deleted=True)
        graph.requests.record(tx, done)
    return done


def delete_expired(graph: Parts) -> int:
    """The TTL sweep: expired memories (already invisible) are deleted for good."""
    rows = graph.store.query("memory/expired", now=graph.now())
    for r in rows:
        with graph.store.write() as tx:
            if tx.run("memory/get", id=r["id"]):
                _delete(graph, tx, r["id"])
    return len(rows)


def dismiss(graph: Parts, request: DismissRequest) -> DismissResult:
    m = get_memory(graph, request.memory_id, request.namespace)
    key_id = request.key_id
    with graph.store.write() as tx:
        rows = tx.run("link/get", key_id=key_id, memory_id=m["id"])
        if not rows:
            raise NotFound(f"memory {m['id']} is not linked to key {key_id}")
        weight = max(LINK_MIN, rows[0]["weight"] * 0.5)
        tx.run("link/set", key_id=key_id, memory_id=m["id"], weight=weight)
        graph.mirror.touch(tx, memories=[m["id"]])
        tx.run("alias/pending_cancel", key_id=key_id)
        tx.after_commit(lambda: graph.autokey.forget_routes(key_id))
        done = DismissResult(memory_id=m["id"], key_id=key_id, link_weight=round(weight, 4))
        graph.requests.record(tx, done)
    return done


def confirm(graph: Parts, request: ConfirmRequest) -> dict[str, Any]:
    evidence, source = request.evidence, request.source
    m = get_memory(graph, request.memory_id, request.namespace, active_only=True)
    record = json.dumps({"evidence": evidence, "source": source}, ensure_ascii=False)
    with graph.store.write() as tx:
        get_memory(graph, m["id"], tx=tx, active_only=True)
        tx.run("memory/confirm", id=m["id"], step=DEPTH_STEP, now=graph.now(), evidence=record)
        graph.mirror.touch(tx, memories=[m["id"]])
        graph.requests.record(tx, {"memory_id": m["id"]})  # a retry answers with the memory's view then
    return {"memory_id": m["id"]}
