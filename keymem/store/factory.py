"""Open the store ``KEYMEM_STORE_URL`` names: the embedded LadybugDB file when unset, else a FalkorDB graph.

Every place that opens the store (the daemon, the CLI's direct and read-only opens) comes through here,
so each works on both engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from keymem.store.db import Store

if TYPE_CHECKING:
    from keymem.settings import Settings


def engine_of(settings: Settings) -> str:
    """``"ladybug"`` or ``"falkordb"``, without opening anything."""
    return "falkordb" if settings.store_url else "ladybug"


def open_store(settings: Settings, *, read_only: bool = False) -> Store:
    """The store of ``settings``. For writing, an engine-version upgrade of a LadybugDB file runs first
    (once, with a backup); ``read_only`` opens it as it is (the caller checks that a LadybugDB file exists)."""
    if settings.store_url:
        from keymem.engine_url import parse_store_url
        from keymem.store.falkor_connect import AckPolicy
        from keymem.store.falkordb import FalkorStore

        return FalkorStore(parse_store_url(settings.store_url), read_only=read_only, ack=AckPolicy.of(settings))
    if read_only:
        return Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb, read_only=True)
    from keymem.store import engine

    engine.upgrade(settings.db_path)
    return Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb)
