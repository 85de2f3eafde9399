"""The daemon's channel and life cycle: permissions, tokens, stale files, start races, the CLI."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from keymem.server import client
from keymem.server.protocol import LineReader, encode, pid_alive, read_pid
from tests.e2e.support import SERVER_CMD, Keymem

pytestmark = pytest.mark.timeout(90)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def raw_request(path: Path, msg: dict[str, object]) -> tuple[dict[str, object] | None, bool]:
    """Send one raw line; return the answer and whether the daemon then closed the connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(path))
    try:
        s.sendall(encode(msg))
        reader = LineReader(s)
        answer = reader.read()
        try:
            s.sendall(encode(msg))
            closed = reader.read() is None
        except OSError:
            closed = True
        return answer, closed
    finally:
        s.close()


def test_permissions_are_owner_only(daemon: Keymem) -> None:
    d = daemon.data_dir
    assert mode(d) == 0o700
    assert stat.S_ISSOCK((d / "daemon.sock").stat().st_mode) and mode(d / "daemon.sock") == 0o600
    assert mode(d / "daemon.token") == 0o600 and len((d / "daemon.token").read_text().strip()) == 64
    assert mode(d / "daemon.pid") == 0o600
    assert mode(d / "logs") == 0o700 and mode(d / "logs" / "keymem.log") == 0o600
    for f in d.iterdir():  # the store and its WAL too (the daemon runs with umask 077)
        if f.is_file():
            assert mode(f) & 0o077 == 0, f


def test_wrong_or_missing_token_is_refused(daemon: Keymem) -> None:
    sock = daemon.data_dir / "daemon.sock"
    for token in ("0" * 64, None, ""):
        msg: dict[str, object] = {"id": 1, "method": "counts", "params": {}}
        if token is not None:
            msg["token"] = token
        answer, closed = raw_request(sock, msg)
        assert answer is not None and answer["ok"] is False
        assert answer["error"]["type"] == "Unauthorized"  # type: ignore[index]
        assert closed
    good = (daemon.data_dir / "daemon.token").read_text().strip()
    answer, closed = raw_request(sock, {"id": 2, "token": good, "method": "counts", "params": {}})
    assert answer is not None and answer["ok"] is True and not closed


def test_garbage_and_unknown_methods_are_errors_not_crashes(daemon: Keymem) -> None:
    c = client.DaemonClient(daemon.settings(), start=False)
    try:
        with pytest.raises(Exception, match="unknown method"):
            c.call("no_such_method")
        with pytest.raises(Exception, match="unknown method"):
            c.call("os:system", {"cmd": "true"})
        with pytest.raises(Exception, match="not a daemon method"):
            c.call("keymem.server.host:GraphHost")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(daemon.data_dir / "daemon.sock"))
        s.sendall(b"this is not json\n")
        assert json.loads(s.makefile().readline())["error"]["type"] == "ProtocolError"
        s.close()
        assert c.ping()["state"] == "ready"  # still serving
    finally:
        c.close()


def test_stale_socket_and_pid_file_are_replaced(km: Keymem) -> None:
    d = km.data_dir
    d.mkdir(parents=True, mode=0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (d / "daemon.pid").write_text(f"{dead.pid}\n")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(d / "daemon.sock"))  # a socket file nobody listens on, as after kill -9
    stale.close()
    (d / "daemon.token").write_text("stale")
    c = client.DaemonClient(km.settings(), env=km.env)
    try:
        info = c.ping()
    finally:
        c.close()
    km.pids.add(int(info["pid"]))
    assert info["pid"] != dead.pid and read_pid(d / "daemon.pid") == info["pid"]
    assert (d / "daemon.token").read_text() != "stale"


def test_start_race_ends_with_one_daemon(km: Keymem) -> None:
    settings = km.settings()
    procs = [client.spawn_daemon(settings, env=km.env) for _ in range(4)]
    km.pids.update(p.pid for p in procs)
    deadline = time.monotonic() + 20
    while sum(p.poll() is None for p in procs) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    alive = [p for p in procs if p.poll() is None]
    assert len(alive) == 1
    assert sorted(p.returncode for p in procs if p not in alive) == [3, 3, 3]  # ALREADY_RUNNING
    assert km.wait_daemon_ready()["pid"] == alive[0].pid


def test_cli_status_start_stop(km: Keymem) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*SERVER_CMD, "daemon", *args], capture_output=True, text=True, env=km.env, timeout=60)

    down = cli("--status")
    assert down.returncode == 3 and "not running" in down.stdout
    up = cli()
    assert up.returncode == 0 and "running (pid" in up.stdout, up.stderr
    pid = read_pid(km.data_dir / "daemon.pid")
    assert pid and pid_alive(pid)
    km.pids.add(pid)
    km.wait_daemon_ready()
    st = cli("--status")
    assert st.returncode == 0 and "ready" in st.stdout and "store: 0 keys" in st.stdout
    stopped = cli("--stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not pid_alive(pid)
    assert not (km.data_dir / "daemon.sock").exists() and not (km.data_dir / "daemon.pid").exists()
    assert "not running" in cli("--stop").stdout


def test_periodic_sweep_deletes_expired_memories(km: Keymem) -> None:
    env = {**km.env, "KEYMEM_CLEANUP_INTERVAL_MS": "1000"}
    c = client.DaemonClient(km.settings(), env=env)
    try:
        mid = c.call("remember", {"content": "A fleeting thought", "keys": ["fleeting"], "ttl_seconds": 1})["memory_id"]
        km.wait_daemon_ready()
        deadline = time.monotonic() + 15
        log = km.data_dir / "logs" / "keymem.log"
        while "1 expired memories deleted" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "1 expired memories deleted" in log.read_text()
        with pytest.raises(Exception, match="does not exist"):
            c.call("read_memory", {"memory_id": mid})
    finally:
        c.close()


def test_failed_model_load_is_reported_and_the_daemon_exits(km: Keymem, tmp_path: Path) -> None:
    env = {**km.env, "LOCAL_EMBEDDING_MODEL_PATH": str(tmp_path / "missing"), "LOCAL_EMBEDDING_MODEL": "no-such-model"}
    c = client.DaemonClient(km.settings(), env=env)
    try:
        with pytest.raises(Exception) as exc:
            c.call("recall", {"query": "anything"})
        assert "missing" in str(exc.value) or "model" in str(exc.value).lower()
    finally:
        c.close()


def test_bad_configuration_stops_start_up_with_one_line(km: Keymem) -> None:
    proc = subprocess.run(SERVER_CMD, input="", capture_output=True, text=True, timeout=30,
                          env={**km.env, "KEYMEM_DECAY_STANDARD_DAYS": "-3"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["keymem: KEYMEM_DECAY_STANDARD_DAYS='-3' must be greater than zero"]


def test_socket_path_too_long_is_a_clear_error(tmp_path: Path, km: Keymem) -> None:
    deep = tmp_path / ("x" * 120)
    settings = km.settings(data_dir=deep)
    with pytest.raises(client.DaemonUnavailable, match="too long"):
        client.DaemonClient(settings, start=False).call("ping")
