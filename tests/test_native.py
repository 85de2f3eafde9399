"""The process that owns the store keeps BLAS on KEYMEM_BLAS_THREADS threads (keymem/native.py)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from keymem.native import blas_threads, limit_blas_threads
from keymem.settings import SettingsError, load_settings


def test_opening_the_graph_limits_blas(graph: Any) -> None:
    assert graph.settings.blas_threads == 1
    assert blas_threads() and set(blas_threads()) == {1}


def test_limit_applies_in_a_fresh_process() -> None:
    """Run where nothing else has limited it: the default pool is every core, the limit sets it."""
    code = ("import numpy; from keymem.native import blas_threads, limit_blas_threads;"
            "before = blas_threads(); limit_blas_threads(1); print(before, blas_threads())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"OPENBLAS_NUM_THREADS": "2", "PATH": ""}).stdout.split("] [")
    assert out[0].strip("[") == "2" and out[1].strip("]\n") == "1"


def test_blas_threads_setting_is_validated() -> None:
    assert load_settings({"KEYMEM_BLAS_THREADS": "2"}).blas_threads == 2
    with pytest.raises(SettingsError, match="KEYMEM_BLAS_THREADS"):
        load_settings({"KEYMEM_BLAS_THREADS": "0"})


def test_limit_is_idempotent_and_can_change() -> None:
    limit_blas_threads(2)
    assert set(blas_threads()) == {2}
    limit_blas_threads(1)
    assert set(blas_threads()) == {1}
