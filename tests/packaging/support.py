"""Helpers for the packaging and plugin tests: checkouts copied from this one, and clean venvs.

A clean venv here is a new ``python -m venv --without-pip`` whose only extra is a path file that
makes the already-installed third-party dependencies importable (the site-packages of the
interpreter running the tests, added as plain paths: their ``.pth`` files, among them this
checkout's editable install, are not run). keymem itself is then installed into it from a wheel
or a checkout with ``--no-deps --no-index``: nothing is downloaded, and the keymem the venv runs is
the one installed there, not this checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = Path("plugin") / "bin" / "keymem-run"
# What a checkout needs for the plugin and for building keymem (a clone has more; none of it is used).
CHECKOUT_PARTS = ("pyproject.toml", "README.md", "LICENSE", "keymem", "cypher", "plugin", ".claude-plugin")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def copy_checkout(dest: Path) -> Path:
    """A keymem checkout at ``dest`` made of this checkout's working tree (no .venv, no .git)."""
    dest.mkdir(parents=True)
    for part in CHECKOUT_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=SKIP, symlinks=True)
        else:
            shutil.copy2(src, dest / part)
    return dest


def clean_venv(venv: Path) -> Path:
    """A new venv without keymem whose imports see the installed dependencies; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    Path(purelib, "_keymem_test_deps.pth").write_text("".join(f"{d}\n" for d in deps if Path(d).is_dir()))
    return python


def pip_install(python: Path, *args: str) -> None:
    """``pip install --no-deps --no-index`` into the venv of ``python``, with this interpreter's pip."""
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", "--no-build-isolation", *args], check=True, capture_output=True, text=True)


def build_wheel(out: Path) -> Path:
    """This checkout's wheel, built offline with the hatchling of the test extra."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(ROOT)], check=True, capture_output=True, text=True)
    (wheel,) = out.glob("keymem-*.whl")
    return wheel


def tool_path(*first: Path) -> str:
    """PATH with ``first``, then this interpreter's scripts directory (uv, uvx from the test extra)."""
    return os.pathsep.join([*map(str, first), sysconfig.get_path("scripts"), os.environ.get("PATH", "")])


def mcp_handshake(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 60.0) -> dict[str, Any]:
    """Start a stdio MCP server, send ``initialize`` and ``tools/list``; the answers (by id)."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "keymem-tests", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    answers: dict[str, Any] = {}
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
        proc.stdin.flush()
        while len(answers) < 2:
            line = proc.stdout.readline()
            assert line, f"the server closed stdout: {proc.stderr.read().decode() if proc.poll() is not None else ''}"
            msg = json.loads(line)  # anything but JSON-RPC on stdout fails here
            answers[str(msg["id"])] = msg
        return answers
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
