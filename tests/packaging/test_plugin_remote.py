"""The keymem-remote plugin, installed by the real Claude Code and Codex CLIs, for a team member.

The memory is on a real ``keymem serve --http`` (its daemon, MiniLM); the member's machine is a
private HOME whose ``~/.keymem`` holds only the 0600 token file and ``config.toml``
(``KEYMEM_HOOK_URL``, ``KEYMEM_HOOK_TOKEN_FILE``). The commands of docs/mcp.md ("The prompt hook for
team members") are run literally by ``sh`` (the server's URL and the checkout's path put in): they
write those files, add the marketplace (a copy of this checkout), install the plugin and add the
server with ``claude mcp add``. The installed plugin's hook command is then run as the CLI runs it:
``sh -c`` with the hook JSON on stdin. The ``keymem`` it runs is the one on PATH (this checkout's,
installed in the test venv), as for a member who installed keymem with pip or pipx.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.server.client import DaemonClient
from tests.e2e.http_support import http_server, make_token
from tests.e2e.support import Keymem
from tests.packaging.support import ROOT, copy_checkout, tool_path

QUIET_CLI = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "DISABLE_ERROR_REPORTING": "1", "GIT_TERMINAL_PROMPT": "0"}
HOOK_INPUT = json.dumps({"prompt": "when does the invoicing service deploy?", "cwd": "/home/u/invoicing",
                         "session_id": "s1", "hook_event_name": "UserPromptSubmit", "transcript_path": "/dev/null"})

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def team_server(km: Keymem) -> Iterator[dict[str, Any]]:
    """A keymem serve --http with one memory in namespace team-a, and a token of that namespace."""
    token = make_token(km, "member", "--namespace", "team-a")
    with http_server(km) as (url, _):
        km.wait_daemon_ready()
        c = DaemonClient(km.settings(), start=False)
        try:
            mid = c.call("remember", {"content": "The invoicing service deploys on Thursdays",
                                      "keys": ["invoicing service", "deploy day"], "namespace": "team-a"})["memory_id"]
        finally:
            c.close()
        yield {"url": url, "token": token, "memory_id": mid}


@pytest.fixture
def member(tmp_path: Path) -> dict[str, str]:
    """The member's environment: a private HOME (its ~/.keymem made by the commands of docs/mcp.md)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KEYMEM_", "EMBEDDING_", "LOCAL_EMBEDDING", "CLAUDE", "CODEX_"))}
    env.update(QUIET_CLI, HOME=str(home), PATH=tool_path())
    return env


def documented_commands(url: str, checkout: Path) -> list[str]:
    """The bash block of docs/mcp.md, "The prompt hook for team members", for this server and checkout."""
    section = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8").split("### The prompt hook for team members", 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, "docs/mcp.md lost the member's commands"
    block = match.group(1).replace("https://HOST:8765/mcp", url).replace("/path/to/clone", str(checkout))
    return block.splitlines(keepends=True)


def run_documented(lines: list[str], env: dict[str, str], token: str, cwd: Path) -> str:
    """Commands of the documentation, run literally by sh (``$TOKEN`` as the member has it)."""
    p = subprocess.run(["sh", "-ec", "".join(lines)], capture_output=True, text=True, env={**env, "TOKEN": token},
                       cwd=cwd, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout + p.stderr


def config_part(lines: list[str]) -> list[str]:
    """The documented lines that write the token file and the config file (up to the heredoc's end)."""
    end = lines.index("EOF\n")
    assert "claude" not in "".join(lines[:end + 1])
    return lines[:end + 1]


def cli(*cmd: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    p = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"{' '.join(cmd)} -> {p.returncode}\n{out}"
    return out


def needs(name: str, package: str, env: dict[str, str]) -> None:
    import shutil

    if not shutil.which(name, path=env["PATH"]):
        pytest.skip(f"the {name} CLI is not installed (npm install -g {package})")


def run_installed_hook(root: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed plugin's hook command, as the CLI runs it (its plugin root substituted and exported)."""
    (group,) = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"]
    (hook,) = group["hooks"]
    command = hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(root))
    return subprocess.run(["sh", "-c", command], input=HOOK_INPUT, capture_output=True, text=True,
                          env={**env, "CLAUDE_PLUGIN_ROOT": str(root)}, cwd=cwd, timeout=hook["timeout"])


def assert_team_context(ran: subprocess.CompletedProcess[str], memory_id: str, home: Path) -> None:
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    context = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert memory_id in context and "Thursdays" in context
    # the member's machine has no store and no daemon: the server answered
    assert sorted(p.name for p in (home / ".keymem").iterdir()) == ["config.toml", "server-token"]


def test_claude_code_installs_the_remote_plugin_and_its_hook_asks_the_server(
        tmp_path: Path, member: dict[str, str], team_server: dict[str, Any]) -> None:
    """docs/mcp.md's commands for a team member, run literally (token file, config file, plugin, server)."""
    needs("claude", "@anthropic-ai/claude-code", member)
    checkout = copy_checkout(tmp_path / "keymem")
    work = tmp_path / "project"
    work.mkdir()
    out = run_documented(documented_commands(team_server["url"], checkout), member, team_server["token"], work)
    assert "Successfully installed plugin: keymem-remote@keymem" in out
    home = Path(member["HOME"])
    assert (home / ".keymem" / "server-token").stat().st_mode & 0o777 == 0o600
    listed = cli("claude", "mcp", "list", env=member, cwd=work, timeout=180)
    (line,) = [x for x in listed.splitlines() if x.startswith("keymem-remote:")]
    assert "Connected" in line and "Failed" not in line, listed
    assert not [x for x in listed.splitlines() if x.startswith("plugin:keymem")], "the remote plugin brings no server"

    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    (entry,) = installed["plugins"]["keymem-remote@keymem"]
    root = Path(entry["installPath"])
    assert_team_context(run_installed_hook(root, member, work), team_server["memory_id"], home)


def test_codex_installs_the_remote_plugin_and_its_hook_asks_the_server(
        tmp_path: Path, member: dict[str, str], team_server: dict[str, Any]) -> None:
    needs("codex", "@openai/codex", member)
    checkout = copy_checkout(tmp_path / "keymem")
    work = tmp_path / "project"
    work.mkdir()
    run_documented(config_part(documented_commands(team_server["url"], checkout)), member, team_server["token"], work)
    cli("codex", "plugin", "marketplace", "add", str(checkout), env=member, cwd=work)
    out = cli("codex", "plugin", "add", "keymem-remote@keymem", env=member, cwd=work)
    match = re.search(r"Installed plugin root: (\S+)", out)
    assert match, out
    root = Path(match.group(1))
    assert not (root / ".mcp.json").exists()
    assert_team_context(run_installed_hook(root, member, work), team_server["memory_id"], Path(member["HOME"]))


def test_the_remote_plugin_hook_adds_nothing_without_a_server_in_the_config(
        tmp_path: Path, member: dict[str, str], team_server: dict[str, Any], km: Keymem) -> None:
    """No KEYMEM_HOOK_URL: the plugin's hook never falls back to a local daemon, even one that runs here."""
    env = {**member, "KEYMEM_DATA_DIR": str(km.data_dir)}  # the server's data dir (no hook settings): its daemon runs
    assert km.daemon_pid() is not None
    ran = run_installed_hook(ROOT / "plugin" / "remote", env, tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    (line,) = (km.data_dir / "logs" / "hook.log").read_text().splitlines()
    assert "`keymem hook --remote` needs KEYMEM_HOOK_URL" in line
