"""One daemon computes for every client: a client, `keymem doctor` and `keymem init` whose settings differ
from the running daemon's are told which ones and how to restart it.

The daemon here runs with the test model (MiniLM, no reranker); the other side names bge-m3, as a client
configured with ``-e LOCAL_EMBEDDING_MODEL=bge-m3`` or a config file written by ``keymem init`` would.
"""

from __future__ import annotations

import asyncio
import subprocess
import tomllib
from pathlib import Path

import pytest
from mcp import Client

from tests.e2e.support import SERVER_CMD, Keymem
from tests.e2e.test_stdio_tools import params

pytestmark = pytest.mark.timeout(120)

MODEL_VARS = ("EMBEDDING_BACKEND", "LOCAL_EMBEDDING_MODEL", "LOCAL_EMBEDDING_MODEL_PATH", "KEYMEM_RERANK")


def keymem(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SERVER_CMD, *args], env={**env, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=60)


def first_two_results(env: dict[str, str]) -> tuple[str, str]:
    async def session() -> tuple[str, str]:
        async with Client(params(env)) as c:
            first = await c.call_tool("remember", {"content": "The user's dog is named Biscuit", "keys": ["dog"]})
            second = await c.call_tool("recall", {"query": "dog"})
            assert not first.is_error and not second.is_error, (first.content, second.content)
            return first.content[0].text, second.content[0].text  # type: ignore[union-attr]

    return asyncio.run(session())


def test_a_client_configured_for_another_model_is_told_in_its_first_result(daemon: Keymem) -> None:
    pid = daemon.daemon_pid()
    minilm = daemon.env["LOCAL_EMBEDDING_MODEL_PATH"]
    other = {k: v for k, v in daemon.env.items() if k != "LOCAL_EMBEDDING_MODEL_PATH"}
    other.update(LOCAL_EMBEDDING_MODEL="bge-m3", KEYMEM_RECALL_HOPS="2")

    first, second = first_two_results(other)
    note, _, rest = first.partition("\n")
    assert note == (
        f"note: the running keymem daemon (pid {pid}) computes every result with its own settings, not this "
        f"client's: LOCAL_EMBEDDING_MODEL bge-m3 here, minilm-l6-v2 in the daemon; LOCAL_EMBEDDING_MODEL_PATH "
        f"unset here, {minilm} in the daemon; KEYMEM_RECALL_HOPS 2 here, 3 in the daemon. To use this client's "
        "settings, give every client the same ones (the config file, `keymem init`, not per-client variables) "
        "and run `keymem daemon --stop`: the next tool call starts a daemon with them")
    assert rest.startswith("stored m_")
    assert "note:" not in second and "Biscuit" in second  # once per session; MiniLM found it
    assert daemon.daemon_pid() == pid

    # the same settings: nothing to say
    first, _ = first_two_results(daemon.env)
    assert not first.startswith("note:"), first


def test_doctor_flags_a_daemon_running_another_model(daemon: Keymem) -> None:
    pid = daemon.daemon_pid()
    assert keymem(["doctor"], daemon.env).returncode == 0  # the same settings: no problem
    env = {k: v for k, v in daemon.env.items() if k not in MODEL_VARS}
    (daemon.data_dir / "config.toml").write_text('LOCAL_EMBEDDING_MODEL = "bge-m3"\nKEYMEM_RERANK = false\n')

    out = keymem(["doctor"], env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert (f"  - the running daemon (pid {pid}) computes every client's results with its own settings, not this "
            "configuration's: LOCAL_EMBEDDING_MODEL: bge-m3 in this configuration (config file), minilm-l6-v2 in the "
            "daemon; LOCAL_EMBEDDING_MODEL_PATH: unset in this configuration (default), "
            f"{daemon.env['LOCAL_EMBEDDING_MODEL_PATH']} in the daemon\n"
            "    fix: run `keymem daemon --stop`: the next tool call starts a daemon with this configuration.") \
        in out.stderr


def test_init_that_changes_the_model_says_the_daemon_keeps_the_old_one(daemon: Keymem) -> None:
    pid = daemon.daemon_pid()
    env = {k: v for k, v in daemon.env.items() if k not in MODEL_VARS}
    out = keymem(["init", "--model", "bge-m3", "--no-download"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert tomllib.loads((daemon.data_dir / "config.toml").read_text())["LOCAL_EMBEDDING_MODEL"] == "bge-m3"
    (line,) = [x for x in out.stdout.splitlines() if "keeps the settings" in x]
    assert line.startswith(f"note: the running keymem daemon (pid {pid}) keeps the settings it started with "
                           "(LOCAL_EMBEDDING_MODEL bge-m3 in this file, minilm-l6-v2 in the daemon; ")
    assert "KEYMEM_RERANK true in this file, false in the daemon" in line
    assert line.endswith("`keymem daemon --stop` stops it, and the next tool call starts one that reads this file")

    # the file and the daemon agree: nothing to say
    config = Path(daemon.data_dir / "config.toml")
    out = keymem(["init", "--force", "--model", "minilm", "--model-path", daemon.env["LOCAL_EMBEDDING_MODEL_PATH"],
                  "--no-download"], env)
    assert out.returncode == 0 and "keeps the settings" not in out.stdout, out.stdout + out.stderr
    assert tomllib.loads(config.read_text())["KEYMEM_RERANK"] is False
