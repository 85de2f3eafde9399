"""Thread pools and heap of the native libraries keymem calls (OpenBLAS under numpy, glibc malloc).

keymem's numeric work is small: one query vector against a few thousand key vectors, a few
hundred association masses. OpenBLAS splits even a 5k x 384 product across every core and its
threads spin while they wait, so on a machine that is busy with anything else (the agent, an
editor, a build) one product's p95 went from 0.8 ms on one thread to 25 ms on two, and
``recall_direct``'s p50 from ~27 ms to ~115 ms on a loaded 2-core machine (docs/design.md,
"Native thread pools"). The daemon therefore keeps BLAS on ``KEYMEM_BLAS_THREADS`` threads
(default 1).

The daemon also runs for days on a dozen threads (connections, a worker pool, sweeps). glibc gives
threads their own malloc arenas (up to 8 per core) and keeps what each frees: after a soak of
100k reads and 20k writes the daemon held ~95 MB more than a fresh one on the same store. It
therefore caps the arenas (``limit_malloc_arenas``) and hands freed memory back now and then
(``trim_heap``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
from collections.abc import Iterator

log = logging.getLogger(__name__)
_applied: int | None = None
_LIBC: ctypes.CDLL | bool | None = None
M_ARENA_MAX = -8  # glibc's mallopt parameter


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim  # noqa: B018  (glibc only: musl and others have no malloc_trim)
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC if isinstance(_LIBC, ctypes.CDLL) else None


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas for threads started from now on; False where there is no glibc."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (bulk loads: millions of acyclic objects made and dropped,
    which trigger collections that find nothing; ~1 s of a 1M-memory open)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def trim_heap() -> None:
    """Hand the heap's freed pages back to the OS (glibc keeps them otherwise)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def limit_blas_threads(threads: int) -> None:
    """Cap the BLAS libraries numpy has loaded to ``threads`` threads, for the whole process.

    Idempotent; called once a process has numpy loaded (opening the graph loads it)."""
    global _applied
    if _applied == threads:
        return
    import numpy  # noqa: F401  (loads the BLAS library the limit applies to)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
    _applied = threads
    log.debug("BLAS limited to %d thread(s)", threads)


def blas_threads() -> list[int]:
    """The thread counts of the loaded BLAS libraries (for ``keymem doctor`` and tests)."""
    from threadpoolctl import threadpool_info

    return [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
