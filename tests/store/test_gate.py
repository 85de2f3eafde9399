"""The reader gate: back-to-back exclusive holds (heavy reads run alone) do not starve readers."""

from __future__ import annotations

import threading
import time

from keymem.store.gate import Gate


def test_readers_get_in_between_back_to_back_exclusive_holds() -> None:
    gate = Gate()
    stop = threading.Event()
    holds = [0]

    def heavy() -> None:
        while not stop.is_set():
            with gate.exclusive():
                holds[0] += 1
                time.sleep(0.002)

    threads = [threading.Thread(target=heavy) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.05)
        waits = []
        for _ in range(20):
            t0 = time.monotonic()
            with gate.shared():
                waits.append(time.monotonic() - t0)
        assert max(waits) < 1.0, f"a reader waited {max(waits):.2f} s"
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    assert holds[0] > 20  # the exclusive holders were not starved either


def test_an_exclusive_holder_still_gets_in_under_a_stream_of_readers() -> None:
    gate = Gate()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with gate.shared():
                time.sleep(0.001)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(20):
            t0 = time.monotonic()
            with gate.exclusive():
                pass
            assert time.monotonic() - t0 < 1.0
    finally:
        stop.set()
        for t in threads:
            t.join(5)
