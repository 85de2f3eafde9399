"""The prompt hook of a team member whose memory is on a remote ``keymem serve --http``.

Real parts: a ``keymem serve --http`` process and its daemon (MiniLM) on one data dir (the
server's machine); the real ``keymem hook`` command as a subprocess with its own data dir and
config file (the member's machine: no daemon, no store), fed the JSON Claude Code sends on
stdin. The member's config file names the server (``KEYMEM_HOOK_URL``) and a 0600 token file
(``KEYMEM_HOOK_TOKEN_FILE``), as docs/mcp.md says. One server serves the module; each test
stores its own memories.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from keymem.server.client import DaemonClient
from tests.e2e.http_support import free_port, http_server, make_token
from tests.e2e.support import SERVER_CMD, Keymem, keymem_env, never_answering, private_dir
from tests.server.test_http import post

pytestmark = pytest.mark.timeout(120)


def prompt(text: str, cwd: str = "/home/u/demo") -> str:
    """What Claude Code writes on a UserPromptSubmit hook's stdin."""
    return json.dumps({"prompt": text, "cwd": cwd, "session_id": "s-1", "hook_event_name": "UserPromptSubmit",
                       "transcript_path": "/dev/null", "permission_mode": "default"})


def run_hook(env: dict[str, str], payload: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    proc = subprocess.run([*SERVER_CMD, "hook", *args], input=payload, capture_output=True, text=True, env=env,
                          timeout=30)
    return proc, time.monotonic() - t0


def remember(km: Keymem, **args: Any) -> str:
    c = DaemonClient(km.settings(), start=False)
    try:
        return str(c.call("remember", dict(args))["memory_id"])
    finally:
        c.close()


class Member:
    """A team member's machine: a data dir holding only config.toml, a token file and the hook's log."""

    def __init__(self, root: Path, url: str, token: str, **config: Any) -> None:
        self.dir = root / "member"
        self.dir.mkdir(mode=0o700, parents=True)
        self.token_file = self.dir / "server-token"
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, f"{token}\n".encode())
        os.close(fd)
        self.token = token
        lines = [f'KEYMEM_HOOK_URL = "{url}"', f'KEYMEM_HOOK_TOKEN_FILE = "{self.token_file}"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in config.items()]
        (self.dir / "config.toml").write_text("\n".join(lines) + "\n")
        home = root / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("KEYMEM_", "EMBEDDING_", "LOCAL_EMBEDDING"))}
        self.env.update(KEYMEM_DATA_DIR=str(self.dir), HOME=str(home))

    @property
    def log(self) -> str:
        path = self.dir / "logs" / "hook.log"
        return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def server(minilm_dir: Path) -> Iterator[dict[str, Any]]:
    with private_dir("kmr") as d:
        km = Keymem(d / "data", keymem_env(d / "data", minilm_dir))
        tokens = {"root": make_token(km, "root"), "alice": make_token(km, "alice", "--namespace", "team-a"),
                  "reader": make_token(km, "reader", "--namespace", "team-a", "--read-only")}
        try:
            with http_server(km) as (url, _):
                km.wait_daemon_ready()
                yield {"km": km, "url": url, "tokens": tokens}
        finally:
            km.stop_all()


@pytest.fixture
def member_root() -> Iterator[Path]:
    with private_dir("kmm") as d:
        yield d


def context_of(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"hookSpecificOutput"} and out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return str(out["hookSpecificOutput"]["additionalContext"])


def assert_nothing_added(proc: subprocess.CompletedProcess[str], member: Member, *needles: str) -> str:
    """Exit 0, nothing on stdout, and the same one line on stderr and in the member's hook.log."""
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line.startswith("keymem hook: remote hook: ") and line.endswith("; no memories added to this prompt")
    (logged,) = member.log.splitlines()
    assert logged.endswith(line.removeprefix("keymem hook: "))
    for needle in needles:
        assert needle in line, line
    assert member.token not in proc.stderr and member.token not in member.log
    return line


# -- the same context as a local hook ----------------------------------------------------------------


def test_the_remote_hook_adds_what_a_local_hook_on_that_store_adds(server: dict[str, Any], member_root: Path) -> None:
    km = server["km"]
    mid = remember(km, content="The user's dog is named Biscuit", keys=["dog", "Biscuit", "pet"],
                   key_types=["concept", "name", "concept"])
    remember(km, content="Biscuit is afraid of thunderstorms", keys=["Biscuit", "thunderstorm", "fear"],
             key_types=["name", "concept", "concept"])
    question = prompt("what is my dog Biscuit afraid of?")
    local, _ = run_hook(km.env, question)  # the server's own machine: the socket to its daemon
    member = Member(member_root, server["url"], server["tokens"]["root"])
    remote, elapsed = run_hook(member.env, question)
    assert remote.stderr == "" and member.log == ""
    assert context_of(remote) == context_of(local)
    assert remote.stdout == local.stdout
    assert mid in remote.stdout and "thunderstorms" in remote.stdout
    assert elapsed < 9.0  # within the default KEYMEM_HOOK_TIMEOUT_MS
    assert sorted(p.name for p in member.dir.iterdir()) == ["config.toml", "server-token"]  # no store, no daemon here
    # an unrelated prompt: nothing, as locally
    assert run_hook(member.env, prompt("what is 17 times 23?"))[0].stdout == run_hook(km.env, prompt("what is 17 times 23?"))[0].stdout == ""


