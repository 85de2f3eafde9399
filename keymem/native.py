"""Thread pools of the native libraries keymem calls (OpenBLAS under numpy).

keymem's numeric work is small: one query vector against a few thousand key vectors, a few
hundred association masses. OpenBLAS splits even a 5k x 384 product across every core and its
threads spin while they wait, so on a machine that is busy with anything else (the agent, an
editor, a build) one product's p95 went from 0.8 ms on one thread to 25 ms on two, and
``recall_direct``'s p50 from ~27 ms to ~115 ms on a loaded 2-core machine (docs/design.md,
"Native thread pools"). The daemon therefore keeps BLAS on ``KEYMEM_BLAS_THREADS`` threads
(default 1).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)
_applied: int | None = None


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
