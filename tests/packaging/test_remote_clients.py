"""Real MCP clients against a real ``keymem serve --http``: the MCP Inspector CLI, Claude Code and Codex.

Each test starts ``keymem serve --http 127.0.0.1:<free port>`` (tests/e2e/http_support.py) on a
private data dir with the MiniLM test model; the server starts the shared daemon, and both are
stopped at teardown. Clients authenticate with a bearer token from ``keymem token create``.

- MCP Inspector CLI (``npx @modelcontextprotocol/inspector --cli``): lists the ten tools, writes a
  memory with ``remember`` and reads it back with ``recall``; refuses without a token, with a wrong
  one, and a read-only token's write. The version is pinned: on Node 20 an unpinned ``npx`` resolves
  to 0.15.0 (the last release without a Node 22 ``engines`` field), which has no ``--header``. The
  package comes from the npm registry once, into the user's npm cache (the tests' HOME is private);
  the tests skip when ``npx`` is missing or the package cannot be fetched.
- Claude Code: ``claude mcp add --transport http ... --header "Authorization: Bearer ..."``, then
  ``claude mcp list`` / ``claude mcp get`` report "✔ Connected"; a wrong token, no token and a
  revoked token "✘ Failed to connect". (Claude Code calls no tool without a model.)
- Codex: ``codex mcp add NAME --url URL --bearer-token-env-var VAR`` and what ``codex mcp list`` /
  ``codex mcp get`` show; then Codex's own MCP client, through ``codex app-server`` (JSON-RPC on
  stdio, no model or API key needed): ``mcpServerStatus/list`` connects and lists the ten tools,
  and ``mcpServer/tool/call`` calls ``remember`` and ``recall``. The thread's model provider points
  at a closed loopback port, so Codex reaches nothing off this machine.
The Claude Code and Codex tests skip when that CLI is not installed.
"""

from __future__ import annotations

import json
import os
import pwd
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.http_support import http_server, make_token
from tests.e2e.support import SERVER_CMD, Keymem
from tests.packaging import test_plugin
from tests.packaging.test_plugin import cli, project_dir

cli_home = test_plugin.cli_home  # the plugin tests' fixture: a user with a private HOME and PATH

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
TOOLS = {"recall", "browse_keys", "read_key", "read_memory", "confirm_memory", "remember", "correct", "dismiss",
         "forget", "remember_batch"}
FACT = "The user's cat is called Miso and sleeps on the piano"
KEYS = ["user pets", "cat", "Miso"]


@dataclass
class Remote:
    url: str
    token: str
    km: Keymem


@pytest.fixture
def remote(km: Keymem) -> Iterator[Remote]:
    """A running ``keymem serve --http`` and a token ``alice`` for every namespace."""
    token = make_token(km, "alice")
    with http_server(km) as (url, _proc):
        yield Remote(url, token, km)


# -- MCP Inspector CLI -----------------------------------------------------------------------------


def npm_settings(home: Path) -> dict[str, str]:
    """npm's settings for npx: the real user's cache and .npmrc (the tests' HOME is a fresh directory),
    quiet, and offline first once the package is cached."""
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    settings = {
        "npm_config_cache": next((v for k, v in os.environ.items() if k.lower() == "npm_config_cache"),
                                 str(real_home / ".npm")),
        "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
        "npm_config_loglevel": "error", "npm_config_prefer_offline": "true",
    }
    if (real_home / ".npmrc").is_file() and real_home != home:
        settings["npm_config_userconfig"] = str(real_home / ".npmrc")
    return settings