def test_the_tokens_namespaces_decide_what_the_hook_sees(server: dict[str, Any], member_root: Path) -> None:
    km = server["km"]
    team = remember(km, content="The invoicing service deploys on Thursdays", keys=["invoicing service", "deploy day"],
                    namespace="team-a")
    other = remember(km, content="The invoicing service deploys on Mondays", keys=["invoicing service", "deploy day"])
    question = prompt("when does the invoicing service deploy?")
    alice = Member(member_root / "a", server["url"], server["tokens"]["alice"])
    seen = context_of(run_hook(alice.env, question)[0])
    assert team in seen and "Thursdays" in seen and other not in seen and "Mondays" not in seen
    root = Member(member_root / "r", server["url"], server["tokens"]["root"])
    seen = context_of(run_hook(root.env, question)[0])
    assert other in seen and team not in seen  # no namespace named: the default one, as a local hook
    reader = Member(member_root / "ro", server["url"], server["tokens"]["reader"])
    assert team in context_of(run_hook(reader.env, question)[0])  # the hook changes nothing: read-only may use it

    # KEYMEM_HOOK_SCOPE_CWD: the project's namespace, if the token holds it
    scoped = {**alice.env, "KEYMEM_HOOK_SCOPE_CWD": "true"}
    seen = context_of(run_hook(scoped, prompt("when does the invoicing service deploy?", cwd="/home/u/team-a"))[0])
    assert team in seen and seen.endswith("(These come from the keymem namespace 'team-a', this project's namespace.)")
    proc, _ = run_hook(scoped, prompt("when does the invoicing service deploy?", cwd="/home/u/ops"))
    assert_nothing_added(proc, alice, "403", "token 'alice' may not use namespace 'ops' (its namespaces: team-a)")


# -- failures: nothing in the prompt, one line in the log, within the time limit -------------------


def test_a_wrong_token_adds_nothing_and_says_so_in_one_line(server: dict[str, Any], member_root: Path) -> None:
    member = Member(member_root, server["url"], "kmt_" + "x" * 43)
    remember(server["km"], content="The user's cat is named Pistachio", keys=["cat", "Pistachio"],
             key_types=["concept", "name"])
    proc, elapsed = run_hook(member.env, prompt("what is my cat Pistachio's name?"))
    assert_nothing_added(proc, member, "refused the token in KEYMEM_HOOK_TOKEN_FILE (401")
    assert elapsed < 9.0


