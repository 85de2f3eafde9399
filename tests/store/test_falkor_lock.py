"""The writer lease several daemons on one FalkorDB store take around each write scope, on a real server."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import pytest
import redis

from keymem.errors import StoreError
from keymem.store.falkor_lock import RedisLease
from tests.conftest_engines import FalkorServer

pytestmark = pytest.mark.timeout(60)


def _client(server: FalkorServer) -> redis.Redis:
    return redis.Redis(host=server.host, port=server.port)


def test_a_second_holder_waits_until_the_first_releases(falkordb_server: FalkorServer) -> None:
    key = f"t{uuid.uuid4().hex[:8]}:writer"
    first, second = RedisLease(_client(falkordb_server), key), RedisLease(_client(falkordb_server), key)
    got: list[float] = []

    def take() -> None:
        with second.held():
            got.append(time.monotonic())

    with first.held():
        t = threading.Thread(target=take)
        t.start()
        time.sleep(0.3)
        assert not got  # still waiting
        released = time.monotonic()
    t.join(5)
    assert got and got[0] >= released and second.waits == 1
    assert _client(falkordb_server).get(key) is None


def test_a_lease_is_renewed_while_held_past_its_ttl(falkordb_server: FalkorServer) -> None:
    key = f"t{uuid.uuid4().hex[:8]}:writer"
    holder = RedisLease(_client(falkordb_server), key, ttl_ms=300)
    other = RedisLease(_client(falkordb_server), key, ttl_ms=300, wait_s=0.8)
    with holder.held():
        with pytest.raises(StoreError, match="held the store's writer lease"):
            other.acquire()  # 0.8 s of trying, past the 0.3 s ttl: the renewal kept it
        assert not holder.lost
    with other.held():
        pass


def test_release_never_drops_a_lease_another_process_took(falkordb_server: FalkorServer) -> None:
    key = f"t{uuid.uuid4().hex[:8]}:writer"
    client = _client(falkordb_server)
    stale = RedisLease(_client(falkordb_server), key, ttl_ms=200)
    stale.acquire()
    client.delete(key)  # as if it had expired while this process stalled ...
    client.set(key, "someone-else", px=5000)  # ... and another daemon took it
    stale.release()
    assert stale.lost and client.get(key) == b"someone-else"


def test_a_holder_killed_blocks_the_others_at_most_its_ttl(falkordb_server: FalkorServer) -> None:
    key = f"t{uuid.uuid4().hex[:8]}:writer"
    code = ("import sys, time, redis; from keymem.store.falkor_lock import RedisLease; "
            f"l = RedisLease(redis.Redis(host={falkordb_server.host!r}, port={falkordb_server.port}), {key!r}, "
            "ttl_ms=1000); l.acquire(); print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        proc.kill()
        proc.wait(5)
        killed = time.monotonic()
        with RedisLease(_client(falkordb_server), key).held():
            waited = time.monotonic() - killed
    finally:
        proc.kill()
    assert 0.0 < waited <= 1.5  # the dead holder's lease expired with its 1 s ttl