@pytest.fixture(scope="session")
def inspector_npm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The Inspector fetched into npm's cache once a session; npm's settings for running it. Skips when
    npx is missing or the package cannot be fetched."""
    npx = shutil.which("npx")
    if not npx:
        pytest.skip("npx is not installed (Node.js and npm bring it)")
    home = tmp_path_factory.mktemp("npx-home")
    settings = npm_settings(home)
    env = {**os.environ, **settings, "HOME": str(home)}
    try:
        p = subprocess.run([npx, "-y", INSPECTOR, "--cli", "--version"], capture_output=True, text=True, env=env,
                           cwd=home, stdin=subprocess.DEVNULL, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx could not fetch {INSPECTOR} in 240 s")
    if p.returncode != 0:
        said = [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]
        why = next((line for line in said if " code " in line or "code:" in line), said[-1] if said else "")
        pytest.skip(f"npx could not fetch or run {INSPECTOR} (exit {p.returncode}): {why.strip()[:300]}")
    return settings


@dataclass
class Answer:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        """The Inspector's failure: one JSON object, the last line of stderr."""
        return json.loads(self.err.strip().splitlines()[-1])["error"]  # type: ignore[no-any-return]


def inspector(remote: Remote, npm: dict[str, str], *args: str, token: str | None = None) -> Answer:
    """``npx @modelcontextprotocol/inspector --cli URL --transport http [--header ...] ARGS`` (no TTY)."""
    cmd = ["npx", "-y", INSPECTOR, "--cli", remote.url, "--transport", "http"]
    if token is not None:
        cmd += ["--header", f"Authorization: Bearer {token}"]
    env = {**remote.km.env, **npm}
    p = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, cwd=env["HOME"],
                       stdin=subprocess.DEVNULL, timeout=120)
    return Answer(p.returncode, p.stdout, p.stderr)


def test_inspector_lists_writes_and_recalls(remote: Remote, inspector_npm: dict[str, str]) -> None:
    listed = inspector(remote, inspector_npm, "--method", "tools/list", token=remote.token)
    assert listed.code == 0, listed.err
    assert {t["name"] for t in listed.json()["tools"]} == TOOLS

    stored = inspector(remote, inspector_npm, "--method", "tools/call", "--tool-name", "remember",
                       "--tool-arg", f"content={FACT}", f"keys={json.dumps(KEYS)}", token=remote.token)
    assert stored.code == 0, stored.out + stored.err
    result = stored.json()
    assert result["isError"] is False
    memory_id = result["structuredContent"]["memory_id"]
    assert memory_id.startswith("m_")
    assert [k["key"] for k in result["structuredContent"]["keys"]] == KEYS

    found = inspector(remote, inspector_npm, "--method", "tools/call", "--tool-name", "recall",
                      "--tool-arg", "query=user pets", token=remote.token)
    assert found.code == 0, found.out + found.err
    recalled = found.json()["structuredContent"]["memories"]
    assert [(m["memory_id"], m["content"]) for m in recalled] == [(memory_id, FACT)]
    assert f"[{memory_id}] {FACT}" in found.json()["content"][0]["text"]


def test_inspector_is_refused_without_a_valid_token(remote: Remote, inspector_npm: dict[str, str]) -> None:
    # No header: the server answers 401 with WWW-Authenticate: Bearer; the Inspector would start OAuth,
    # which needs a TTY, so it stops with "auth_required" (exit 3).
    none = inspector(remote, inspector_npm, "--method", "tools/list")
    assert none.code != 0 and none.out == ""
    assert none.error()["code"] == "auth_required", none.err

    # A wrong token, with the Inspector's mode for scripts (no OAuth): the server's 401 answer shows.
    wrong = inspector(remote, inspector_npm, "--stored-auth-only", "--method", "tools/list", token="kmt_not-a-token")
    assert wrong.code != 0 and wrong.out == ""
    assert wrong.error()["code"] == "auth_required" and "invalid_token" in wrong.error()["message"], wrong.err

    reader = make_token(remote.km, "reader", "--read-only")
    refused = inspector(remote, inspector_npm, "--method", "tools/call", "--tool-name", "remember",
                        "--tool-arg", f"content={FACT}", f"keys={json.dumps(KEYS)}", token=reader)
    # a read-only token is not shown the write tools, so the Inspector refuses before calling
    assert refused.code != 0, refused.out
    assert refused.error()["code"] == "tool_not_found", refused.err
    listed = inspector(remote, inspector_npm, "--method", "tools/list", token=reader)
    assert sorted(t["name"] for t in listed.json()["tools"]) == ["browse_keys", "read_key", "read_memory", "recall"]
    empty = inspector(remote, inspector_npm, "--method", "tools/call", "--tool-name", "recall",
                      "--tool-arg", "query=user pets", token=reader)
    assert empty.code == 0, empty.out + empty.err
    assert empty.json()["structuredContent"]["memories"] == [], "the refused write stored nothing"


