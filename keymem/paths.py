"""Owner-only directories: every keymem room creates its directories through here."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def ensure_private_dir(path: Path, *, tighten: bool = True) -> Path:
    """Create ``path`` owner-only, and every missing parent too (``mkdir(parents=True)`` would make
    those 0755: the data dir itself, when a server's first act is ``<data dir>/logs``); tighten
    ``path`` if it already exists (unless not ``tighten``). Parents that exist are left as they are."""
    missing = []
    here = path
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            d.mkdir(mode=0o700)
    if tighten and path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path
