"""Ordered, named schema steps applied when the store opens, recorded in the database.

Each step is a file ``cypher/schema/NNN_name.cypher``. The applied ones are rows of
``KeymemMigration``; a step runs in one transaction together with its record, so a crash
leaves it either fully applied or not at all. A store that already holds data is backed
up before any step runs. Data too large for one transaction is filled after the steps, in
pages that resume at the next open (``store/walk.py``, step 003's link copies).
"""

from __future__ import annotations

import logging
import time

from keymem.store import cypher, walk
from keymem.store.db import Store

log = logging.getLogger("keymem.store")


def available() -> list[str]:
    """Step names in order, from the shipped ``cypher/schema`` directory."""
    root = cypher.cypher_root() / "schema"
    return sorted(p.stem for p in root.glob("[0-9][0-9][0-9]_*.cypher"))


def applied(store: Store) -> list[str]:
    rows = store.query("schema/applied")
    return sorted(r["name"] for r in rows)


def migrate(store: Store) -> list[str]:
    """Apply the missing steps; return their names. Daemons opening one shared store at once take turns."""
    with store.held("migrations"):
        return _migrate(store)


def _migrate(store: Store) -> list[str]:
    steps = available()
    with store.write() as tx:
        for stmt in store.script("schema/000_migrations"):
            tx.raw(stmt)
    done = set(applied(store))
    todo = [s for s in steps if s not in done and s != "000_migrations"]
    if todo and done - {"000_migrations"}:
        store.backup("migrate-" + todo[0])
    for step in todo:
        with store.write() as tx:
            for stmt in store.script(f"schema/{step}"):
                tx.raw(stmt)
            tx.run("schema/record", name=step, at=time.time())
        log.info("applied schema step %s", step)
    _record_engine(store)
    # Step 003's data, filled in pages (too large for one transaction); resumes if interrupted, and
    # re-derived after a WAL replay (an unclean stop; see Store.replayed_wal).
    filled = walk.fill_walk_copies(store, force=store.replayed_wal and walk.copies_ready(store))
    if filled:
        log.info("filled the association walk's copies of %d links, memories and keys", filled)
    return todo


def _record_engine(store: Store) -> None:
    """The engine and storage version that write this store (a later upgrade knows what it moves from)."""
    from keymem.store import engine

    want = {"engine": f"{engine.ENGINE} {engine.ENGINE_VERSION}", "storage_version": str(engine.STORAGE_VERSION)}
    have = {r["name"]: r["value"] for r in store.query("meta/all")}
    if all(have.get(k) == v for k, v in want.items()):
        return
    with store.write() as tx:
        for name, value in want.items():
            tx.run("meta/set", name=name, value=value)
