"""MCP over streamable HTTP through the SDK's real HTTP client: a real ``keymem serve --http`` process,
its real daemon, the MiniLM model, tokens made by the real CLI.

One server serves the module (the daemon's model load is the slow part); each test names its own
content, so the tests do not depend on each other's writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from keymem.server import client
from tests.e2e.http_support import call, http_server, make_token, mcp_session
from tests.e2e.support import SERVER_CMD, Keymem, keymem_env


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    """A raw POST (what a misbehaving or hostile client sends): status, body, headers (lower-case names).
    A server may answer before the body is all sent (413) and close: the answer is read anyway."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.request("POST", parts.path, body=body, headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        r = conn.getresponse()
        return r.status, r.read().decode(), {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def memories(km: Keymem) -> int:
    c = client.DaemonClient(km.settings(), start=False)
    try:
        return int(c.call("counts", timeout=30)["memories"])
    finally:
        c.close()


TOOLS_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "remember", "arguments": {"content": "raw request fact", "keys": ["raw"]}}}


@pytest.fixture(scope="module")
def remote(minilm_dir: Path) -> Iterator[dict[str, Any]]:
    d = Path(tempfile.mkdtemp(prefix="kmh", dir="/tmp"))
    os.chmod(d, 0o700)
    km = Keymem(d / "data", keymem_env(d / "data", minilm_dir))
    tokens = {
        "alice": make_token(km, "alice", "--namespace", "team-a"),
        "bob": make_token(km, "bob", "--namespace", "team-b", "--namespace", "shared"),
        "reader": make_token(km, "reader", "--read-only"),
        "root": make_token(km, "root"),
    }
    try:
        with http_server(km) as (url, proc):
            km.wait_daemon_ready()
            yield {"km": km, "url": url, "tokens": tokens, "proc": proc}
    finally:
        km.stop_all()
        shutil.rmtree(d, ignore_errors=True)


def test_remember_on_one_connection_recall_on_another(remote: dict[str, Any]) -> None:
    url, t = remote["url"], remote["tokens"]
    err, text, data = call(url, t["alice"], "remember", {
        "content": "The staging database moved to the Frankfurt region", "keys": ["staging database", "Frankfurt"]})
    assert not err, text
    mid = data["memory_id"]
    err, text, data = call(url, t["alice"], "recall", {"query": "staging database"})
    assert not err and mid in text and "Frankfurt region" in text
    err, text, _ = call(url, t["alice"], "read_memory", {"memory_id": mid})
    assert not err and "Frankfurt" in text


def test_tokens_of_two_namespaces_are_isolated(remote: dict[str, Any]) -> None:
    url, t, km = remote["url"], remote["tokens"], remote["km"]
    _, _, a = call(url, t["alice"], "remember", {"content": "Team A ships the payments service on Thursdays",
                                                 "keys": ["payments service", "release day"]})
    _, _, b = call(url, t["bob"], "remember", {"content": "Team B ships the payments service on Mondays",
                                               "keys": ["payments service", "release day"]})
    alice_id, bob_id = a["memory_id"], b["memory_id"]
    _, text, _ = call(url, t["alice"], "recall", {"query": "payments service release day"})
    assert alice_id in text and bob_id not in text and "Mondays" not in text
    _, text, _ = call(url, t["bob"], "recall", {"query": "payments service release day"})
    assert bob_id in text and alice_id not in text
    # the root token (every namespace) sees each in its namespace
    _, text, _ = call(url, t["root"], "recall", {"query": "payments service", "namespace": "team-a"})
    assert alice_id in text and bob_id not in text
    # bob cannot name team-a, nor reach alice's memory by its id
    before = memories(km)
    err, text, _ = call(url, t["bob"], "recall", {"query": "payments", "namespace": "team-a"})
    assert err and text == "recall: token 'bob' may not use namespace 'team-a' (its namespaces: team-b, shared)"
    err, text, _ = call(url, t["bob"], "read_memory", {"memory_id": alice_id})
    assert err and f"memory {alice_id} does not exist in namespaces team-b, shared" in text
    err, text, _ = call(url, t["bob"], "forget", {"memory_id": alice_id})
    assert err and "does not exist" in text
    err, text, _ = call(url, t["bob"], "correct", {"memory_id": alice_id, "content": "hijacked"})
    assert err and "does not exist" in text
    err, text, _ = call(url, t["bob"], "remember_batch", {"items": [
        {"content": "ok in b", "keys": ["x"]}, {"content": "into a", "keys": ["x"], "namespace": "team-a"}]})
    assert err and "may not use namespace 'team-a'" in text
    assert memories(km) == before
    err, text, _ = call(url, t["alice"], "read_memory", {"memory_id": alice_id})
    assert not err and "Thursdays" in text
    # bob's second namespace, named explicitly, works and its ids are found without naming it
    _, _, s = call(url, t["bob"], "remember", {"content": "Shared on-call rota lives in the wiki",
                                               "keys": ["on-call rota"], "namespace": "shared"})
    err, text, _ = call(url, t["bob"], "read_memory", {"memory_id": s["memory_id"]})
    assert not err and "wiki" in text


