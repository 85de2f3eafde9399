"""Crash safety: SIGKILL a writer at random points; every acknowledged write survives.

A worker process (crash_worker.py) opens a MemoryGraph directly on a data dir, as the daemon
does, and streams remember_batch / correct / forget calls, printing an ACK line after each
call returns. The test kills it with SIGKILL after a random delay (sometimes while the store
is still opening), reopens the store in this process and checks:

* the store opens;
* every acknowledged write is present (remembered ids readable with their content,
  corrections applied with one step of history, forgotten ids gone), and no active memory
  exists that nobody acknowledged;
* the one write in flight at the kill is fully applied or fully absent (a batch's items
  all-or-none, a correction with both pointers or none);
* check_invariants() is empty.

Default run: 5 kills. ``-m slow``: 25 kills. Figures are printed (``-s``) and written to
``crash_figures.json`` in the test's tmp dir.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from keymem.errors import StoreError
from tests.reliability.conftest import open_graph
from tests.reliability.crashlib import (
    Lines,
    Model,
    child_env,
    fold,
    kill,
    python,
    resolve_pending,
    verify,
)


def crash_loop(tmp_path: Path, settings: Any, embedder: Any, minilm_dir: Path, kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    model = Model()
    state = tmp_path / "state.json"
    outcomes: list[str] = []
    survived = 0
    for cycle in range(kills):
        state.write_text(json.dumps({"live": model.live}))
        proc = subprocess.Popen(
            [python(), "-m", "tests.reliability.crash_worker", str(settings.data_dir), str(minilm_dir),
             str(seed * 1000 + cycle), str(state)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
        )
        lines = Lines(proc)
        try:
            if rng.random() < 0.2:  # sometimes while the store opens / the sweep runs
                time.sleep(rng.uniform(0.0, 1.5))
            else:
                assert lines.wait_for("READY", timeout=60), "worker did not start: " + (proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
                time.sleep(rng.uniform(0.05, 2.5))
            exited = proc.poll()
            assert exited is None, f"the worker died by itself ({exited}): {proc.stderr.read()}"  # type: ignore[union-attr]
        finally:
            kill(proc)
        pending = fold(lines.drain(), model)
        try:
            graph = open_graph(settings, embedder)
        except StoreError as exc:  # pragma: no cover - the failure this test exists to catch
            pytest.fail(f"the store does not open after kill {cycle + 1}: {exc}")
        try:
            if pending is not None:
                outcomes.append(f"{pending['op']}:{resolve_pending(graph, model, pending)}")
            verify(graph, model)
        finally:
            graph.close()
        survived += 1
    figures = {
        "kills_survived": survived, "acknowledged_writes": model.acked,
        "in_flight_applied": model.unacked_applied, "in_flight_absent": model.unacked_absent,
        "live_memories": len(model.live), "forgotten_or_pruned": len(model.gone), "in_flight": outcomes,
    }
    (tmp_path / "crash_figures.json").write_text(json.dumps(figures, indent=2))
    print(f"\ncrash figures: {json.dumps(figures)}")
    return figures


def test_sigkill_writer_fast(tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path) -> None:
    figures = crash_loop(tmp_path, settings, minilm_embedder, minilm_dir, kills=5, seed=7)
    assert figures["kills_survived"] == 5
    assert figures["acknowledged_writes"] > 0


@pytest.mark.slow
def test_sigkill_writer_many(tmp_path: Path, settings: Any, minilm_embedder: Any, minilm_dir: Path) -> None:
    figures = crash_loop(tmp_path, settings, minilm_embedder, minilm_dir, kills=25, seed=11)
    assert figures["kills_survived"] == 25


# -- the shared daemon killed while a client streams calls ------------------------------------------
def _next_call(rng: random.Random, live: dict[str, str], n: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(method, params, BEGIN record) for one streamed write."""
    op = rng.random()
    if op < 0.55 or len(live) < 3:
        items = [{"content": f"daemon op{n} item{j}: " + " ".join(rng.choice("abcdefgh") * 3 for _ in range(4)),
                  "keys": rng.sample(["release", "kernel", "garden", "Alice", "Tokyo", "budget"], 2)}
                 for j in range(rng.choice((1, 2, 4, 8)))]
        return "remember_batch", {"items": items}, {"op": "batch", "contents": [i["content"] for i in items]}
    target = rng.choice(sorted(live))
    if op < 0.8:
        content = f"daemon op{n} corrected {rng.random():.6f}"
        return "correct", {"memory_id": target, "content": content}, {"op": "correct", "old": target, "content": content}
    return "forget", {"memory_id": target}, {"op": "forget", "id": target}


def daemon_kill_loop(km: Any, embedder: Any, kills: int, seed: int, tmp_path: Path) -> dict[str, Any]:
    import os
    import signal
    import threading

    from keymem.server import client as daemon_client
    from keymem.server.protocol import DaemonUnavailable

    rng = random.Random(seed)
    model = Model()
    outcomes: list[str] = []
    n = 0
    for _cycle in range(kills):
        daemon_client.start_daemon(km.settings(), env=km.env).close()
        info = km.wait_daemon_ready()
        c = daemon_client.DaemonClient(km.settings(), start=False)
        pending: list[dict[str, Any] | None] = [None]
        stopped = threading.Event()

        def stream(c: Any = c, pending: list[dict[str, Any] | None] = pending,
                   stopped: threading.Event = stopped) -> None:
            nonlocal n
            while True:
                n += 1
                method, params, begin = _next_call(rng, model.live, n)
                pending[0] = begin
                try:
                    result = c.call(method, params, retry=False, timeout=60)
                except (DaemonUnavailable, ConnectionError, OSError):
                    stopped.set()
                    return
                ack = dict(begin)
                if method == "remember_batch":
                    ack["ids"] = [r["memory_id"] for r in result["results"]]
                elif method == "correct":
                    ack["new"] = result["memory_id"]
                model.ack(ack)
                model.acked += 1
                pending[0] = None

        t = threading.Thread(target=stream, daemon=True)
        t.start()
        time.sleep(rng.uniform(0.2, 2.0))
        os.kill(int(info["pid"]), signal.SIGKILL)
        assert stopped.wait(60), "the client did not notice the dead daemon"
        t.join(10)
        c.close()
        deadline = time.monotonic() + 30
        while True:  # the killed daemon's lock on the store goes with the process
            try:
                graph = open_graph(km.settings(), embedder)
                break
            except StoreError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        try:
            if pending[0] is not None:
                outcomes.append(f"{pending[0]['op']}:{resolve_pending(graph, model, pending[0])}")
            verify(graph, model)
        finally:
            graph.close()
    figures = {"daemon_kills_survived": kills, "acknowledged_writes": model.acked,
               "in_flight_applied": model.unacked_applied, "in_flight_absent": model.unacked_absent,
               "live_memories": len(model.live), "in_flight": outcomes}
    (tmp_path / "daemon_crash_figures.json").write_text(json.dumps(figures, indent=2))
    print(f"\ndaemon crash figures: {json.dumps(figures)}")
    return figures


def test_sigkill_daemon_fast(km: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    f = daemon_kill_loop(km, minilm_embedder, kills=3, seed=5, tmp_path=tmp_path)
    assert f["daemon_kills_survived"] == 3 and f["acknowledged_writes"] > 0


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_sigkill_daemon_many(km: Any, minilm_embedder: Any, tmp_path: Path) -> None:
    f = daemon_kill_loop(km, minilm_embedder, kills=20, seed=9, tmp_path=tmp_path)
    assert f["daemon_kills_survived"] == 20
