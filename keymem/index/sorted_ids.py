"""Ids held as one sorted numpy array of UTF-8 bytes, found by binary search.

A ``str`` id in a dict (and a list for the reverse) costs ~150 bytes; the same id in a numpy
``S`` array costs its length (22 bytes for keymem's ids). The BM25 mains and the graph mirror
hold the ids they load at open this way. Ids holding NUL cannot be stored (numpy strips trailing
NULs) and are reported as absent; keymem's ids are ``[mk]_`` + hex.
"""

from __future__ import annotations

import numpy as np


def encode(ids: list[str]) -> np.ndarray:
    """The ids as a numpy bytes array (in the order given)."""
    return np.array([i.encode() for i in ids], dtype=np.bytes_) if ids else np.zeros(0, dtype="S1")


def find(keys: np.ndarray, doc_id: str) -> int:
    """Position of the last element equal to ``doc_id`` in the sorted ``keys``, or -1."""
    key = doc_id.encode()
    if not len(keys) or len(key) > keys.dtype.itemsize or b"\0" in key:
        return -1
    i = int(np.searchsorted(keys, key, side="right")) - 1
    return i if i >= 0 and keys[i] == key else -1


def find_many(keys: np.ndarray, ids: list[str]) -> np.ndarray:
    """``find`` of many ids in one vectorised search (``keys`` holding each id at most once)."""
    if not ids or not len(keys):
        return np.full(len(ids), -1, dtype=np.int64)
    width = keys.dtype.itemsize
    raw = [i.encode() for i in ids]
    fits = np.array([len(k) <= width and b"\0" not in k for k in raw], dtype=bool)
    arr = np.array([k if ok else b"" for k, ok in zip(raw, fits.tolist(), strict=True)], dtype=keys.dtype)
    pos = np.minimum(np.searchsorted(keys, arr), len(keys) - 1)
    return np.where((keys[pos] == arr) & fits, pos, -1)


def decode(keys: np.ndarray, rows: np.ndarray) -> list[str]:
    """The ids at ``rows``, as strings."""
    return [b.decode() for b in keys[rows].tolist()]
