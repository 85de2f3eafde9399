"""README.md's agent commands, run as they are written, by a new user with the real Claude Code and Codex CLIs.

The user has what the Quick start's first command leaves (keymem installed in ``~/.keymem/venv``, here
from this checkout without the network, see support.py, and linked as ``~/.local/bin/keymem``), a private
HOME with no keymem variable and no model setting in the environment, and no Hugging Face Hub: the MiniLM
files are placed by hand where keymem looks for them (README, Install). Then, each line taken from
README.md by tests/packaging/readme.py and run with ``bash -c``:

1. ``keymem init --model minilm`` (README, "The config file"): the config file names MiniLM, no reranker;
2. the "Use it from an agent" line of Claude Code (``claude mcp add ...``), then ``claude mcp list``
   reports keymem ``✔ Connected``; of Codex (``codex mcp add ...``), then ``codex mcp get``;
3. a tool call through the command line that CLI registered (the MCP SDK's stdio client: Claude Code
   calls no tool without a model), which starts the daemon: it embeds with MiniLM, as the file says.

The tests skip when the CLI is not installed (``npm install -g @anthropic-ai/claude-code`` or
``@openai/codex``; .ci/run installs both).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support import Keymem
from tests.packaging.readme import agent_commands
from tests.packaging.support import ROOT, clean_venv, pip_install
from tests.packaging.test_plugin import QUIET_CLI

pytestmark = pytest.mark.timeout(300)

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
FACT = "The user's tortoise is named Clementine and eats dandelions"


@dataclass
class User:
    home: Path
    env: dict[str, str]
    keymem: Keymem  # the data dir ~/.keymem, whose daemons are stopped at teardown

    def sh(self, command: str, timeout: float = 180) -> str:
        """``command`` run by bash in the user's project directory; its stdout and stderr, checked."""
        p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=self.env,
                           cwd=self.home / "project", timeout=timeout)
        out = p.stdout + p.stderr
        assert p.returncode == 0, f"{command} -> {p.returncode}\n{out}"
        return out


@pytest.fixture
def user(short_dir: Path, minilm_dir: Path) -> Iterator[User]:
    home = short_dir / "home"
    (home / "project").mkdir(parents=True)
    venv = home / ".keymem" / "venv"
    pip_install(clean_venv(venv), str(ROOT))  # what the Quick start's first command installs
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "keymem").symlink_to(venv / "bin" / "keymem")
    models = home / ".keymem" / "models" / "minilm-l6-v2"  # placed by hand, as the offline message says
    models.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        (models / name).symlink_to((minilm_dir / name).resolve())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KEYMEM_", "OPENAI_", "CLAUDE", "CODEX_", "UV_"))
           and k not in ("EMBEDDING_BACKEND", "LOCAL_EMBEDDING_MODEL", "LOCAL_EMBEDDING_MODEL_PATH")}
    env.update(QUIET_CLI, HOME=str(home), PATH=f"{home / '.local' / 'bin'}:{SYSTEM_PATH}", HF_HUB_OFFLINE="1")
    data = home / ".keymem"  # the data dir the user's keymem finds by HOME; named for this process's look-ups
    u = User(home, env, Keymem(data, {**env, "KEYMEM_DATA_DIR": str(data)}))
    try:
        yield u
    finally:
        u.keymem.stop_all()


def needs(cli: str, package: str) -> None:
    if not shutil.which(cli, path=SYSTEM_PATH):
        pytest.skip(f"the {cli} CLI is not installed (npm install -g {package})")


def init_minilm(user: User) -> None:
    """The README's ``keymem init --model minilm``: MiniLM, the reranker off, nothing downloaded."""
    line = agent_commands()["init"]
    assert line.split("#")[0].split() == ["keymem", "init", "--model", "minilm"], line
    out = user.sh(line)
    assert "embedding: minilm-l6-v2 ready" in out and "reranker: off (the minilm-l6-v2 profile" in out, out
    config = tomllib.loads((user.home / ".keymem" / "config.toml").read_text())
    assert config == {"EMBEDDING_BACKEND": "local", "LOCAL_EMBEDDING_MODEL": "minilm-l6-v2", "KEYMEM_RERANK": False}


def call_tools(command: str, args: list[str], env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """``remember`` then ``recall`` through the MCP SDK's stdio client on that command line: their texts."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))

    async def session() -> tuple[str, str]:
        async with Client(params) as c:
            stored = await c.call_tool("remember", {"content": FACT, "keys": ["Clementine", "tortoise"],
                                                     "key_types": ["name", "concept"]})
            found = await c.call_tool("recall", {"query": "What does my pet tortoise eat?"})
            assert not stored.is_error and not found.is_error, (stored.content, found.content)
            return stored.content[0].text, found.content[0].text  # type: ignore[union-attr]

    return asyncio.run(session())


def assert_minilm_served(user: User, stored: str, found: str) -> None:
    assert stored.startswith("stored m_"), stored  # no note: the daemon runs the file's settings, like the client
    assert "Clementine" in found and "dandelions" in found, found
    status = user.sh("keymem daemon --status")
    assert "embedding: local:minilm-l6-v2" in status, status
    info = user.keymem.wait_daemon_ready()
    assert info["settings"]["LOCAL_EMBEDDING_MODEL"] == "minilm-l6-v2" and info["settings"]["KEYMEM_RERANK"] == "false"


def test_the_readme_claude_code_command_connects_and_serves_minilm(user: User) -> None:
    needs("claude", "@anthropic-ai/claude-code")
    init_minilm(user)
    line = agent_commands()["claude"]
    assert "-e " not in line and "MODEL" not in line and "uvx" not in line, "the config file decides"
    user.sh(line)

    listed = user.sh("claude mcp list", timeout=240)
    (row,) = [x for x in listed.splitlines() if x.startswith("keymem:")]
    assert "✔ Connected" in row, listed
    assert row.startswith(f"keymem: {user.home / '.keymem' / 'venv' / 'bin' / 'keymem'}"), row

    entry: dict[str, Any] = json.loads((user.home / ".claude.json").read_text())["mcpServers"]["keymem"]
    assert entry["command"] == str(user.home / ".keymem" / "venv" / "bin" / "keymem")
    assert entry.get("args", []) == [] and not entry.get("env"), entry  # nothing but the installed keymem
    # Claude Code starts a stdio server with its own environment and the entry's env.
    stored, found = call_tools(entry["command"], entry.get("args", []), {**user.env, **(entry.get("env") or {})},
                               user.home / "project")
    assert_minilm_served(user, stored, found)


def test_the_readme_codex_command_registers_what_serves_minilm(user: User) -> None:
    needs("codex", "@openai/codex")
    init_minilm(user)
    line = agent_commands()["codex"]
    assert "--env" not in line and "MODEL" not in line and "uvx" not in line, "the config file decides"
    user.sh(line)

    entry = json.loads(user.sh("codex mcp get keymem --json 2>/dev/null"))
    transport = entry["transport"]
    assert transport["type"] == "stdio" and transport["command"] == str(user.home / ".keymem" / "venv" / "bin" / "keymem")
    assert transport["args"] == [] and not transport.get("env"), transport
    # Codex passes a server only a few variables of its own environment (HOME, PATH, ...) and the entry's:
    # HOME is enough for keymem to find its config file.
    env = {k: user.env[k] for k in ("HOME", "PATH", "LANG", "TMPDIR", "HF_HUB_OFFLINE") if k in user.env}
    stored, found = call_tools(transport["command"], transport["args"], {**env, **(transport.get("env") or {})},
                               user.home / "project")
    assert_minilm_served(user, stored, found)
