"""README.md's Quick start as a new user runs it: two commands, from a clone, with Python alone.

The default run checks that the Quick start holds the two commands (tests/packaging/readme.py finds
them) and what they promise. ``-m slow`` runs them: in a fresh ``git clone`` of this repository
(with this checkout's uncommitted changes applied, so the commands tested are the ones you read),
with an empty HOME, a PATH holding ``python3`` and the system's tools only (no uv, no pipx, no
keymem) and pip reading no configuration: every package comes from PyPI. The first must leave a
``keymem`` that answers an MCP client and that the clone's plugin launcher runs without uv; the
second runs the test command with a few test files (``PYTEST_ADDOPTS``: the whole suite from a
clean clone is .ci/run's job) and must not create the ``.venv`` the plugin would run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.readme import HEADING, readme_commands
from tests.packaging.support import LAUNCHER, ROOT, mcp_handshake, project

# The system's tools, without whatever the test run's own PATH holds (its venv: uv, keymem).
SYSTEM_PATH = "/usr/bin:/bin"
# A new user's pip: PyPI, no local indexes or wheel directories from this machine's configuration.
PIP_KEEP = ("PIP_CERT",)
NETWORK_KEEP = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
                "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def test_the_quick_start_holds_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.index(HEADING) < text.index("## Install"), "the Quick start comes first"
    commands = readme_commands()
    memory, tests = commands["memory"], commands["tests"]
    for command in commands.values():
        assert command.startswith("python3 -m venv "), "Python alone: a venv, not the system pip"
        assert not re.search(r"\b(uv|uvx|pipx|sudo)\b", command)
    assert "~/.keymem/venv/bin/pip install ." in memory and "~/.local/bin/keymem" in memory
    assert tests.endswith("-m pytest") and "'.[test]'" in tests
    # The test venv is not the clone's .venv, which the plugin launcher would run.
    assert ".venv-test" in tests and not re.search(r"(?<![\w-])\.venv(?![\w-])", tests)
    assert ".venv-test/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "github.com/donggyun112" not in text, "the original project's address"


def fresh_clone(dest: Path) -> Path:
    """``git clone`` of this repository, with the working tree's changes (tracked and new files) on top."""
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "--quiet", str(ROOT), str(dest)], check=True)
    diff = subprocess.run([*git, "-C", str(ROOT), "diff", "HEAD", "--binary"], check=True,
                          capture_output=True).stdout
    if diff:
        subprocess.run([*git, "-C", str(dest), "apply", "--whitespace=nowarn"], input=diff, check=True)
    new = subprocess.run([*git, "-C", str(ROOT), "ls-files", "--others", "--exclude-standard", "-z"],
                         check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, new):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return dest


def new_user_env(tmp_path: Path) -> dict[str, str]:
    """An empty HOME; ``python3`` (this interpreter's base Python, not a venv) before the system's tools."""
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    if not base_python.exists():
        base_python = Path(getattr(sys, "_base_executable", sys.executable))
    bin_dir = tmp_path / "python-only"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(base_python)
    path = f"{bin_dir}:{SYSTEM_PATH}"
    if found := [tool for tool in ("uv", "uvx", "pipx", "keymem") if shutil.which(tool, path=path)]:
        pytest.skip(f"{', '.join(found)} installed in {SYSTEM_PATH}")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k in NETWORK_KEEP or k in PIP_KEEP or k in ("LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "TMPDIR")}
    env.update(HOME=str(home), PATH=path, PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="https://pypi.org/simple",
               PIP_CACHE_DIR=str(tmp_path / "pip-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               KEYMEM_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1")
    return env


def sh(command: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command}\n-> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_quick_start_from_a_fresh_clone(tmp_path: Path) -> None:
    commands = readme_commands()
    clone = fresh_clone(tmp_path / "keymem")
    env = new_user_env(tmp_path)
    home = Path(env["HOME"])
    version = f"keymem {project()['version']}"

    # 1. A working memory: keymem in ~/.keymem/venv, linked into ~/.local/bin.
    sh(commands["memory"], clone, env, timeout=1800)
    keymem = home / ".local" / "bin" / "keymem"
    assert keymem.resolve() == (home / ".keymem" / "venv" / "bin" / "keymem").resolve()
    ran = subprocess.run([str(keymem), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert (ran.returncode, ran.stdout.strip()) == (0, version), ran.stderr
    answers = mcp_handshake([str(keymem)], tmp_path, env)
    assert answers["1"]["result"]["serverInfo"]["name"] == "keymem"
    assert answers["2"]["result"]["tools"]
    # The plugin added from this clone runs that keymem: no uv, no .venv.
    ran = subprocess.run([str(clone / LAUNCHER), "--version"], capture_output=True, text=True, env=env, cwd="/",
                         timeout=120)
    assert (ran.returncode, ran.stdout.strip(), ran.stderr) == (0, version, "")

    # 2. A passing test run, with a few test files, in .venv-test: the plugin still runs the installed keymem.
    out = sh(commands["tests"], clone, {**env, "PYTEST_ADDOPTS": "-p no:cacheprovider tests/test_version.py "
                                        "tests/server/test_manifests.py tests/packaging/test_readme.py"},
             timeout=1800)
    assert re.search(r"\b\d+ passed\b", out.stdout) and " failed" not in out.stdout, out.stdout[-3000:]
    assert (clone / ".venv-test" / "bin" / "keymem").exists() and not (clone / ".venv").exists()
    ran = subprocess.run([str(clone / LAUNCHER), "--version"], capture_output=True, text=True, env=env, cwd="/",
                         timeout=120)
    assert (ran.returncode, ran.stdout.strip()) == (0, version), ran.stderr
