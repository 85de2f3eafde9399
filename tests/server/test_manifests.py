"""The repository as a Claude Code / Codex plugin marketplace: every manifest parses and points at real files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from keymem.server.texts import PROTOCOL_RULES

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def plugin_dirs() -> list[Path]:
    return [ROOT / entry["source"] for entry in load(MARKETPLACE)["plugins"]]


def server_plugin_dirs() -> list[Path]:
    """The plugins that bring a local MCP server (keymem-remote does not: the team's server is the MCP server)."""
    return [p for p in plugin_dirs() if (p / ".mcp.json").exists()]


# The hook command's last step per plugin: the launcher of the local plugin, `keymem hook --remote` of the remote one.
HOOK_EXEC = {"keymem": 'exec "$r/bin/keymem-run" hook', "keymem-remote": 'exec "$r/bin/keymem-hook"'}


def test_every_json_manifest_parses() -> None:
    files = [MARKETPLACE, *ROOT.glob("plugin/**/*.json"), *ROOT.glob("plugin/.*/*.json"), ROOT / "plugin" / ".mcp.json"]
    assert len({f.resolve() for f in files}) >= 5
    for f in files:
        assert isinstance(load(f), dict), f


def test_marketplace_entries_point_at_plugins() -> None:
    market = load(MARKETPLACE)
    assert market["name"] == "keymem" and market["owner"]["name"]
    for entry in market["plugins"]:
        assert entry["source"].startswith("./"), "Codex requires ./-relative local sources"
        plugin = ROOT / entry["source"]
        assert plugin.is_dir()
        for manifest in (plugin / ".claude-plugin" / "plugin.json", plugin / ".codex-plugin" / "plugin.json"):
            m = load(manifest)
            assert m["name"] == entry["name"] and re.fullmatch(r"[a-z][a-z0-9-]*", m["name"])
            assert m["version"] == entry["version"] == project_version()
        assert sorted(p.name for p in (plugin / ".codex-plugin").iterdir()) == ["plugin.json"]


@pytest.mark.parametrize("plugin", plugin_dirs(), ids=lambda p: p.name)
def test_codex_manifest_paths_exist(plugin: Path) -> None:
    m = load(plugin / ".codex-plugin" / "plugin.json")
    assert ("mcpServers" in m) == (plugin / ".mcp.json").exists()
    for field in ("skills", "hooks", *(["mcpServers"] if "mcpServers" in m else [])):
        value = m[field]
        assert value.startswith("./"), field
        assert (plugin / value).exists(), f"{field}: {value}"
    assert m["interface"]["displayName"]


def test_the_marketplace_has_a_local_and_a_remote_plugin() -> None:
    names = {load(p / ".claude-plugin" / "plugin.json")["name"]: p for p in plugin_dirs()}
    assert set(names) == set(HOOK_EXEC)
    assert server_plugin_dirs() == [names["keymem"]]
    remote = names["keymem-remote"]
    assert remote == ROOT / "plugin" / "remote", "inside plugin/: the sdist and every checkout copy carry it"
    launcher = remote / "bin" / "keymem-hook"
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n") and launcher.stat().st_mode & 0o111
    assert subprocess.run(["sh", "-n", str(launcher)]).returncode == 0
    # it asks the remote server only (never a local daemon), says nothing and never fails
    assert '"$keymem" hook --remote 2>/dev/null\nexit 0\n' in text
    if shutil.which("shellcheck"):
        checked = subprocess.run(["shellcheck", str(launcher)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout
    # one skill text for both
    assert (remote / "skills" / "keymem" / "SKILL.md").read_bytes() == (
        ROOT / "plugin" / "skills" / "keymem" / "SKILL.md").read_bytes()


@pytest.mark.parametrize("plugin", server_plugin_dirs(), ids=lambda p: p.name)
def test_mcp_server_config(plugin: Path) -> None:
    servers = load(plugin / ".mcp.json")["mcpServers"]
    keymem = servers["keymem"]
    # Claude Code substitutes ${CLAUDE_PLUGIN_ROOT}; Codex does not, and starts it in the plugin root (cwd).
    assert keymem["command"] == "sh" and keymem["args"][0] == "-c" and keymem["cwd"] == "."
    assert keymem["args"][1] == 'r="${CLAUDE_PLUGIN_ROOT}"; [ -d "$r" ] || r=.; exec "$r/bin/keymem-run" "$@"'
    assert (plugin / "bin" / "keymem-run").is_file()
    assert keymem["env"]["KEYMEM_HOOK_INSTALLED"] == "true"
    # the model is the user's choice (the config file, `keymem init`), never the plugin's
    assert not {"EMBEDDING_BACKEND", "LOCAL_EMBEDDING_MODEL", "LOCAL_EMBEDDING_MODEL_PATH"} & set(keymem["env"])


@pytest.mark.parametrize("plugin", plugin_dirs(), ids=lambda p: p.name)
def test_hook_config(plugin: Path) -> None:
    hooks = load(plugin / "hooks" / "hooks.json")["hooks"]
    assert list(hooks) == ["UserPromptSubmit"]
    (group,) = hooks["UserPromptSubmit"]
    (hook,) = group["hooks"]
    name = load(plugin / ".claude-plugin" / "plugin.json")["name"]
    assert hook["type"] == "command" and hook["command"].endswith(HOOK_EXEC[name])
    assert hook["command"].startswith('r="${CLAUDE_PLUGIN_ROOT}";')
    assert hook["timeout"] * 1000 > 9000, "the hook's own budget (KEYMEM_HOOK_TIMEOUT_MS=9000) must fit"


@pytest.mark.parametrize("plugin", plugin_dirs(), ids=lambda p: p.name)
def test_skill_carries_the_protocol(plugin: Path) -> None:
    skills = list((plugin / "skills").glob("*/SKILL.md"))
    assert [s.parent.name for s in skills] == ["keymem"]
    text = skills[0].read_text(encoding="utf-8")
    front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert front, "SKILL.md needs YAML front matter"
    fields = dict(line.split(": ", 1) for line in front.group(1).splitlines())
    assert fields["name"] == "keymem" and len(fields["description"]) > 50
    for rule in PROTOCOL_RULES:
        assert f"- {rule}" in text, rule


def test_docs_cover_every_client() -> None:
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for needle in ("~/.keymem/venv/bin/keymem", "uvx --from /path/to/clone keymem", "claude mcp add --scope user keymem",
                   "codex mcp add keymem",
                   "claude_desktop_config.json", "UserPromptSubmit", "keymem daemon --status", "KEYMEM_DAEMON=off",
                   "[[hooks.UserPromptSubmit]]", "/plugin marketplace add"):
        assert needle in doc, needle


def test_no_document_gives_the_unpublished_package_as_a_working_command() -> None:
    """keymem is not on a package index yet: no agent configuration may run it from there, and each
    mention of the index route says it is not published."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "plugin").rglob("*.md"))]
    unpublished = re.compile(r"(?:uvx|pipx run|pipx install|uv tool install) keymem\b|-- uvx keymem|\"uvx\"")
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for paragraph in re.split(r"\n\s*\n", text):
            if unpublished.search(paragraph):
                assert re.search(r"not\s+(?:on\s+a\s+package\s+index|published)|none\s+is\s+published|once\s[\s\S]*"
                                 r"published", paragraph), f"{doc.relative_to(ROOT)}: {paragraph[:300]}"
        assert "LOCAL_EMBEDDING_MODEL=bge-m3 -- " not in text and "--env LOCAL_EMBEDDING_MODEL" not in text


def test_docs_describe_this_project_only() -> None:
    """No user-facing document sends readers to another project's commands or calls keymem a replacement."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "plugin").rglob("*.md"))]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for needle in ("original project", "the original's", "npx -y keymem", "keymem-shim",
                       "github.com/donggyun112", "add donggyun112/keymem"):
            assert needle not in text, f"{doc.relative_to(ROOT)}: {needle!r}"
