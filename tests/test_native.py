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


def test_malloc_arenas_capped_and_heap_trimmed_in_a_fresh_process() -> None:
    """glibc accepts the arena cap, and a trim gives back freed pages that free() kept (measured: 0 without it)."""
    import platform
    import subprocess
    import sys

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    code = (
        "from keymem.native import limit_malloc_arenas, trim_heap\n"
        "def rss():\n"
        "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1])\n"
        "assert limit_malloc_arenas(2)\n"
        "blocks = [bytearray(100_000) for _ in range(2000)]\n"  # ~200 MB in small mmap-free chunks
        "keep = blocks[::50]; del blocks\n"
        "before = rss(); trim_heap(); after = rss()\n"
        "print(before - after)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 50_000, out.stdout  # KiB handed back
