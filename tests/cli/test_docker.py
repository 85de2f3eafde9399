"""docker/: the Dockerfile's instructions and the compose file parse and say what the docs say.

No Docker engine runs in CI; `docker compose config` is run when a compose client exists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

DOCKER = Path(__file__).resolve().parents[2] / "docker"
INSTRUCTIONS = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "VOLUME", "HEALTHCHECK", "ENTRYPOINT", "CMD",
                "EXPOSE", "ARG", "LABEL"}


def _instructions() -> list[tuple[str, str]]:
    out, pending = [], ""
    for raw in (DOCKER / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        word, _, rest = pending.partition(" ")
        out.append((word, rest))
        pending = ""
    assert not pending, "a continued line never ends"
    return out


def test_dockerfile_instructions() -> None:
    steps = _instructions()
    assert {w for w, _ in steps} <= INSTRUCTIONS
    # The base is a build argument whose default is the official Python image.
    assert steps[0] == ("ARG", "BASE=python:3.11-slim")
    assert steps[1] == ("FROM", "${BASE}")
    assert [w for w, _ in steps].count("FROM") == 1
    runs = " ".join(r for w, r in steps if w == "RUN")
    assert 'pip install ".${KEYMEM_EXTRAS}"' in runs  # the extras a compose file asks for (compose.scale.yaml)
    assert ("ARG", 'KEYMEM_EXTRAS=""') in steps
    copies = [r.split()[0] for w, r in steps if w == "COPY"]
    for src in copies:
        if src != "pyproject.toml":
            assert (DOCKER.parent / src).exists(), src
    assert ("VOLUME", '["/data"]') in steps
    assert ("CMD", '["daemon", "--foreground", "--idle-exit", "0"]') in steps
    assert ("ENTRYPOINT", '["keymem"]') in steps


def test_compose_file() -> None:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    keymem, explorer = doc["services"]["keymem"], doc["services"]["explorer"]
    assert keymem["build"]["dockerfile"] == "docker/Dockerfile"
    assert "keymem-data:/data" in keymem["volumes"]
    assert explorer["image"] == "ghcr.io/ladybugdb/explorer:latest"
    assert explorer["environment"] == {"LBUG_FILE": "keymem.lbug", "MODE": "READ_ONLY"}
    assert "snapshot:/database" in explorer["volumes"] and "snapshot:/snapshot" in keymem["volumes"]
    client = shutil.which("docker-compose")
    if client:
        out = subprocess.run([client, "-f", str(DOCKER / "compose.yaml"), "config", "-q"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr


def _front_options(command: list[str]) -> tuple[list[str], list[str]]:
    """A keymem command line's subcommands and its --options."""
    words = [w for w in command if not w.startswith("-") and ":" not in w]
    return words, [w for w in command if w.startswith("--")]


def test_scale_compose_file() -> None:
    """compose.scale.yaml: a FalkorDB primary, a replica and a Sentinel from the official image, and two
    keymem fronts with their own data volumes on one Sentinel URL. Docker does not run here, so the file
    is checked against what keymem accepts: its commands and options, its settings, its URL parser."""
    yaml = pytest.importorskip("yaml")
    import tomllib

    from typer.testing import CliRunner

    from keymem.cli.main import app
    from keymem.engine_url import parse_store_url
    from keymem.settings import env_names

    doc = yaml.safe_load((DOCKER / "compose.scale.yaml").read_text())
    services = doc["services"]
    primary, replica, sentinel = services["falkordb-primary"], services["falkordb-replica"], services["sentinel"]
    for server in (primary, replica, sentinel):
        image = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", server["image"])  # the default of ${VAR:-default}
        assert image.split(":")[0] == "falkordb/falkordb", image
    for server in (primary, replica):
        assert "--loadmodule" in server["command"] and "--appendonly" in server["command"]
    at = replica["command"].index("--replicaof")
    assert replica["command"][at + 1: at + 3] == ["falkordb-primary", "6379"]
    conf = sentinel["command"][0]
    monitor = next(line.split() for line in conf.splitlines() if line.strip().startswith("sentinel monitor"))
    assert monitor[3:5] == ["falkordb-primary", "6379"]

    fronts = [services["front-a"], services["front-b"]]
    extras = tomllib.loads((DOCKER.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    known_env = set(env_names())
    urls, volumes, ports = set(), set(), set()
    for front in fronts:
        build_extra = front["build"]["args"]["KEYMEM_EXTRAS"].strip("[]")
        assert build_extra in extras, build_extra
        words, options = _front_options(front["command"])
        helped = CliRunner().invoke(app, [*words, "--help"], terminal_width=200)
        assert helped.exit_code == 0, helped.output
        for option in options:
            assert option in helped.output, (words, option)
        for name in front["environment"]:
            assert not name.startswith("KEYMEM_") or name in known_env, name
        url = parse_store_url(front["environment"]["KEYMEM_STORE_URL"])
        assert url.master == monitor[2]  # the name the Sentinel monitors
        assert ("sentinel", 26379) in url.sentinels
        assert int(front["environment"]["KEYMEM_FALKORDB_ACK_REPLICAS"]) == 1  # the one replica holds each write
        token_file = front["environment"]["KEYMEM_HTTP_TOKEN_FILE"]
        assert token_file == "/run/secrets/keymem_tokens" and "keymem_tokens" in front["secrets"]
        urls.add(url)
        volumes.update(v for v in front["volumes"] if v.endswith(":/data"))
        ports.update(front["ports"])
    assert len(urls) == 1 and len(volumes) == 2 and len(ports) == 2  # one store, a data dir each, a port each
    client = shutil.which("docker-compose")
    if client:
        out = subprocess.run([client, "-f", str(DOCKER / "compose.scale.yaml"), "config", "-q"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