def test_a_read_only_token_reads_and_cannot_write(remote: dict[str, Any]) -> None:
    url, t, km = remote["url"], remote["tokens"], remote["km"]
    _, _, made = call(url, t["root"], "remember", {"content": "The office plant is a fern", "keys": ["office plant"]})
    before = memories(km)
    err, text, _ = call(url, t["reader"], "recall", {"query": "office plant"})
    assert not err and made["memory_id"] in text
    for tool, args in (("remember", {"content": "nope", "keys": ["nope"]}),
                       ("forget", {"memory_id": made["memory_id"]}),
                       ("confirm_memory", {"memory_id": made["memory_id"], "evidence": "saw it"}),
                       ("remember_batch", {"items": [{"content": "nope", "keys": ["nope"]}]})):
        err, text, _ = call(url, t["reader"], tool, args)
        assert err and text == f"{tool}: token 'reader' is read-only; {tool} changes the store"
    assert memories(km) == before

    async def listed(s: Any) -> Any:
        return await s.list_tools()

    names = {t.name for t in anyio.run(mcp_session, url, t["reader"], listed).tools}
    assert names == {"recall", "browse_keys", "read_key", "read_memory"}
    assert len(anyio.run(mcp_session, url, t["root"], listed).tools) == 10


def test_requests_without_a_valid_token_get_401_and_write_nothing(remote: dict[str, Any]) -> None:
    url, km = remote["url"], remote["km"]
    before = memories(km)
    body = json.dumps(TOOLS_CALL).encode()
    for headers in ({}, {"Authorization": "Bearer kmt_not-a-real-token"}, {"Authorization": "Basic YTpi"},
                    {"Authorization": "Bearer " + remote["tokens"]["alice"][:-2]}):
        status, text, hdrs = post(url, body, headers)
        assert status == 401, (headers, status, text)
        assert hdrs.get("www-authenticate", "").startswith("Bearer")
    with pytest.raises(Exception):  # noqa: B017  (the SDK client raises on a 401; which class is its business)
        call(url, "kmt_wrong", "recall", {"query": "anything"})
    assert memories(km) == before


def test_a_revoked_token_is_refused_from_the_next_request(remote: dict[str, Any]) -> None:
    url, km = remote["url"], remote["km"]
    token = make_token(km, "temp-laptop")
    assert not call(url, token, "recall", {"query": "anything"})[0]
    subprocess.run([*SERVER_CMD, "token", "revoke", "temp-laptop"], env=km.env, check=True, capture_output=True)
    status, _, _ = post(url, json.dumps(TOOLS_CALL).encode(), {"Authorization": f"Bearer {token}"})
    assert status == 401


