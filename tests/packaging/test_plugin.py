"""The plugin runs from a checkout: its launcher (plugin/bin/keymem-run) and the real CLIs that install it.

``keymem-run`` runs the checkout the plugin sits in (its ``.venv``, else ``uvx --from <checkout>``),
else the published package (``uvx --from keymem``), and as the prompt hook it never downloads,
never fails and never writes anything but the hook's output. The checkouts here are copies of this
one's working tree; their ``.venv`` is a clean venv with the copy installed in it (support.py).
With the Claude Code CLI (``npm install -g @anthropic-ai/claude-code``) or the Codex CLI (``npm
install -g @openai/codex``) on PATH, the marketplace is installed from such a checkout by the real
CLI in a private HOME, and the server it configures is started the way that CLI starts it.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.support import Keymem
from tests.packaging.support import (
    LAUNCHER,
    clean_venv,
    copy_checkout,
    mcp_handshake,
    pip_install,
    project,
    tool_path,
)

HOOK_INPUT = json.dumps({"prompt": "which fruit does the user like?", "cwd": "/tmp", "session_id": "s1",
                         "hook_event_name": "UserPromptSubmit"})
# A minimal PATH for the launcher's own tools (sh, dirname, grep, awk), without uv or keymem.
BASE_PATH = "/usr/bin:/bin"
QUIET_CLI = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "DISABLE_ERROR_REPORTING": "1", "GIT_TERMINAL_PROMPT": "0"}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with a developer's .venv: keymem installed in it from the checkout, nothing downloaded."""
    root = copy_checkout(tmp_path_factory.mktemp("co") / "keymem")
    pip_install(clean_venv(root / ".venv"), str(root))
    return root


@pytest.fixture
def bare_checkout(tmp_path: Path) -> Path:
    """A fresh checkout: no .venv."""
    return copy_checkout(tmp_path / "clone")


def plugin_copy(checkout: Path, where: Path) -> Path:
    """The plugin directory alone, as a host's plugin cache holds it (no checkout around it)."""
    shutil.copytree(checkout / "plugin", where)
    return where


@pytest.fixture
def stub_uvx(tmp_path: Path) -> Path:
    """A ``uvx`` that records its arguments and stdin, complains on stderr and exits 2 (as uv does on a bad call)."""
    bin_dir = tmp_path / "stub-bin"
    bin_dir.mkdir()
    uvx = bin_dir / "uvx"
    uvx.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path}/uvx.args\ncat > {tmp_path}/uvx.stdin\n"
                   "echo 'error: stub uvx failed' >&2\nexit 2\n")
    uvx.chmod(0o755)
    return bin_dir


def uvx_args(tmp_path: Path) -> list[str]:
    """The arguments the stub uvx was last called with."""
    return (tmp_path / "uvx.args").read_text().split("\n")[:-1]


@dataclass
class Ran:
    code: int
    out: str
    err: str


def run(launcher: Path, *args: str, env: dict[str, str], stdin: str = "", timeout: float = 60) -> Ran:
    p = subprocess.run([str(launcher), *args], input=stdin, capture_output=True, text=True, env=env,
                       cwd="/", timeout=timeout)
    return Ran(p.returncode, p.stdout, p.stderr)


def base_env(km: Keymem, path: str = BASE_PATH, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in km.env.items() if not k.startswith(("CLAUDE_", "CODEX_", "UV_"))}
    env.update(PATH=path, **extra)
    return env


# -- the launcher ---------------------------------------------------------------------------------


