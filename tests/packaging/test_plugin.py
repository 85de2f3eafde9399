"""The plugin runs from a checkout: its launcher (plugin/bin/keymem-run) and the real CLIs that install it.

``keymem-run`` runs the checkout the plugin sits in (its ``.venv``, else an installed keymem of the
checkout's version, else ``uvx --from <checkout>``), else an installed keymem or the published
package (``uvx --from keymem``); an installed keymem is exec'd directly (no uv, no wrapper process).
As the prompt hook it never downloads, never fails and never writes anything but the hook's output. The checkouts here are copies of this
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
from typing import Any

import pytest

from tests.e2e.support import SERVER_CMD, Keymem
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
    """The launcher's environment: ``path`` alone, and an empty HOME (no ~/.keymem/venv, no ~/.local/bin)."""
    env = {k: v for k, v in km.env.items() if not k.startswith(("CLAUDE_", "CODEX_", "UV_"))}
    home = km.data_dir.parent / "home"
    home.mkdir(exist_ok=True)
    env.update(PATH=path, HOME=str(home), **extra)
    return env


def fake_keymem(env_dir: Path, version: str, log: Path) -> Path:
    """``<env_dir>/bin/keymem`` with a keymem-<version>.dist-info: records how it was called, complains, exits 2."""
    (env_dir / "lib" / "python3.11" / "site-packages" / f"keymem-{version}.dist-info").mkdir(parents=True)
    script = env_dir / "bin" / "keymem"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > {log}\necho 'error: fake keymem' >&2\nexit 2\n")
    script.chmod(0o755)
    return script


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


def uv_path(tmp_path: Path) -> str:
    """A PATH with the real uv and uvx (from the test extra) and BASE_PATH, and no keymem; skips without uv."""
    found = [shutil.which(tool, path=tool_path()) for tool in ("uv", "uvx")]
    if not all(found):
        pytest.skip("uv is not installed (pip install -e '.[test]' brings it)")
    bin_dir = tmp_path / "uv-bin"
    bin_dir.mkdir()
    for tool in found:
        assert tool
        (bin_dir / Path(tool).name).symlink_to(tool)
    return f"{bin_dir}:{BASE_PATH}"


def test_real_uvx_offline_with_nothing_cached(bare_checkout: Path, tmp_path: Path, km: Keymem) -> None:
    """The real uv: the hook gives up at once and says nothing; the server reports uv's error."""
    path = uv_path(tmp_path)
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
    path = uv_path(tmp_path)
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
    assert ran.code == 127 and "no keymem installed" in ran.err, "another marketplace's checkout is not used"


# -- an installed keymem: exec'd directly -----------------------------------------------------------


def children(pid: int) -> list[str]:
    """The command lines of the processes whose parent is ``pid``."""
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            kids.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return kids


def test_an_installed_keymem_is_execd_directly(checkout: Path, bare_checkout: Path, stub_uvx: Path,
                                                tmp_path: Path, km: Keymem) -> None:
    """The README's ~/.keymem/venv holding this checkout's version: no uvx, no shell left behind."""
    env = base_env(km, f"{stub_uvx}:{BASE_PATH}")
    venv = Path(env["HOME"]) / ".keymem" / "venv"
    venv.parent.mkdir()
    venv.symlink_to(checkout / ".venv")  # keymem installed (not editable) from a copy of this checkout
    launcher = bare_checkout / LAUNCHER

    ran = run(launcher, "--version", env=env)
    assert (ran.code, ran.out.strip(), ran.err) == (0, f"keymem {project()['version']}", "")
    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT)
    assert (hook.code, hook.out, hook.err) == (0, "", "")
    assert not (tmp_path / "uvx.args").exists(), "uvx never ran"

    proc = subprocess.Popen([str(launcher)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd="/")
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "keymem-tests", "version": "1"}}}) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["result"]["serverInfo"]["name"] == "keymem"
        # The process the client started is keymem itself (the launcher exec'd it), with no uv under it.
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1].decode() == str(venv / "bin" / "keymem"), cmdline
        assert Path(cmdline[0].decode()).name.startswith("python"), cmdline
        assert not [c for c in children(proc.pid) if "uv" in c.split(" ")[0]]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert not (tmp_path / "uvx.args").exists()