def test_an_oversized_body_gets_413_and_writes_nothing(remote: dict[str, Any]) -> None:
    url, km, t = remote["url"], remote["km"], remote["tokens"]
    before = memories(km)
    big = dict(TOOLS_CALL, params={"name": "remember", "arguments": {"content": "x" * (5 * 1024 * 1024), "keys": ["big"]}})
    status, text, _ = post(url, json.dumps(big).encode(), {"Authorization": f"Bearer {t['root']}"})
    assert status == 413, text
    assert memories(km) == before


def test_a_foreign_origin_or_host_is_refused(remote: dict[str, Any]) -> None:
    url, km, t = remote["url"], remote["km"], remote["tokens"]
    before = memories(km)
    auth = {"Authorization": f"Bearer {t['root']}"}
    status, text, _ = post(url, json.dumps(TOOLS_CALL).encode(), {**auth, "Origin": "http://evil.example"})
    assert status == 403 and "origin http://evil.example is not allowed" in text
    port = url.split(":")[2].split("/")[0]
    status, text, _ = post(url, json.dumps(TOOLS_CALL).encode(), {**auth, "Host": f"evil.example:{port}"})
    assert status == 421, text
    assert memories(km) == before
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    status, text, _ = post(url, json.dumps(init).encode(), {**auth, "Origin": f"http://localhost:{port}"})
    assert status == 200 and '"serverInfo"' in text


def test_stdio_and_http_clients_share_the_daemon(remote: dict[str, Any]) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    url, km, t = remote["url"], remote["km"], remote["tokens"]
    _, _, made = call(url, t["root"], "remember", {"content": "The coffee machine on floor 3 is broken",
                                                   "keys": ["coffee machine"]})

    async def stdio_recall() -> str:
        params = StdioServerParameters(command=SERVER_CMD[0], args=SERVER_CMD[1:], env=km.env)
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("recall", {"query": "coffee machine"})
            kettle = await s.call_tool("remember", {"content": "The kettle on floor 3 works", "keys": ["kettle"]})
            forget = {"memory_id": kettle.structured_content["memory_id"]}
            for _ in range(2):  # the stdio server honours a request id as well: the repeat is answered, not run
                res2 = await s.call_tool("forget", forget, meta={"keymem/request_id": "stdio-retry-01"})
                assert not res2.is_error, res2.content[0].text
            return str(res.content[0].text)

    assert made["memory_id"] in anyio.run(stdio_recall)
    info = client.status(km.settings())
    assert info is not None and info["pid"] == km.daemon_pid()  # one daemon for both