def test_the_launcher_is_an_executable_posix_script() -> None:
    from tests.packaging.support import ROOT

    launcher = ROOT / LAUNCHER
    assert launcher.read_text().startswith("#!/bin/sh\n")
    assert launcher.stat().st_mode & stat.S_IXUSR
    assert subprocess.run(["sh", "-n", str(launcher)]).returncode == 0
    if shutil.which("shellcheck"):
        checked = subprocess.run(["shellcheck", str(launcher)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout


def test_checkout_runs_its_own_venv(checkout: Path, km: Keymem) -> None:
    ran = run(checkout / LAUNCHER, "--version", env=base_env(km))
    assert (ran.code, ran.out.strip()) == (0, f"keymem {project()['version']}"), ran.err


def test_hook_from_a_checkout_is_silent_without_a_daemon(checkout: Path, km: Keymem) -> None:
    ran = run(checkout / LAUNCHER, "hook", env=base_env(km), stdin=HOOK_INPUT)
    assert (ran.code, ran.out, ran.err) == (0, "", "")


@pytest.mark.parametrize("where", ["checkout", "cache"])
def test_uvx_command_lines(where: str, bare_checkout: Path, stub_uvx: Path, tmp_path: Path, km: Keymem) -> None:
    """Without a .venv: uvx from the checkout, or from the package index; the hook offline and quiet."""
    if where == "checkout":
        launcher, source = bare_checkout / LAUNCHER, str(bare_checkout)
    else:
        launcher, source = plugin_copy(bare_checkout, tmp_path / "cache" / "keymem" / "0.1.0") / "bin" / "keymem-run", "keymem"
    env = base_env(km, f"{stub_uvx}:{BASE_PATH}")

    server = run(launcher, "--version", env=env)
    assert server.code == 2 and "stub uvx failed" in server.err, "the server passes uvx's exit and errors on"
    assert uvx_args(tmp_path) == ["--from", source, "keymem", "--version"]

    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT)
    assert (hook.code, hook.out, hook.err) == (0, "", ""), "exit 2 from a hook would block the prompt"
    assert uvx_args(tmp_path) == ["--offline", "--quiet", "--from", source,
                                                                     "keymem", "hook"]
    assert (tmp_path / "uvx.stdin").read_text() == HOOK_INPUT


def test_real_uvx_offline_with_nothing_cached(bare_checkout: Path, tmp_path: Path, km: Keymem) -> None:
    """The real uv: the hook gives up at once and says nothing; the server reports uv's error."""
    path = tool_path(Path(BASE_PATH))
    if not shutil.which("uvx", path=path):
        pytest.skip("uvx is not installed (pip install -e '.[test]' brings it)")
    launcher = plugin_copy(bare_checkout, tmp_path / "plugin") / "bin" / "keymem-run"
    env = base_env(km, path, UV_CACHE_DIR=str(tmp_path / "empty-cache"), UV_TOOL_DIR=str(tmp_path / "tools"))

    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT, timeout=30)
    assert (hook.code, hook.out, hook.err) == (0, "", "")
    server = run(launcher, "--version", env={**env, "UV_OFFLINE": "1"}, timeout=30)
    assert server.code != 0 and server.out == "" and "keymem" in server.err


@pytest.mark.slow
def test_real_uvx_runs_a_checkout_and_rebuilds_it_after_an_edit(bare_checkout: Path, tmp_path: Path,
                                                                km: Keymem) -> None:
    """``uvx --from <checkout>`` with an empty uv cache (every dependency from the index), then an edit."""
    path = tool_path(Path(BASE_PATH))
    if not shutil.which("uvx", path=path):
        pytest.skip("uvx is not installed (pip install -e '.[test]' brings it)")
    launcher = bare_checkout / LAUNCHER
    env = base_env(km, path, UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_TOOL_DIR=str(tmp_path / "tools"))
    version = f"keymem {project()['version']}"
    ran = run(launcher, "--version", env=env, timeout=900)
    assert (ran.code, ran.out.strip()) == (0, version), ran.err

    main = bare_checkout / "keymem" / "cli" / "main.py"
    line = 'typer.echo(f"keymem {__version__}")'
    assert line in main.read_text()
    main.write_text(main.read_text().replace(line, 'typer.echo(f"keymem (edited) {__version__}")'))
    ran = run(launcher, "--version", env=env, timeout=300)
    assert ran.out.strip() == f"keymem (edited) {project()['version']}", "[tool.uv] cache-keys: edits rebuild"
    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT, timeout=30)
    assert (hook.code, hook.out, hook.err) == (0, "", "")