@pytest.mark.parametrize(("where", "home", "on_path", "runs"), [
    ("checkout", "same", None, "home"),         # the README's venv, of the checkout's version
    ("checkout", "other", "same", "path"),      # the venv is of another version: the one on PATH is
    ("checkout", "other", "other", "uvx"),      # none of the checkout's version: uvx builds the checkout
    ("cache", "other", "same", "home"),         # not a checkout: any installed keymem, the venv first
    ("cache", None, "other", "path"),
])
def test_which_installed_keymem_runs(where: str, home: str | None, on_path: str | None, runs: str,
                                     bare_checkout: Path, stub_uvx: Path, tmp_path: Path, km: Keymem) -> None:
    version = project()["version"]
    versions = {"same": version, "other": "0.0.1"}
    bin_dirs = [str(stub_uvx)]
    env = base_env(km)
    scripts = {}
    if home:
        scripts["home"] = fake_keymem(Path(env["HOME"]) / ".keymem" / "venv", versions[home], tmp_path / "keymem.args")
    if on_path:
        # pipx and uv tool: a link in a bin directory to the script of a venv elsewhere.
        target = fake_keymem(tmp_path / "pipx" / "venvs" / "keymem", versions[on_path], tmp_path / "keymem.args")
        (tmp_path / "links").mkdir()
        scripts["path"] = tmp_path / "links" / "keymem"
        scripts["path"].symlink_to(target)
        bin_dirs.append(str(tmp_path / "links"))
    env["PATH"] = ":".join([*bin_dirs, BASE_PATH])
    launcher = bare_checkout / LAUNCHER if where == "checkout" else (
        plugin_copy(bare_checkout, tmp_path / "cache" / "keymem" / version) / "bin" / "keymem-run")

    ran = run(launcher, "serve", "--x", env=env)
    assert ran.code == 2, ran.err
    if runs == "uvx":
        assert uvx_args(tmp_path) == ["--from", str(bare_checkout), "keymem", "serve", "--x"]
        assert not (tmp_path / "keymem.args").exists()
    else:
        assert (tmp_path / "keymem.args").read_text().split("\n")[1:-1] == ["serve", "--x"]
        assert not (tmp_path / "uvx.args").exists()

    # As the hook, a failing keymem costs the prompt nothing: exit 0, no output.
    hook = run(launcher, "hook", env=env, stdin=HOOK_INPUT)
    assert (hook.code, hook.out, hook.err) == (0, "", "")


def test_a_checkout_without_uv_names_the_installed_version(bare_checkout: Path, tmp_path: Path, km: Keymem) -> None:
    """An installed keymem of another version is not run for a checkout; the server says why."""
    if any(shutil.which(tool, path=BASE_PATH) for tool in ("uvx", "keymem")):
        pytest.skip(f"uvx or keymem is installed in {BASE_PATH}")
    env = base_env(km)
    script = fake_keymem(Path(env["HOME"]) / ".keymem" / "venv", "0.0.1", tmp_path / "keymem.args")
    ran = run(bare_checkout / LAUNCHER, env=env)
    assert ran.code == 127 and ran.out == "" and not (tmp_path / "keymem.args").exists()
    (line,) = ran.err.splitlines()
    assert f"{script} is keymem 0.0.1, the checkout is {project()['version']}" in line
    assert f"pip install {bare_checkout}" in line
    hook = run(bare_checkout / LAUNCHER, "hook", env=env, stdin=HOOK_INPUT)
    assert (hook.code, hook.out, hook.err) == (0, "", "")


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


def test_claude_code_plugin_uses_the_model_the_config_file_names(checkout: Path, cli_home: dict[str, str],
                                                                 tmp_path: Path) -> None:
    """No model in the environment: MiniLM is chosen in <data dir>/config.toml (as `keymem init` writes it);
    `claude mcp list` reports the plugin Connected, and a tool call through the plugin's own command line
    (what Claude Code runs) embeds with MiniLM."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    work = project_dir("claude", "@anthropic-ai/claude-code", cli_home, tmp_path)
    env = {k: v for k, v in cli_home.items()
           if k not in ("EMBEDDING_BACKEND", "LOCAL_EMBEDDING_MODEL", "LOCAL_EMBEDDING_MODEL_PATH", "KEYMEM_RERANK")}
    data_dir = Path(env["KEYMEM_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (data_dir / "config.toml").write_text(
        'EMBEDDING_BACKEND = "local"\nLOCAL_EMBEDDING_MODEL = "minilm"\n'
        f'LOCAL_EMBEDDING_MODEL_PATH = "{cli_home["LOCAL_EMBEDDING_MODEL_PATH"]}"\nKEYMEM_RERANK = false\n')
    cli("claude", "plugin", "marketplace", "add", str(checkout), env=env, cwd=work)
    cli("claude", "plugin", "install", "keymem@keymem", env=env, cwd=work)
    out = cli("claude", "mcp", "list", env=env, cwd=work, timeout=180)
    (line,) = [x for x in out.splitlines() if x.startswith("plugin:keymem:keymem:")]
    assert "Connected" in line, out

    server = json.loads((checkout / "plugin" / ".mcp.json").read_text())["mcpServers"]["keymem"]
    assert "LOCAL_EMBEDDING_MODEL" not in server.get("env", {})  # the plugin pins no model
    plugin = checkout / "plugin"
    args = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin)) for a in server["args"]]
    params = StdioServerParameters(command=server["command"], args=args, cwd=str(work),
                                   env={**env, **server.get("env", {}), "CLAUDE_PLUGIN_ROOT": str(plugin)})

    async def call() -> dict[str, Any]:
        async with Client(params) as c:
            stored = await c.call_tool("remember", {"content": "The user's cat is named Pistachio",
                                                     "keys": ["Pistachio", "cat"], "key_types": ["name", "concept"]})
            assert not stored.is_error, stored.content
            return await c.call_tool("recall", {"query": "Pistachio"})  # type: ignore[return-value]

    found = asyncio.run(call())
    assert not found.is_error and "Pistachio" in found.content[0].text  # type: ignore[attr-defined]
    status = cli(*SERVER_CMD, "daemon", "--status", env=env, cwd=work)
    assert "minilm" in status.lower(), status  # the daemon the plugin started embeds with the configured model
