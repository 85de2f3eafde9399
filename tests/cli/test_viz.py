"""keymem viz: the neighbourhood data, and the page rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from keymem.cli import ops
from keymem.cli.viz import render_html
from tests.cli.conftest import run_cli


def test_neighbourhood_marks_hubs_stale_and_chains(graph: Any, populated: dict[str, str]) -> None:
    data = ops.viz_data(graph, {"key": "python", "hops": 2, "namespace": "default"})
    nodes = {n["id"]: n for n in data["nodes"]}
    keys = {n["label"]: n for n in nodes.values() if n["kind"] == "key"}
    assert keys["python"]["hub"] is True and keys["python"]["memories"] == 3
    assert keys["version"]["hub"] is False
    assert nodes[populated["old"]]["status"] == "superseded" and nodes[populated["old"]]["stale"]
    assert not nodes[populated["new"]]["stale"]
    assert {"source": populated["new"], "target": populated["old"], "kind": "supersedes", "weight": 1.0} in data["edges"]
    assert all(n["namespace"] == "default" for n in nodes.values())
    assert populated["work"] not in nodes
    links = [e for e in data["edges"] if e["kind"] == "link"]
    assert links and all(e["weight"] > 0 for e in links)
    # one hop from a leaf key reaches only its own memories' keys
    small = ops.viz_data(graph, {"key": "tooling", "hops": 1})
    assert {n["label"] for n in small["nodes"] if n["kind"] == "key"} == {"tooling", "python"}
    with pytest.raises(Exception, match="no key named"):
        ops.viz_data(graph, {"key": "nothing-like-this"})


def test_page_is_self_contained(graph: Any, populated: dict[str, str]) -> None:
    page = render_html(ops.viz_data(graph, {}))
    assert "cytoscape" in page and "<script src" not in page and "http://" not in page.split("<script>")[0]
    assert page.count("</script>") == 2


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_page_renders_in_headless_chromium(store_env: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "graph.html"
    out = run_cli(["viz", "--key", "python", "--hops", "2", "-o", str(page)], store_env["env"])
    assert out.returncode == 0, out.stderr
    counts = re.search(r"(\d+) keys, (\d+) memories", out.stdout)
    assert counts, out.stdout
    expected = int(counts.group(1)) + int(counts.group(2))
    browser = _chromium()
    assert browser
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--window-size=1200,800"]
    dom = subprocess.run([*flags, f"--user-data-dir={tmp_path / 'p1'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90)
    match = re.search(r'id="status" data-rendered="(\d+)"', dom.stdout)
    assert match, dom.stderr[-2000:]
    assert int(match.group(1)) == expected > 5
    assert f"<title>keymem graph: {expected} nodes</title>" in dom.stdout
    shot = tmp_path / "graph.png"
    subprocess.run([*flags, f"--user-data-dir={tmp_path / 'p2'}", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, text=True, timeout=90)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a drawn graph, not a blank page
