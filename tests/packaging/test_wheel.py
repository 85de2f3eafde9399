"""keymem as published: the wheel ships every file keymem needs and runs from a clean venv.

The default run builds the wheel offline (hatchling from the test extra), installs it into a clean
venv with ``--no-deps`` (the dependencies already installed are visible there, see support.py),
and runs ``keymem`` from it. ``-m slow`` also runs ``.ci/dist`` (the sdist and wheel from ``python -m
build``, ``twine check``, the wheel installed into a fresh venv with its dependencies from the package
index and run) and ``uvx --from <wheel> keymem``.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.packaging.support import ROOT, build_wheel, clean_venv, pip_install, project, tool_path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def shipped(root: Path, prefix: str) -> set[str]:
    """The files under ``root`` that the wheel must hold, as wheel paths under ``prefix``."""
    return {f"{prefix}/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_wheel_holds_the_package_its_data_and_its_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"keymem-{project()['version']}.dist-info"
        meta = email.message_from_string(z.read(f"{info}/METADATA").decode("utf-8"))
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert wheel.name == f"keymem-{project()['version']}-py3-none-any.whl"
    assert shipped(ROOT / "keymem", "keymem") <= names, "every module and static file of keymem/"
    cypher = shipped(ROOT / "cypher", "keymem/cypher")
    assert len(cypher) > 100 and cypher <= names, "every Cypher statement"
    assert {"keymem/cli/static/cytoscape.min.js", "keymem/cli/static/cytoscape.LICENSE"} <= names
    assert f"{info}/licenses/LICENSE" in names
    assert not {n for n in names if n.startswith(("tests/", "bench/", "docs/", "plugin/"))}
    assert "keymem = keymem.cli.main:run" in entry_points
    assert meta["Name"] == "keymem" and meta["Version"] == project()["version"]
    assert meta["License-Expression"] == "MIT" and meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()
    assert any(u.startswith("Repository, https://") for u in meta.get_all("Project-URL"))
    assert "Programming Language :: Python :: 3.11" in meta.get_all("Classifier")
    required = {Requirement(r).name for r in meta.get_all("Requires-Dist") if "extra ==" not in r}
    assert required == {Requirement(r).name for r in project()["dependencies"]}


def test_wheel_runs_from_a_clean_venv(wheel: Path, tmp_path: Path) -> None:
    python = clean_venv(tmp_path / "venv")
    pip_install(python, str(wheel))
    venv = tmp_path / "venv"
    keymem = venv / "bin" / "keymem"
    env = {**os.environ, "KEYMEM_DATA_DIR": str(tmp_path / "data")}
    env.pop("PYTHONPATH", None)

    helped = subprocess.run([str(keymem), "--help"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert helped.returncode == 0, helped.stderr
    assert "Usage: keymem" in helped.stdout and "hook" in helped.stdout and "doctor" in helped.stdout
    version = subprocess.run([str(keymem), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert version.stdout.strip() == f"keymem {project()['version']}"

    # The keymem imported is the wheel's; its Cypher statements (from the wheel) build a real Kuzu
    # store; the graph page's library is there; every dependency it declares is satisfied.
    probe = """
import json, keymem
from importlib import metadata
from packaging.requirements import Requirement
from pathlib import Path
from keymem.cli.viz import library_js
from keymem.store.cypher import cypher_root
from keymem.store.db import Store
from keymem.store.migrations import migrate
root = cypher_root()
store = Store(Path("store.kuzu"), buffer_pool_mb=64)
steps = migrate(store)
store.close()
unmet = []
for req in map(Requirement, metadata.requires("keymem")):
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        try:
            if not req.specifier.contains(metadata.version(req.name), prereleases=True):
                unmet.append(str(req))
        except metadata.PackageNotFoundError:
            unmet.append(str(req))
print(json.dumps({"module": keymem.__file__, "cypher": str(root), "steps": steps,
                  "viz": len(library_js()), "unmet": unmet}))
"""
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert Path(found["module"]).is_relative_to(venv) and Path(found["cypher"]).is_relative_to(venv)
    assert found["steps"] == sorted(p.stem for p in (ROOT / "cypher" / "schema").glob("0*.cypher"))[1:]
    assert found["viz"] > 100_000 and found["unmet"] == []


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ci_dist_builds_checks_and_runs_the_release(tmp_path: Path) -> None:
    """The release path, .ci/dist: sdist and wheel from ``python -m build``, accepted by ``twine check
    --strict``, the wheel installed into a fresh venv (dependencies from the index) and run."""
    for module in ("build", "twine"):
        pytest.importorskip(module, reason=f"{module} is in the test extra (pip install -e '.[test]')")
    src = tmp_path / "src"
    skip = shutil.ignore_patterns(".venv", ".venv-test", ".ci-venv", ".git", "__pycache__", "*_cache", ".hypothesis")
    shutil.copytree(ROOT, src, ignore=lambda d, names: {*skip(d, names), *({"dist"} if Path(d) == ROOT else set())})
    ran = subprocess.run([str(src / ".ci" / "dist"), sys.executable], cwd=src, capture_output=True, text=True,
                         timeout=1700)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    version = project()["version"]
    assert sorted(p.name for p in (src / "dist").iterdir()) == [f"keymem-{version}-py3-none-any.whl",
                                                               f"keymem-{version}.tar.gz"]
    assert ran.stdout.count("PASSED") == 2 and "the wheel's keymem answers initialize and lists 10 tools" in ran.stdout


@pytest.mark.slow
def test_uvx_runs_the_wheel(wheel: Path, tmp_path: Path) -> None:
    """``uvx --from <wheel> keymem``: a clean tool environment, every dependency from the index."""
    env = {**os.environ, "PATH": tool_path(), "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
           "UV_TOOL_DIR": str(tmp_path / "uv-tools")}
    if not shutil.which("uvx", path=env["PATH"]):
        pytest.skip("uvx is not installed (pip install -e '.[test]' brings it)")
    out = subprocess.run(["uvx", "--from", str(wheel), "keymem", "--help"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stderr
    assert "Usage: keymem" in out.stdout