@pytest.mark.parametrize("where", ["checkout", "cache"])
def test_nothing_to_run_keymem_with(where: str, bare_checkout: Path, tmp_path: Path, km: Keymem) -> None:
    """No .venv, no uvx, no keymem: the server says what to install; the hook stays silent."""
    if any(shutil.which(tool, path=BASE_PATH) for tool in ("uvx", "keymem")):
        pytest.skip(f"uvx or keymem is installed in {BASE_PATH}")
    launcher = bare_checkout / LAUNCHER if where == "checkout" else (
        plugin_copy(bare_checkout, tmp_path / "plugin") / "bin" / "keymem-run")
    env = base_env(km)

    server = run(launcher, env=env)
    assert server.code == 127 and server.out == ""
    (line,) = server.err.splitlines()
    assert line.startswith("keymem-run: cannot run keymem") and "install uv" in line
    assert (str(bare_checkout) in line) == (where == "checkout")
    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT)
    assert (hook.code, hook.out, hook.err) == (0, "", "")


def test_codex_cache_copy_runs_the_local_marketplace_checkout(checkout: Path, tmp_path: Path, km: Keymem) -> None:
    """Codex copies the plugin into its cache; its config.toml names the marketplace directory."""
    codex_home = tmp_path / "codex"
    copy = plugin_copy(checkout, codex_home / "plugins" / "cache" / "keymem" / "keymem" / "0.1.0")
    (codex_home / "config.toml").write_text(
        f'model = "x"\n\n[marketplaces.other]\nsource = "/nowhere"\n\n[marketplaces.keymem]\n'
        f'source_type = "local"\nsource = "{checkout}"\n\n[plugins."keymem@keymem"]\nenabled = true\n')
    env = base_env(km, CODEX_HOME=str(codex_home))
    ran = run(copy / "bin" / "keymem-run", "--version", env=env)
    assert (ran.code, ran.out.strip()) == (0, f"keymem {project()['version']}"), ran.err

    (codex_home / "config.toml").write_text(f'[marketplaces.elsewhere]\nsource = "{checkout}"\n')
    ran = run(copy / "bin" / "keymem-run", "--version", env=env)
    assert ran.code == 127 and "neither uvx nor keymem" in ran.err, "another marketplace's checkout is not used"


# -- the real CLIs ----------------------------------------------------------------------------------


