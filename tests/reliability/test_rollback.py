"""A refused call that had already written inside its transaction must not wedge the store.

Kuzu 0.11.3 bug (pure-Kuzu reproduction in docs/reliability.md): after ROLLBACK of a
transaction that SET properties on a node, later updates in the same table fail with
"Write-write conflict of updating the same row" (the transaction is aborted by Kuzu), or
the process segfaults. A CHECKPOINT right after the ROLLBACK clears it (measured).

keymem's Store runs a CHECKPOINT right after every ROLLBACK, and the domain validates before
it writes (read_memory checks via_key_id before recording the access). Each scenario runs in
a child process (a segfault must not take pytest down): one refused call, then reads and
ordinary writes, four rounds; all later writes must succeed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.reliability.crashlib import child_env, python


def run(scenario: str, tmp_path: Path, minilm_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python(), "-m", "tests.reliability.rollback_worker", str(minilm_dir), str(tmp_path / "data"), scenario],
        capture_output=True, text=True, env=child_env(), timeout=240,
    )


@pytest.mark.parametrize("scenario", ["read_memory_unlinked_via", "raw_failure_after_set"])
def test_refusal_after_a_write_does_not_wedge_the_store(tmp_path: Path, minilm_dir: Path, scenario: str) -> None:
    p = run(scenario, tmp_path, minilm_dir)
    assert p.returncode == 0 and "DONE" in p.stdout, (
        f"exit {p.returncode}; stdout: {p.stdout[-500:]}; stderr: {p.stderr[-1500:]}")


def test_refused_batch_rolls_back_cleanly(tmp_path: Path, minilm_dir: Path) -> None:
    """A batch whose second item is refused (after the first was created) rolls back with no harm."""
    p = run("batch_bad_related", tmp_path, minilm_dir)
    assert p.returncode == 0 and "DONE" in p.stdout, (
        f"exit {p.returncode}; stdout: {p.stdout[-500:]}; stderr: {p.stderr[-1500:]}")
    assert p.stdout.count("REFUSED NotFound") == 4
