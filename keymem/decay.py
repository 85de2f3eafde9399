"""Decay arithmetic shared by the domain (a memory's validity) and the graph mirror (ranking factors).

Freshness halves every half-life of a memory's decay profile, counted from its last
confirmation; it lowers a memory's rank but never hides it, and confirmed depth raises it a
little.
"""

from __future__ import annotations

import math

import numpy as np

DECAY_PROFILES = ("transient", "standard", "stable", "permanent")
DAY = 86_400.0


def freshness(last_confirmed_at: float, now: float, half_life_days: float | None) -> float:
    if half_life_days is None:
        return 1.0
    age_days = max(0.0, now - last_confirmed_at) / DAY
    return math.pow(0.5, age_days / half_life_days)


def ranking_multiplier(fresh: np.ndarray) -> np.ndarray:
    """Decay is soft: it lowers a memory's rank, never hides it."""
    return 0.2 + 0.8 * fresh


def depth_boost(depth: np.ndarray) -> np.ndarray:
    """Confirmed memories rank a little higher: x1.0 when shallow up to x1.25 when fully deep."""
    return 1.0 + 0.25 * np.clip(depth, 0.0, 1.0)


def rank_factors(depth: np.ndarray, confirmed: np.ndarray, half_life_days: np.ndarray, now: float) -> np.ndarray:
    """Depth and freshness applied to any relevance score, for many memories at once.

    ``half_life_days`` is ``inf`` for permanent memories (freshness 1).
    """
    fresh = np.power(0.5, np.maximum(0.0, now - confirmed) / DAY / half_life_days)
    return depth_boost(depth) * ranking_multiplier(fresh)