def cli(*cmd: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    p = subprocess.run(list(cmd), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"{' '.join(cmd)} -> {p.returncode}\n{out}"
    return out


def project_dir(cli_name: str, package: str, env: dict[str, str], tmp_path: Path) -> Path:
    """The directory a user runs the CLI in; the test is skipped when the CLI is not installed."""
    if not shutil.which(cli_name, path=env["PATH"]):
        pytest.skip(f"the {cli_name} CLI is not installed (npm install -g {package})")
    work = tmp_path / "project"
    work.mkdir()
    return work


def hook_command(plugin_root: Path) -> str:
    (group,) = json.loads((plugin_root / "hooks" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"]
    (hook,) = group["hooks"]
    return str(hook["command"])


def run_hook(command: str, env: dict[str, str], cwd: Path) -> Ran:
    p = subprocess.run(["sh", "-c", command], input=HOOK_INPUT, capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=30)
    return Ran(p.returncode, p.stdout, p.stderr)


def assert_hook_output(ran: Ran) -> None:
    """Exit 0 and either nothing or the one JSON object of the hook protocol on stdout."""
    assert ran.code == 0, ran.err
    if ran.out.strip():
        assert set(json.loads(ran.out)) == {"hookSpecificOutput"}


@pytest.fixture
def cli_home(tmp_path: Path, km: Keymem) -> Iterator[dict[str, str]]:
    """The environment of a user with a private HOME; the keymem daemons it starts are stopped after."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**km.env, **QUIET_CLI, "HOME": str(home), "PATH": tool_path()}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_PLUGIN_ROOT", "CLAUDECODE"):
        env.pop(name, None)
    try:
        yield env
    finally:
        km.stop_all()


def test_claude_code_installs_the_marketplace_from_a_checkout(checkout: Path, cli_home: dict[str, str],
                                                              tmp_path: Path) -> None:
    work = project_dir("claude", "@anthropic-ai/claude-code", cli_home, tmp_path)
    out = cli("claude", "plugin", "marketplace", "add", str(checkout), env=cli_home, cwd=work)
    assert "Successfully added marketplace: keymem" in out
    out = cli("claude", "plugin", "install", "keymem@keymem", env=cli_home, cwd=work)
    assert "Successfully installed plugin: keymem@keymem" in out

    out = cli("claude", "mcp", "list", env=cli_home, cwd=work, timeout=180)
    (line,) = [x for x in out.splitlines() if x.startswith("plugin:keymem:keymem:")]
    assert "Connected" in line and "Failed" not in line, out
    # A marketplace added from a directory runs its plugin in place: the checkout's own launcher.
    assert f'r="{checkout / "plugin"}"' in line

    # The hook as Claude Code runs it: ${CLAUDE_PLUGIN_ROOT} substituted, and set in the environment.
    plugin = checkout / "plugin"
    command = hook_command(plugin).replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
    assert_hook_output(run_hook(command, {**cli_home, "CLAUDE_PLUGIN_ROOT": str(plugin)}, work))


def test_claude_code_from_a_git_marketplace_runs_the_package(checkout: Path, cli_home: dict[str, str],
                                                             tmp_path: Path, stub_uvx: Path) -> None:
    """Added as owner/repo, the plugin lands in Claude Code's cache: not a checkout, so the package."""
    work = project_dir("claude", "@anthropic-ai/claude-code", cli_home, tmp_path)
    repo = tmp_path / "repo"
    shutil.copytree(checkout, repo, ignore=shutil.ignore_patterns(".venv"))
    git = {**cli_home, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "keymem"]):
        subprocess.run(["git", *cmd], cwd=repo, env=git, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(tmp_path / "keymem.git")], env=git, check=True)
    # The GitHub address never leaves the machine: git rewrites it to the local bare repository.
    for remote in ("https://github.com/keymem-test/keymem", "git@github.com:keymem-test/keymem"):
        subprocess.run(["git", "config", "--global", "--add", f"url.file://{tmp_path}/keymem.insteadOf", remote],
                       env=git, check=True)
    cli("claude", "plugin", "marketplace", "add", "keymem-test/keymem", env=git, cwd=work, timeout=180)
    cli("claude", "plugin", "install", "keymem@keymem", env=git, cwd=work)
    installed = json.loads((Path(cli_home["HOME"]) / ".claude" / "plugins" / "installed_plugins.json").read_text())
    (entry,) = installed["plugins"]["keymem@keymem"]
    root = Path(entry["installPath"])
    assert root.is_relative_to(Path(cli_home["HOME"])) and (root / "bin" / "keymem-run").stat().st_mode & stat.S_IXUSR

    env = {**cli_home, "PATH": f"{stub_uvx}:{BASE_PATH}"}
    ran = run(root / "bin" / "keymem-run", env=env)
    assert ran.code == 2 and uvx_args(tmp_path) == ["--from", "keymem", "keymem"]


def test_codex_installs_the_marketplace_from_a_checkout(checkout: Path, cli_home: dict[str, str],
                                                        tmp_path: Path) -> None:
    """Codex's own steps: marketplace add, plugin add; then its MCP entry started as Codex starts it."""
    work = project_dir("codex", "@openai/codex", cli_home, tmp_path)
    out = cli("codex", "plugin", "marketplace", "add", str(checkout), env=cli_home, cwd=work)
    assert "Added marketplace `keymem`" in out
    out = cli("codex", "plugin", "add", "keymem@keymem", env=cli_home, cwd=work)
    match = re.search(r"Installed plugin root: (\S+)", out)
    assert match, out
    root = Path(match.group(1))
    assert not (root.parent / "pyproject.toml").exists(), "Codex runs a copy in its cache"

    got = subprocess.run(["codex", "mcp", "get", "keymem", "--json"], capture_output=True, text=True, env=cli_home,
                         cwd=work, timeout=60)
    entry = json.loads(got.stdout)
    transport = entry["transport"]
    assert transport["type"] == "stdio" and Path(transport["cwd"]).resolve() == root.resolve()
    answers = mcp_handshake([transport["command"], *transport["args"]], Path(transport["cwd"]),
                            {**cli_home, **transport["env"]})
    assert answers["1"]["result"]["serverInfo"]["name"] == "keymem"
    assert len(answers["2"]["result"]["tools"]) == 10

    command = hook_command(root)
    assert_hook_output(run_hook(command, {**cli_home, "CLAUDE_PLUGIN_ROOT": str(root)}, work))
    no_root = run_hook(command, cli_home, work)
    assert (no_root.code, no_root.out) == (0, ""), "without a plugin root the hook does nothing, silently"