def test_tls_serves_https_and_a_clear_text_public_bind_is_refused(km: Keymem, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    refused = subprocess.run([*SERVER_CMD, "serve", "--http", "0.0.0.0:8765"], env=km.env, capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2
    assert "0.0.0.0 is not a loopback address: serve TLS (--tls-cert FILE --tls-key FILE)" in refused.stderr
    token = make_token(km, "tls")
    with http_server(km, "--tls-cert", str(cert), "--tls-key", str(key)) as (url, _):
        assert url.startswith("https://")
        import ssl

        ctx = ssl.create_default_context(cafile=str(cert))
        err, text, _ = call(url, token, "recall", {"query": "anything"}, verify=ctx)
        assert not err, text


def test_token_cli_keeps_only_hashes(km: Keymem) -> None:
    out = subprocess.run([*SERVER_CMD, "token", "create", "ci", "--namespace", "builds", "--read-only"], env=km.env,
                         capture_output=True, text=True, check=True).stdout
    secret = out.strip().splitlines()[-1]
    assert secret.startswith("kmt_") and len(secret) > 40
    path = km.data_dir / "tokens.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert secret not in path.read_text()
    listed = subprocess.run([*SERVER_CMD, "token", "list", "--json"], env=km.env, capture_output=True, text=True,
                            check=True).stdout
    row = json.loads(listed)
    assert row["name"] == "ci" and row["namespaces"] == ["builds"] and row["read_only"] is True
    assert secret not in listed and "sha256" not in row
    again = subprocess.run([*SERVER_CMD, "token", "create", "ci"], env=km.env, capture_output=True, text=True)
    assert again.returncode == 1 and "a token named 'ci' exists" in again.stderr
    bad = subprocess.run([*SERVER_CMD, "token", "create", "ci x"], env=km.env, capture_output=True, text=True)
    assert bad.returncode == 1 and "token name 'ci x' is invalid" in bad.stderr
    gone = subprocess.run([*SERVER_CMD, "token", "revoke", "nobody"], env=km.env, capture_output=True, text=True)
    assert gone.returncode == 1 and "no token named 'nobody' (tokens: ci)" in gone.stderr


def test_listen_addresses_and_options() -> None:
    from keymem.server.http import HttpOptions, ListenError, check_options, parse_listen

    assert parse_listen("8765") == ("127.0.0.1", 8765)
    assert parse_listen("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_listen("[::1]:8765") == ("::1", 8765)
    for bad, says in (("99999", "port must be a number"), ("host:", "port must be a number"), (":80", "host is empty"),
                      ("[::1]8765", "IPv6")):
        with pytest.raises(ListenError, match=says):
            parse_listen(bad)
    check_options(HttpOptions(host="::1"))
    check_options(HttpOptions(host="10.0.0.5", behind_tls_proxy=True))
    with pytest.raises(ListenError, match="not a loopback address"):
        check_options(HttpOptions(host="10.0.0.5"))
    with pytest.raises(ListenError, match="go together"):
        check_options(HttpOptions(tls_cert=Path("/nonexistent.pem")))
    with pytest.raises(ListenError, match="scheme://host"):
        check_options(HttpOptions(allow_origins=("example.com",)))


def _drive(app: Any, n: int, gate: anyio.Event | None = None) -> list[tuple[int, dict[str, str]]]:
    """``n`` concurrent GETs through an ASGI app: each one's status and headers."""
    answers: list[tuple[int, dict[str, str]]] = []

    async def one() -> None:
        status, headers = 0, {}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = {k.decode(): v.decode() for k, v in message["headers"]}

        await app({"type": "http", "method": "GET", "path": "/mcp", "headers": []}, receive, send)
        answers.append((status, headers))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
            await anyio.sleep(0.1)
            if gate is not None:
                gate.set()

    anyio.run(main)
    return answers


def test_admission_caps_requests_in_flight_and_times_them_out() -> None:
    from keymem.server.http import Admission

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await anyio.sleep(5)

    async def ok(scope: Any, receive: Any, send: Any) -> None:
        await anyio.sleep(0.3)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    capped = Admission(ok, limit=2, timeout=10)
    statuses = sorted(s for s, _ in _drive(capped, 3))
    assert statuses == [200, 200, 503]
    assert next(h for s, h in _drive(Admission(ok, limit=1, timeout=10), 2) if s == 503)["retry-after"] == "1"
    assert capped.in_flight == 0
    t0 = time.monotonic()
    assert [s for s, _ in _drive(Admission(slow, limit=4, timeout=0.5), 1)] == [504]
    assert time.monotonic() - t0 < 3


def test_doctor_reports_the_token_file(km: Keymem) -> None:
    make_token(km, "laptop")
    make_token(km, "ci", "--read-only")
    out = subprocess.run([*SERVER_CMD, "doctor"], env=km.env, capture_output=True, text=True, timeout=120).stdout
    assert f"2 token(s) in {km.data_dir / 'tokens.json'}: ci, laptop" in out
    os.chmod(km.data_dir / "tokens.json", 0o644)
    ran = subprocess.run([*SERVER_CMD, "doctor"], env=km.env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "tokens.json is readable by other users" in ran.stderr


def test_a_damaged_token_file_stops_the_server_with_one_line(km: Keymem) -> None:
    km.data_dir.mkdir(parents=True, exist_ok=True)
    (km.data_dir / "tokens.json").write_text("{not json")
    ran = subprocess.run([*SERVER_CMD, "serve", "--http", "127.0.0.1:1"], env=km.env, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines()[-1].startswith(f"keymem: token file {km.data_dir / 'tokens.json'} is unreadable")
    assert "Traceback" not in ran.stderr


def test_health_answers_whatever_the_host_and_says_nothing_else(km: Keymem) -> None:
    import urllib.request

    with http_server(km, "--allow-host", "memory.example.com") as (url, _):
        base = url.removesuffix("/mcp")
        with urllib.request.urlopen(f"{base}/health", timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok\n"
        status, text, _ = post(url, b"{}", {"Authorization": "Bearer kmt_x"})
        assert status == 421 and "host 127.0.0.1" in text


def test_a_write_repeated_with_its_request_id_is_applied_once(remote: dict[str, Any]) -> None:
    """What a client does when it lost an answer (the HTTP server restarted, the connection dropped)."""
    url, t, km = remote["url"], remote["tokens"], remote["km"]

    async def twice(s: Any, tool: str, args: dict[str, Any], rid: Any) -> list[Any]:
        return [await s.call_tool(tool, args, meta={"keymem/request_id": rid}) for _ in range(2)]

    def run(token: str, tool: str, args: dict[str, Any], rid: Any) -> list[Any]:
        return anyio.run(mcp_session, url, token, lambda s: twice(s, tool, args, rid))  # type: ignore[no-any-return]

    before = memories(km)
    first, again = run(t["root"], "remember", {"content": "The lab door code changed in May", "keys": ["lab door"]},
                       "retry-remember-0001")
    assert not first.is_error and first.structured_content == again.structured_content
    mid = first.structured_content["memory_id"]
    assert memories(km) == before + 1
    gone, gone_again = run(t["root"], "forget", {"memory_id": mid}, "retry-forget-0001")
    assert not gone.is_error and not gone_again.is_error, gone_again.content[0].text  # not "does not exist"
    assert memories(km) == before
    # the same id for another call is refused; another token's same id is its own
    other = call(url, t["root"], "remember", {"content": "something else", "keys": ["x"]})
    assert not other[0]
    reused = run(t["root"], "remember", {"content": "a different fact", "keys": ["y"]}, "retry-remember-0001")[0]
    assert reused.is_error and "was already used for another call" in reused.content[0].text
    mine = run(t["alice"], "remember", {"content": "The lab door code changed in May", "keys": ["lab door"]},
               "retry-remember-0001")[0]
    assert not mine.is_error and mine.structured_content["memory_id"] != mid
    bad = run(t["root"], "remember", {"content": "z", "keys": ["z"]}, "short")[0]
    assert bad.is_error and bad.content[0].text.startswith("remember: request_id 'short' is invalid")


def test_over_http_the_client_passes_what_it_has_seen(remote: dict[str, Any]) -> None:
    """Stateless HTTP keeps no record of a session: nothing is held back unless the client passes ``seen``."""
    url, t = remote["url"], remote["tokens"]
    ferries = ["The morning ferry to Arran leaves Ardrossan at seven", "The ferry to Mull is booked for Friday",
               "The user gets seasick on the Islay ferry", "The Skye ferry was cancelled by the storm on Monday",
               "The user keeps ferry tickets in the blue folder", "The ferry cafe serves porridge until ten",
               "The user's car fits on the small Cumbrae ferry"]
    err, text, _ = call(url, t["root"], "remember_batch", {"items": [{"content": f, "keys": ["ferry trips"]}
                                                                     for f in ferries]})
    assert not err, text

    async def session(s: Any) -> list[Any]:  # the same question twice in one MCP session
        return [await s.call_tool("recall", {"query": "ferry trips", "budget": 120}) for _ in range(2)]

    first, again = anyio.run(mcp_session, url, t["root"], session)
    got = [m["memory_id"] for m in first.structured_content["memories"]]
    assert got and [m["memory_id"] for m in again.structured_content["memories"]] == got  # one session: no record
    err, text, data = call(url, t["root"], "recall", {"query": "ferry trips", "budget": 120, "seen": got})
    assert not err and data["memories"] and not {m["memory_id"] for m in data["memories"]} & set(got)
    assert data["omitted"] == len(got) and "already have omitted (include_seen=true repeats)" in text
    err, _, page = call(url, t["root"], "read_key", {"key_id": "ferry trips", "seen": got})
    assert not err and page["omitted"] == len(got) and len(page["memories"]) == len(ferries) - len(got)
    err, _, data = call(url, t["root"], "recall", {"query": "ferry trips", "budget": 120, "seen": got,
                                                   "include_seen": True})
    assert not err and [m["memory_id"] for m in data["memories"]] == got and data["omitted"] == 0
    err, text, _ = call(url, t["root"], "read_key", {"key_id": "ferry trips", "seen": ["ferry"]})
    assert err and text == "read_key: seen 'ferry' is not a keymem id (expected m_ followed by hex)"


def test_with_the_daemon_off_the_http_server_opens_the_store_itself(km: Keymem) -> None:
    token = make_token(km, "solo")
    env = {**km.env, "KEYMEM_DAEMON": "off"}
    with http_server(km, env=env) as (url, _):
        err, text, made = call(url, token, "remember", {"content": "Solo mode keeps the store in one process",
                                                         "keys": ["solo mode"]})
        assert not err, text
        assert made["memory_id"] in call(url, token, "recall", {"query": "solo mode"})[1]
        assert km.daemon_pid() is None and not (km.data_dir / "daemon.sock").exists()


def test_a_port_in_use_is_one_line_and_exit_1(km: Keymem) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        ran = subprocess.run([*SERVER_CMD, "serve", "--http", f"127.0.0.1:{port}"], env=km.env, capture_output=True,
                             text=True, timeout=120)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == f"keymem: could not serve on 127.0.0.1:{port}"


def test_the_load_benchmark_owes_heads_and_previous_versions_and_plans_alike() -> None:
    from tests.bench_modules import load

    bench = load("http_load")
    c = bench.Client("http-0", "http", None)
    c.acked = ["m_a", "m_b", "m_c", "m_x"]  # a, corrected to b, corrected to c; x untouched
    c.corrected = {"m_a": "m_b", "m_b": "m_c"}
    assert c.must_exist() == ["m_b", "m_c", "m_x"]  # a is two corrections old: deleted by design
    words, keys, mems = [f"w{i}" for i in range(20)], ["k_1", "k_2"], ["m_1"]
    one = bench.plan(7, 50, words, keys, mems, "http-0")
    assert one == bench.plan(7, 50, words, keys, mems, "http-0")  # deterministic
    other = bench.plan(7, 50, words, keys, mems, "stdio-0")
    assert [t for t, _ in one] == [t for t, _ in other]  # the same calls for every client ...
    assert [a.get("query") for _, a in one] == [a.get("query") for _, a in other]
    writes = [a["content"] for t, a in other if t == "remember"]
    assert writes and all(w.startswith("stdio-0 ") for w in writes)  # ... with its own content
    base = [0.1 + 0.001 * (i % 97) for i in range(600)]  # seconds
    low, high = bench.p95_difference_interval([x + 0.010 for x in base], base, draws=300)
    assert low < 10.0 < high and high - low < 10.0  # a 10 ms shift is found, within a bounded interval
    assert bench.p95_difference_interval(base, base, draws=300) == bench.p95_difference_interval(base, base, draws=300)
