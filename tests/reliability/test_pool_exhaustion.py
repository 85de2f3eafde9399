"""A full buffer pool is never a brick: the statement that cannot get memory fails alone, with one line
naming the setting to raise; the pool is usable again for the next call; the daemon neither exits
nor restarts.

The pool here is the smallest keymem accepts (64 MiB); console statements through the daemon that
each need more than that (a hash aggregate over 3M strings) exhaust it while other clients make
ordinary tool calls at the same time.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest

from keymem.errors import PoolFull
from keymem.server.client import DaemonClient
from keymem.settings import load_settings
from keymem.store import migrations
from keymem.store.db import Store
from tests.e2e.support import Keymem

HEAVY = ("UNWIND range(1, 3000000) AS i "
         "WITH 'a string long enough to fill the hash table ' + string(i) AS s, count(*) AS n RETURN count(n)")
CONSOLE = "keymem.cli.ops:cypher_run"


@pytest.fixture
def small_pool(km: Keymem) -> Keymem:
    km.env["KEYMEM_BUFFER_POOL_MB"] = "64"
    return km


def tool_calls(c: DaemonClient, i: int, n: int, written: list[str], errors: list[str]) -> None:
    for j in range(n):
        op = ("recall", "remember", "browse_keys", "read_key")[j % 4]
        args: dict[str, Any] = {
            "recall": {"query": f"garden tools {j}"},
            "remember": {"content": f"client {i} note {j}: the shed keeps garden tool {j}", "keys": ["garden", f"tool {j}"]},
            "browse_keys": {"limit": 20},
            "read_key": {"key_id": "garden"},
        }[op]
        try:
            res = c.call(op, args, timeout=120)
        except Exception as exc:  # counted: the figure is "errors"
            errors.append(f"{op}: {exc}")
            continue
        if op == "remember":
            written.append(res["memory_id"])


def test_a_full_pool_fails_alone_and_every_later_call_succeeds(small_pool: Keymem) -> None:
    km = small_pool
    c = DaemonClient(km.settings(), env=km.env)
    try:
        c.call("remember_batch", {"items": [
            {"content": f"garden fact {i}: the tomatoes need water", "keys": ["garden", f"fact {i}"]} for i in range(40)]},
            timeout=300)
        pid = km.wait_daemon_ready()["pid"]
        console_errors: list[str] = []
        tool_errors: list[str] = []
        written: list[str] = []

        def console() -> None:
            cc = DaemonClient(km.settings(), start=False)
            try:
                for _ in range(3):
                    try:
                        cc.call(CONSOLE, {"query": HEAVY}, timeout=120)
                    except Exception as exc:
                        console_errors.append(str(exc))
            finally:
                cc.close()

        def tools(i: int) -> None:
            cc = DaemonClient(km.settings(), start=False)
            try:
                tool_calls(cc, i, 24, written, tool_errors)
            finally:
                cc.close()

        threads = [threading.Thread(target=console) for _ in range(2)]
        threads += [threading.Thread(target=tools, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)

        assert len(console_errors) == 6, console_errors  # every heavy statement was refused...
        for e in console_errors:  # ...alone, with one line that names the setting
            assert "\n" not in e and "buffer pool (64 MiB) was full" in e and "KEYMEM_BUFFER_POOL_MB" in e, e
        assert tool_errors == []
        assert km.wait_daemon_ready()["pid"] == pid  # no exit, no restart

        later: list[str] = []
        tool_calls(c, 9, 40, written, later)
        assert later == []
        for mid in written:
            assert c.call("read_memory", {"memory_id": mid}, timeout=60)["memory_id"] == mid
        small = c.call(CONSOLE, {"query": "UNWIND range(1, 1000) AS i RETURN count(i) AS n"}, timeout=60)
        assert small["rows"] == [[1000]]
        pool = c.call("keymem.cli.ops:stats", {}, timeout=60)["process"]["buffer_pool"]
        assert pool["refused_statements"] >= 6 and pool["capacity_bytes"] == 64 * 1024 * 1024
        doctor = subprocess.run([sys.executable, "-m", "keymem.cli.main", "doctor"], capture_output=True, text=True,
                                env=km.env, timeout=120)
        assert "buffer pool: 64.0 MiB (KEYMEM_BUFFER_POOL_MB); " in doctor.stdout, doctor.stdout
        assert "statement(s) refused for lack of pool since the start" in doctor.stdout
        assert km.wait_daemon_ready()["pid"] == pid
    finally:
        c.close()


def test_a_checkpoint_that_finds_the_pool_full_reopens_the_store_instead_of_stopping(tmp_path: Any) -> None:
    """Before: the store fail-stopped and the daemon exited (then restarted, and again under load)."""
    store = Store(tmp_path / "k.lbug", buffer_pool_mb=64)
    try:
        migrations.migrate(store)
        with store.exclusive() as conn:
            conn.raw("CREATE NODE TABLE T(id STRING PRIMARY KEY, n INT64)")
        with store.write() as tx:
            tx.run("meta/set", name="probe", value="1")
            tx.raw("CREATE (:T {id: 'a', n: 1})")
        assert store.query("meta/get", name="probe") == [{"value": "1"}]  # a prepared statement of the old database
        store._checkpoint_failed(RuntimeError("Buffer manager exception: Unable to allocate memory! The buffer "
                                              "pool is full and no memory could be freed!"), "in the test")
        assert store.failed is None and store.reopens == 1
        assert store.query("meta/get", name="probe") == [{"value": "1"}]
        with store.write() as tx:
            tx.run("meta/set", name="probe", value="2")
        assert store.query("meta/get", name="probe") == [{"value": "2"}]
        seen = threading.Event()

        def other_thread() -> None:  # a connection made before the reopen is replaced too
            assert store.raw("MATCH (t:T) RETURN t.n AS n") == [{"n": 1}]
            seen.set()

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert seen.is_set()
    finally:
        store.close()


def test_a_statement_too_large_for_the_pool_is_one_line_and_the_store_serves_on(tmp_path: Any) -> None:
    store = Store(tmp_path / "k.lbug", buffer_pool_mb=64)
    try:
        with pytest.raises(PoolFull) as caught:
            store.adhoc(lambda conn: conn.raw(HEAVY))
        assert "\n" not in str(caught.value) and "KEYMEM_BUFFER_POOL_MB (now 64)" in str(caught.value)
        assert store.pool_failures == 1 and store.failed is None
        assert store.raw("UNWIND range(1, 300000) AS i WITH 'x' + string(i) AS s, count(*) AS n RETURN count(n) AS c") \
            == [{"c": 300000}]
    finally:
        store.close()


def test_settings_floor_still_applies() -> None:
    with pytest.raises(Exception, match="KEYMEM_BUFFER_POOL_MB"):
        load_settings({"KEYMEM_BUFFER_POOL_MB": "8"})
