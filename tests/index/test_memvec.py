"""Memory content vectors (``index/memvec.py``): filled on write and on read, saved beside the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from keymem.index.memvec import MemoryVectors


def _embed(texts: list[str]) -> np.ndarray:
    """A deterministic unit vector per text (pure logic: no model needed)."""
    out = np.zeros((len(texts), 8), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i, sum(map(ord, t)) % 8] = 1.0
    return out


def test_relevance_embeds_what_it_lacks_and_the_file_keeps_it(tmp_path: Path) -> None:
    store = {"m1": "a", "m2": "b", "m3": "c"}
    reads: list[list[str]] = []

    def read(ids: list[str]) -> dict[str, str]:
        reads.append(ids)
        return {m: store[m] for m in ids if m in store}

    mv = MemoryVectors(8, "fake-8", _embed, read, path=tmp_path / "memory_vectors.npz")
    q = _embed(["a"])[0]
    assert mv.relevance(q, ["m1", "m2", "gone"]) == {"m1": 1.0, "m2": 0.0, "gone": 0.0}
    assert reads == [["m1", "m2", "gone"]] and len(mv) == 2
    mv.relevance(q, ["m1", "m2"])
    assert len(reads) == 1  # embedded once
    mv.add_soon("m3", "c")  # no worker: embedded at once
    mv.save(keep=lambda m: m != "m2")  # a forgotten memory's row is dropped
    again = MemoryVectors(8, "fake-8", _embed, read, path=tmp_path / "memory_vectors.npz")
    assert again.load() == 2 and "m1" in again and "m3" in again and "m2" not in again
    other_model = MemoryVectors(8, "other-8", _embed, read, path=tmp_path / "memory_vectors.npz")
    assert other_model.load() == 0 and len(other_model) == 0  # another model's vectors are recomputed


def test_a_damaged_file_is_recomputed_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "memory_vectors.npz").write_bytes(b"not a numpy file")
    mv = MemoryVectors(8, "fake-8", _embed, lambda ids: {}, path=tmp_path / "memory_vectors.npz")
    assert mv.load() == 0
