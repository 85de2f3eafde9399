"""The buffer pool follows the store's size and the machine's memory when KEYMEM_BUFFER_POOL_MB is unset."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from keymem.settings import SettingsError, load_settings
from keymem.store import db
from keymem.store.db import POOL_FLOOR_MB, Store, auto_pool_mb

MIB = 1024 * 1024


def sparse(path: Path, mib: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(mib * MIB)
    return path


def test_the_pool_is_the_store_size_plus_working_memory_within_floor_and_a_quarter_of_ram(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert auto_pool_mb(tmp_path / "absent.lbug") == POOL_FLOOR_MB
    assert auto_pool_mb(sparse(tmp_path / "small.lbug", 24)) == POOL_FLOOR_MB  # a 10k store
    assert auto_pool_mb(sparse(tmp_path / "s100k.lbug", 236)) == 384  # 236 + 128, rounded up to 64
    sparse(tmp_path / "s100k.lbug.wal", 40)
    assert auto_pool_mb(tmp_path / "s100k.lbug") == 448  # the log is replayed into the pool too
    monkeypatch.setattr(db, "memory_mb", lambda: 8 * 1024)
    assert auto_pool_mb(sparse(tmp_path / "huge.lbug", 9000)) == 2048  # a quarter of an 8 GiB machine
    monkeypatch.setattr(db, "memory_mb", lambda: 512)
    assert auto_pool_mb(tmp_path / "huge.lbug") == POOL_FLOOR_MB  # never below the floor


def test_a_store_opened_without_a_pool_size_sizes_it_and_says_so(tmp_path: Path) -> None:
    store = Store(tmp_path / "k.lbug", buffer_pool_mb=None)
    try:
        assert store.pool_auto and store.buffer_pool_mb == POOL_FLOOR_MB
        assert store.pool_usage()[1] == POOL_FLOOR_MB * MIB
    finally:
        store.close()
    fixed = Store(tmp_path / "k.lbug", buffer_pool_mb=96)
    try:
        assert not fixed.pool_auto and fixed.pool_usage()[1] == 96 * MIB
    finally:
        fixed.close()


@pytest.mark.parametrize("raw, value", [("", None), ("auto", None), ("AUTO", None), ("512", 512)])
def test_the_setting_takes_a_size_or_auto(raw: str, value: int | None) -> None:
    env = {"KEYMEM_BUFFER_POOL_MB": raw} if raw else {}
    assert load_settings(env).buffer_pool_mb == value


def test_a_bad_pool_setting_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"KEYMEM_BUFFER_POOL_MB='lots' is not a whole number or auto"):
        load_settings({"KEYMEM_BUFFER_POOL_MB": "lots"})
    with pytest.raises(SettingsError, match="at least 64"):
        load_settings({"KEYMEM_BUFFER_POOL_MB": "8"})
    cfg = tmp_path / "config.toml"
    cfg.write_text('KEYMEM_BUFFER_POOL_MB = "auto"\n')
    assert load_settings({"KEYMEM_CONFIG": str(cfg)}).buffer_pool_mb is None


def test_doctor_shows_the_automatic_pool(tmp_path: Path, minilm_dir: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KEYMEM_DATA_DIR": str(tmp_path / "data"),
           "EMBEDDING_BACKEND": "local", "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2",
           "LOCAL_EMBEDDING_MODEL_PATH": str(minilm_dir), "KEYMEM_RERANK": "false", "KEYMEM_DAEMON": "off",
           "HF_HUB_OFFLINE": "1"}
    Store(tmp_path / "data" / "keymem.lbug", buffer_pool_mb=64).close()
    p = subprocess.run([sys.executable, "-m", "keymem.cli.main", "doctor"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert f"(buffer pool {POOL_FLOOR_MB} MiB sized from the store's size, KEYMEM_BUFFER_POOL_MB unset)" in p.stdout, \
        p.stdout + p.stderr
