"""docker/Dockerfile for real: build the image, run the daemon in a container, use it from an MCP client.

Slow, and only where a Docker engine answers: the image is built from ``KEYMEM_DOCKER_BASE``
(default ``python:3.11-slim``; ``docker/base-from-debian.sh`` makes one from Debian packages
where Docker Hub cannot be reached). The container runs the shipped CMD with the test model
mounted read-only; a real MCP client runs ``docker exec -i <container> keymem`` (the stdio server
inside the container, bridged to its daemon), remembers and recalls; ``keymem snapshot`` writes
the snapshot Explorer would open, which is then read on the host with Kuzu.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"docker {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def image() -> str:
    if shutil.which("docker") is None or docker("info", check=False, timeout=30).returncode != 0:
        pytest.skip("no Docker engine answers here")
    base = os.environ.get("KEYMEM_DOCKER_BASE", "python:3.11-slim")
    tag = f"keymem-test:{uuid.uuid4().hex[:8]}"
    docker("build", "--network", "host", "--build-arg", f"BASE={base}", "-f", "docker/Dockerfile", "-t", tag,
           str(ROOT), timeout=1200)
    yield tag
    docker("rmi", "-f", tag, check=False)


def test_image_runs_the_daemon_and_serves_an_mcp_client(image: str, minilm_dir: Path, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    name = f"keymem-test-{uuid.uuid4().hex[:8]}"
    snap = tmp_path / "snapshot"
    snap.mkdir(mode=0o777)
    snap.chmod(0o777)  # the container's user (uid 1000) writes the snapshot here
    model = tmp_path / "model"
    shutil.copytree(minilm_dir, model)  # resolves the symlinked model.onnx: the mount needs the file
    for path in (model, *model.iterdir()):  # readable by the container's user
        path.chmod(0o755 if path.is_dir() else 0o644)
    for parent in (tmp_path, *tmp_path.parents):  # pytest's tmp dirs are owner-only
        if parent == Path("/tmp") or parent == parent.parent:
            break
        parent.chmod(parent.stat().st_mode | 0o011)
    docker("run", "-d", "--name", name, "-v", f"{model}:/models/minilm:ro", "-v", f"{snap}:/snapshot",
           "-e", "EMBEDDING_BACKEND=local", "-e", "LOCAL_EMBEDDING_MODEL=minilm",
           "-e", "LOCAL_EMBEDDING_MODEL_PATH=/models/minilm", image)
    try:
        deadline = time.monotonic() + 120
        status = docker("exec", name, "keymem", "daemon", "--status", check=False)
        while "ready" not in status.stdout and time.monotonic() < deadline:
            time.sleep(1)
            status = docker("exec", name, "keymem", "daemon", "--status", check=False)
        assert "ready" in status.stdout, status.stdout + status.stderr
        assert "embedding: local:minilm" in status.stdout

        async def session() -> tuple[dict[str, object], dict[str, object]]:
            server = StdioServerParameters(command="docker", args=["exec", "-i", name, "keymem"])
            async with Client(server, mode="legacy") as c:
                r = await c.call_tool("remember", {"content": "the user likes strawberries",
                                                   "keys": ["strawberry", "fruit"]})
                assert not r.is_error, r.content
                found = await c.call_tool("recall", {"query": "fruit"})
                return r.structured_content, found.structured_content  # type: ignore[return-value]

        remembered, recalled = asyncio.run(session())
        assert recalled["memory"]["memory_id"] == remembered["memory_id"]  # type: ignore[index]

        out = docker("exec", name, "keymem", "snapshot", "/snapshot", "--force")
        assert "snapshot written" in out.stdout
        import ladybug

        db = ladybug.Database(str(snap / "keymem.lbug"), read_only=True)
        try:
            rows = ladybug.Connection(db).execute("MATCH (m:Memory) RETURN m.content").get_all()  # type: ignore[union-attr]
        finally:
            db.close()
        assert rows == [["the user likes strawberries"]]
    finally:
        logs = docker("logs", name, check=False)
        docker("rm", "-f", name, check=False)
        print(logs.stdout[-2000:], logs.stderr[-2000:])
