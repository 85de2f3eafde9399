"""Freshness, status and depth: how much a memory can be trusted now.

Freshness halves every half-life of the memory's decay profile, counted from
``last_confirmed_at``; only ``confirm_memory`` moves that clock, never a read. The status
follows freshness (fresh, aging, stale), except for a version that ``correct`` replaced:
whatever its freshness, it is ``superseded`` (``superseded_by`` names the current version).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from keymem.decay import DAY, freshness  # the decay arithmetic, shared with the graph mirror
from keymem.memory.views import Validity
from keymem.settings import Settings

FRESH = 0.5
AGING = 0.125
DEPTH_STEP = 0.05
SUPERSEDED_DEPTH_FACTOR = 0.3


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def status(fresh: float) -> str:
    if fresh >= FRESH:
        return "fresh"
    if fresh >= AGING:
        return "aging"
    return "stale"




def depth_stage(depth: float) -> str:
    if depth < 0.3:
        return "shallow"
    if depth <= 0.7:
        return "medium"
    return "deep"




def is_superseded(row: dict[str, Any]) -> bool:
    """A replaced version (``correct`` deactivates the old one); rows without the fields are current."""
    return row.get("active", True) is False or bool(row.get("superseded_by"))


def validity(row: dict[str, Any], settings: Settings, now: float) -> Validity:
    profile = row["decay_profile"]
    confirmed = row["last_confirmed_at"]
    fresh = freshness(confirmed, now, settings.half_life_days(profile))
    st = "superseded" if is_superseded(row) else status(fresh)
    return Validity(
        freshness=round(fresh, 4),
        status=st,  # type: ignore[arg-type]
        age_days=round(max(0.0, now - confirmed) / DAY, 3),
        last_confirmed_at=iso(confirmed) or "",
        confirmation_count=int(row["confirmation_count"]),
        decay_profile=profile,
        verification_recommended=st != "fresh",
        verification_required=st in ("stale", "superseded"),
    )

