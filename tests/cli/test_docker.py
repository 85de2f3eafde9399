"""docker/: the Dockerfile's instructions and the compose file parse and say what the docs say.

No Docker engine runs in CI; `docker compose config` is run when a compose client exists.
"""

from __future__ import annotations

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
    assert "pip install ." in runs
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
