"""Limits: KEYMEM_MAX_CONTENT_CHARS, KEYMEM_MAX_KEYS and a full disk give clear errors and no corruption."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants, store_digest
from keymem.errors import InvalidInput, StoreError
from keymem.settings import SettingsError, load_settings
from tests.reliability.conftest import open_graph
from tests.reliability.crashlib import child_env, python


def test_max_content_chars(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings.with_overrides(max_content_chars=50), minilm_embedder)
    try:
        ok = g.remember(content="x" * 50, keys=["fifty"])
        before = store_digest(g)
        with pytest.raises(InvalidInput, match=r"content is 51 characters; the limit is 50"):
            g.remember(content="y" * 51, keys=["fifty-one"])
        with pytest.raises(InvalidInput, match=r"items\[1\]: content is 60 characters; the limit is 50"):
            g.remember_batch([{"content": "short", "keys": ["a"]}, {"content": "z" * 60, "keys": ["b"]}])
        with pytest.raises(InvalidInput, match="the limit is 50"):
            g.correct(memory_id=ok.memory_id, content="w" * 80)
        assert store_digest(g) == before
        assert check_invariants(g) == []
    finally:
        g.close()


def test_max_keys(settings: Any, minilm_embedder: Any) -> None:
    g = open_graph(settings.with_overrides(max_keys=3), minilm_embedder)
    try:
        ok = g.remember(content="three keys are fine", keys=["a1", "b2", "c3"])
        before = store_digest(g)
        with pytest.raises(InvalidInput, match=r"4 keys given; the limit is 3 per memory"):
            g.remember(content="four keys are not", keys=["a1", "b2", "c3", "d4"])
        with pytest.raises(InvalidInput, match="the limit is 3"):
            g.correct(memory_id=ok.memory_id, content="changed", keys=["a", "b", "c", "d", "e"])
        assert store_digest(g) == before
    finally:
        g.close()


@pytest.mark.parametrize(("var", "value", "words"), [
    ("KEYMEM_MAX_CONTENT_CHARS", "0", "must be at least 1"),
    ("KEYMEM_MAX_CONTENT_CHARS", "lots", "is not a whole number"),
    ("KEYMEM_MAX_KEYS", "-3", "must be at least 1"),
    ("KEYMEM_MAX_KEYS", "2.5", "is not a whole number"),
])
def test_limit_variables_are_checked(var: str, value: str, words: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings({var: value})
    assert var in str(err.value) and words in str(err.value)


# -- a full disk -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only); skipped where mounting is not permitted."""
    mnt = tmp_path_factory.mktemp("disk") / "mnt"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.strip()}")
    try:
        yield mnt
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["umount", "-l", str(mnt)], check=False, capture_output=True)


@pytest.fixture(scope="module")
def filled(small_disk: Path, minilm_dir: Path) -> tuple[list[str], list[str]]:
    """Fill the small disk once (a child process writes until the first failure)."""
    return _fill(small_disk, minilm_dir)


def _fill(mnt: Path, minilm_dir: Path) -> tuple[list[str], list[str]]:
    p = subprocess.run([python(), "-m", "tests.reliability.disk_worker", str(minilm_dir), str(mnt / "data")],
                       capture_output=True, text=True, env=child_env(), timeout=600)
    lines = p.stdout.splitlines()
    acked = [line.split()[1] for line in lines if line.startswith("ACK ")]
    return acked, lines + [f"EXIT {p.returncode}", *p.stderr.splitlines()[-5:]]


def test_full_disk_is_a_clear_error_and_loses_nothing(small_disk: Path, filled: Any, minilm_dir: Path,
                                                     minilm_embedder: Any, tmp_path: Path) -> None:
    acked, lines = filled
    full = next((line for line in lines if line.startswith("FULL ")), None)
    assert acked and full is not None, lines[-10:]
    assert full.startswith("FULL StoreError") and "could not commit the write" in full, full
    s = load_settings({}, data_dir=small_disk / "data", embedding_backend="local",
                      local_embedding_model="minilm-l6-v2", local_embedding_model_path=minilm_dir, rerank=False,
                      buffer_pool_mb=64, embed_threads=1)
    # reopen on the still-full disk, then after freeing space: everything acknowledged is there
    for grow in (False, True):
        if grow:
            subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
        try:
            g = open_graph(s, minilm_embedder)
        except StoreError as exc:  # refusing on the still-full disk is fine, if it says why
            assert not grow, exc
            assert str(exc).strip()
            continue
        try:
            missing = [m for m in acked if not g.store.query("memory/get", id=m)]
            assert missing == [], f"{len(missing)} of {len(acked)} acknowledged memories lost"
            assert not g.store.raw("MATCH (m:Memory) WHERE m.content = 'after the disk filled' RETURN m.id AS id")
            assert check_invariants(g) == []
        finally:
            g.close()
    (tmp_path / "disk_figures.txt").write_text(f"acknowledged before the disk filled: {len(acked)}\n{full}\n")
    print(f"\nfull disk: {len(acked)} acknowledged writes kept; first failure: {full[:200]}")


# After a failed commit on a full disk, Kuzu 0.11's in-process state is unusable (a retry hits
# "duplicated primary key", acknowledged rows read as missing, closing aborts the process).
# keymem fails stop: every later call says the disk is full, nothing is served wrong, the
# process exits cleanly, and the next start recovers the store (previous test).
def test_full_disk_process_stays_correct(filled: Any) -> None:
    acked, lines = filled
    full = next(line for line in lines if line.startswith("FULL "))
    assert "full" in full.lower() or "space" in full.lower(), full
    after_write = next(line for line in lines if line.startswith("AFTER-WRITE"))
    assert after_write.startswith("AFTER-WRITE StoreError") and "duplicated primary key" not in after_write, after_write
    after_read = next(line for line in lines if line.startswith("AFTER-READ"))
    assert after_read.startswith("AFTER-READ StoreError") and "full" in after_read, after_read
    assert "CLOSED" in lines, lines[-6:]