# -- Claude Code ------------------------------------------------------------------------------------


def mcp_list(env: dict[str, str], work: Path) -> dict[str, str]:
    """``claude mcp list``: server name -> the rest of its line (``URL (HTTP) - ✔ Connected``)."""
    out = cli("claude", "mcp", "list", env=env, cwd=work, timeout=120)
    return dict(line.split(": ", 1) for line in out.splitlines() if line.startswith("keymem-"))


def test_claude_code_connects_with_a_bearer_token(cli_home: dict[str, str], km: Keymem,
                                                  tmp_path: Path) -> None:
    work = project_dir("claude", "@anthropic-ai/claude-code", cli_home, tmp_path)
    token = make_token(km, "alice")
    with http_server(km) as (url, _proc):
        out = cli("claude", "mcp", "add", "--transport", "http", "keymem-remote", url,
                  "--header", f"Authorization: Bearer {token}", env=cli_home, cwd=work)
        assert f"Added HTTP MCP server keymem-remote with URL: {url}" in out
        assert token not in out, "claude mcp add shows the header redacted"
        cli("claude", "mcp", "add", "--transport", "http", "keymem-wrong", url,
            "--header", "Authorization: Bearer kmt_not-a-token", env=cli_home, cwd=work)
        cli("claude", "mcp", "add", "--transport", "http", "keymem-none", url, env=cli_home, cwd=work)

        status = mcp_list(cli_home, work)
        assert status["keymem-remote"] == f"{url} (HTTP) - ✔ Connected", status
        assert status["keymem-wrong"] == f"{url} (HTTP) - ✘ Failed to connect", status
        assert status["keymem-none"] == f"{url} (HTTP) - ✘ Failed to connect", status
        got = cli("claude", "mcp", "get", "keymem-remote", env=cli_home, cwd=work)
        assert "Status: ✔ Connected" in got and "Type: http" in got, got

        # Revoked: the running server refuses the token from the next request on.
        subprocess.run([*SERVER_CMD, "token", "revoke", "alice"], env=km.env, check=True, capture_output=True,
                       timeout=60)
        assert mcp_list(cli_home, work)["keymem-remote"] == f"{url} (HTTP) - ✘ Failed to connect"


# -- Codex ------------------------------------------------------------------------------------------

# Codex's model provider for the app-server thread: a closed loopback port, so nothing leaves the machine.
CODEX_OFFLINE = ["-c", "model_provider=loopback", "-c",
                 'model_providers.loopback={name="loopback",base_url="http://127.0.0.1:9/v1",wire_api="responses"}']


