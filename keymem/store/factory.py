"""Open the store ``KEYMEM_STORE_URL`` names: the embedded LadybugDB file when unset, else a FalkorDB graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keymem.store.db import Store

if TYPE_CHECKING:
    from keymem.settings import Settings


def engine_of(settings: Settings) -> str:
    """``"ladybug"`` or ``"falkordb"``, without opening anything."""
    return "falkordb" if settings.store_url else "ladybug"


def open_store(settings: Settings) -> Store:
    """The store of ``settings``, open for writing; an engine-version upgrade of a LadybugDB file runs
    first (once, with a backup)."""
    if settings.store_url:
        from keymem.engine_url import parse_store_url
        from keymem.store.falkordb import FalkorStore

        return FalkorStore(parse_store_url(settings.store_url))
    from keymem.store import engine

    engine.upgrade(settings.db_path)
    return Store(settings.db_path, buffer_pool_mb=settings.buffer_pool_mb)