def test_a_dead_server_adds_nothing_fast(member_root: Path) -> None:
    member = Member(member_root, f"http://127.0.0.1:{free_port()}/mcp", "kmt_" + "y" * 43)
    proc, elapsed = run_hook(member.env, prompt("what is my dog's name?"))
    assert_nothing_added(proc, member, "cannot reach http://127.0.0.1:", "/mcp/hook (")
    assert elapsed < 4.0  # interpreter start; a refused connection costs nothing


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP port that accepts connections and never answers: a hung or very slow server."""
    srv = socket.create_server(("127.0.0.1", 0))
    with never_answering(srv) as held:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/mcp", held


def test_a_slow_server_costs_the_prompt_at_most_the_time_limit(silent_server: tuple[str, list[socket.socket]],
                                                               member_root: Path) -> None:
    url, held = silent_server
    member = Member(member_root, url, "kmt_" + "z" * 43, KEYMEM_HOOK_TIMEOUT_MS=600)
    proc, elapsed = run_hook(member.env, prompt("what is my dog's name?"))
    assert_nothing_added(proc, member, "did not answer within", "ms (KEYMEM_HOOK_TIMEOUT_MS)")
    assert held, "the hook connected"
    assert 0.6 <= elapsed < 4.6  # the 0.6 s budget + interpreter start


def test_an_answer_that_is_not_keymems_is_never_printed(member_root: Path) -> None:
    """A URL that points at some other web server: its page must not land in the prompt."""

    class Page(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's naming)
            body = b"<html>Welcome to nginx! {\"text\": 1}</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        member = Member(member_root, f"http://127.0.0.1:{httpd.server_address[1]}/mcp", "kmt_" + "w" * 43)
        proc, _ = run_hook(member.env, prompt("what is my dog's name?"))
        assert_nothing_added(proc, member, "did not answer as a keymem server does")
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- the token file stays private; the URL keeps the token off clear-text networks -----------------


def test_a_token_file_others_can_read_is_refused_before_anything_is_sent(
        silent_server: tuple[str, list[socket.socket]], member_root: Path) -> None:
    url, held = silent_server
    member = Member(member_root, url, "kmt_" + "v" * 43)
    os.chmod(member.token_file, 0o644)
    proc, _ = run_hook(member.env, prompt("what is my dog's name?"))
    assert_nothing_added(proc, member, f"KEYMEM_HOOK_TOKEN_FILE {member.token_file} is readable by others (mode 0644)",
                         f"chmod 600 {member.token_file}")
    time.sleep(0.2)
    assert held == [], "nothing was sent"


@pytest.mark.parametrize(("url", "token_file", "says"), [
    ("http://memory.example.com:8765/mcp", True, "plain http to another host"),
    ("ftp://127.0.0.1/mcp", True, "is not an http(s) URL"),
    ("http://127.0.0.1:1/mcp", False, "KEYMEM_HOOK_TOKEN_FILE is not"),
])
def test_unusable_remote_settings_are_one_line_each(url: str, token_file: bool, says: str, member_root: Path) -> None:
    member = Member(member_root, url, "kmt_" + "u" * 43)
    if not token_file:
        text = (member.dir / "config.toml").read_text().splitlines()
        (member.dir / "config.toml").write_text(text[0] + "\n")
    proc, elapsed = run_hook(member.env, prompt("what is my dog's name?"))
    assert_nothing_added(proc, member, says)
    assert elapsed < 4.0


def test_the_remote_plugin_hook_never_asks_the_local_daemon(server: dict[str, Any]) -> None:
    """`keymem hook --remote` (the keymem-remote plugin) with no URL: nothing, even with a daemon that has the answer."""
    km = server["km"]
    remember(km, content="The user's parrot is named Mango", keys=["parrot", "Mango"], key_types=["concept", "name"])
    question = prompt("what is my parrot Mango's name?")
    assert "Mango" in context_of(run_hook(km.env, question)[0])
    proc, _ = run_hook(km.env, question, "--remote")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "`keymem hook --remote` needs KEYMEM_HOOK_URL" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_https_with_the_teams_own_certificate(server: dict[str, Any], member_root: Path) -> None:
    """A server with TLS; the member's machine trusts its certificate through SSL_CERT_FILE."""
    km = server["km"]
    cert, key = member_root / "cert.pem", member_root / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    remember(km, content="The user's horse is named Clover", keys=["horse", "Clover"], key_types=["concept", "name"])
    question = prompt("what is my horse Clover's name?")
    with http_server(km, "--tls-cert", str(cert), "--tls-key", str(key), stop_daemon=False) as (url, _):
        member = Member(member_root, url, server["tokens"]["root"])
        untrusted, _ = run_hook(member.env, question)
        assert_nothing_added(untrusted, member, "cannot reach https://127.0.0.1:", "CERTIFICATE_VERIFY_FAILED")
        trusted, _ = run_hook({**member.env, "SSL_CERT_FILE": str(cert)}, question)
        assert "Clover" in context_of(trusted)


# -- the route itself ---------------------------------------------------------------------------------


def test_the_hook_route_refuses_bad_requests_with_one_line(server: dict[str, Any]) -> None:
    hook = server["url"] + "/hook"
    token = server["tokens"]["alice"]
    status, text, headers = post(hook, b'{"prompt": "hello"}', {})
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, _, _ = post(hook, b'{"prompt": "hello"}', {"Authorization": "Bearer kmt_unknown"})
    assert status == 401
    auth = {"Authorization": f"Bearer {token}"}
    for body, code, says in [
        (b"not json", 400, 'the body must be a JSON object {"prompt": "...", "namespace"?: "..."}'),
        (b'{"prompt": 3}', 400, "the body must be a JSON object"),
        (b'{"prompt": "x", "top_k": 50}', 400, "unexpected field(s) top_k"),
        (b'{"prompt": "x", "namespace": "team-b"}', 403, "token 'alice' may not use namespace 'team-b'"),
        (b'{"prompt": "   "}', 400, "prompt must not be empty"),
        (json.dumps({"prompt": "x" * 20_001}).encode(), 400, "prompt is 20001 characters; the limit is 20000"),
    ]:
        status, text, _ = post(hook, body, auth)
        assert status == code, (body, status, text)
        message = json.loads(text)["error"]["message"]
        assert says in message and "\n" not in message, message
    status, text, _ = post(hook, json.dumps({"prompt": "x" * (5 << 20)}).encode(), auth)
    assert status == 413 and "KEYMEM_HOOK_MAX_BODY_BYTES" not in text and "KEYMEM_HTTP_MAX_BODY_BYTES" in text
    status, text, _ = post(hook, b'{"prompt": "when does the invoicing service deploy?"}', auth)
    assert status == 200 and set(json.loads(text)) == {"memory_ids", "text"}