def codex(*args: str, env: dict[str, str], cwd: Path) -> str:
    """A ``codex`` command's stdout (Codex warns on stderr about helper binaries under /tmp)."""
    p = subprocess.run(["codex", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert p.returncode == 0, f"codex {' '.join(args)} -> {p.returncode}\n{p.stdout}{p.stderr}"
    return p.stdout


def test_codex_configures_a_streamable_http_server_with_a_bearer_token(
        cli_home: dict[str, str], tmp_path: Path) -> None:
    work = project_dir("codex", "@openai/codex", cli_home, tmp_path)
    url = "http://127.0.0.1:8765/mcp"
    codex("mcp", "add", "keymem-remote", "--url", url, "--bearer-token-env-var", "KEYMEM_TOKEN",
          env=cli_home, cwd=work)
    assert 'bearer_token_env_var = "KEYMEM_TOKEN"' in (Path(cli_home["HOME"]) / ".codex" / "config.toml").read_text()

    (entry,) = json.loads(codex("mcp", "list", "--json", env=cli_home, cwd=work))
    assert entry["name"] == "keymem-remote" and entry["enabled"] is True
    assert entry["auth_status"] == "bearer_token"
    assert entry["transport"]["type"] == "streamable_http"
    assert (entry["transport"]["url"], entry["transport"]["bearer_token_env_var"]) == (url, "KEYMEM_TOKEN")
    table = codex("mcp", "list", env=cli_home, cwd=work).splitlines()
    assert table[0].split() == ["Name", "Url", "Bearer", "Token", "Env", "Var", "Status", "Auth"]
    assert table[1].split() == ["keymem-remote", url, "KEYMEM_TOKEN", "enabled", "Bearer", "token"]
    got = codex("mcp", "get", "keymem-remote", env=cli_home, cwd=work)
    assert "transport: streamable_http" in got and f"url: {url}" in got and "bearer_token_env_var: KEYMEM_TOKEN" in got


class AppServer:
    """``codex app-server``: JSON-RPC lines on stdio, read by a thread (requests wait for their answer)."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(["codex", *CODEX_OFFLINE, "app-server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.notes: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        """The whole answer (``result`` or ``error``) to one request."""
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"codex app-server exited ({self.proc.poll()}) before answering {method}"
            msg = json.loads(line)
            if msg.get("id") == self.next_id and "method" not in msg:
                return msg  # type: ignore[no-any-return]
            self.notes.append(msg)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)


@pytest.fixture
def app_server_env(cli_home: dict[str, str], tmp_path: Path) -> tuple[dict[str, str], Path]:
    return cli_home, project_dir("codex", "@openai/codex", cli_home, tmp_path)


def status_list(server: AppServer) -> dict[str, Any]:
    answer = server.request("mcpServerStatus/list", {})
    if answer.get("error", {}).get("code") in (-32600, -32601):
        pytest.skip(f"this codex app-server has no mcpServerStatus/list: {answer['error']}")
    assert "result" in answer, answer
    (status,) = answer["result"]["data"]
    return status  # type: ignore[no-any-return]


def test_codex_connects_lists_the_tools_and_calls_them(app_server_env: tuple[dict[str, str], Path],
                                                       km: Keymem) -> None:
    env, work = app_server_env
    token = make_token(km, "alice")
    with http_server(km) as (url, _proc):
        codex("mcp", "add", "keymem-remote", "--url", url, "--bearer-token-env-var", "KEYMEM_TOKEN", env=env, cwd=work)
        server = AppServer({**env, "KEYMEM_TOKEN": token}, work)
        try:
            server.request("initialize", {"clientInfo": {"name": "keymem-tests", "version": "1"}})
            server.send({"method": "initialized"})
            status = status_list(server)
            assert status["name"] == "keymem-remote" and status["authStatus"] == "bearerToken"
            assert status["toolsError"] is None, status["toolsError"]
            assert status["serverInfo"]["name"] == "keymem"
            assert set(status["tools"]) == TOOLS

            thread = server.request("thread/start", {})["result"]["thread"]["id"]

            def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                answer = server.request("mcpServer/tool/call", {"server": "keymem-remote", "threadId": thread,
                                                                "tool": tool, "arguments": arguments})
                assert "result" in answer, answer
                assert not answer["result"].get("isError"), answer["result"]
                return answer["result"]["structuredContent"]  # type: ignore[no-any-return]

            memory_id = call("remember", {"content": FACT, "keys": KEYS})["memory_id"]
            recalled = call("recall", {"query": "user pets"})["memories"]
            assert [(m["memory_id"], m["content"]) for m in recalled] == [(memory_id, FACT)]
        finally:
            server.close()

        # A wrong token: Codex connects, the server refuses the handshake, Codex reports it.
        server = AppServer({**env, "KEYMEM_TOKEN": "kmt_not-a-token"}, work)
        try:
            server.request("initialize", {"clientInfo": {"name": "keymem-tests", "version": "1"}})
            server.send({"method": "initialized"})
            status = status_list(server)
            assert status["tools"] == {} and status["serverInfo"] is None
            assert "Auth required, when send initialize request" in status["toolsError"], status["toolsError"]
        finally:
            server.close()
