"""Ordered, named schema steps applied when the store opens, recorded in the database.

Each step is a file ``cypher/schema/NNN_name.cypher``. The applied ones are rows of
``KeymemMigration``; a step runs in one transaction together with its record, so a crash
leaves it either fully applied or not at all. A store that already holds data is backed
up before any step runs.
"""

from __future__ import annotations

import logging
import time

from keymem.store import cypher
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
    """Apply the missing steps; return their names."""
    steps = available()
    with store.write() as tx:
        for stmt in cypher.load_script("schema/000_migrations"):
            tx.raw(stmt)
    done = set(applied(store))
    todo = [s for s in steps if s not in done and s != "000_migrations"]
    if not todo:
        return []
    if done - {"000_migrations"}:
        store.backup("migrate-" + todo[0])
    for step in todo:
        with store.write() as tx:
            for stmt in cypher.load_script(f"schema/{step}"):
                tx.raw(stmt)
            tx.run("schema/record", name=step, at=time.time())
        log.info("applied schema step %s", step)
    return todo
