"""Moving a keymem 0.1 store (Kuzu 0.11.3) to LadybugDB, and the VECTOR extension commands.

The store under tests/fixtures/kuzu-0.1 was written by keymem 0.1.0 itself, its last write
only in the write-ahead log (see its README); the move must reproduce its digest exactly.
"""

from __future__ import annotations

import functools
import http.server
import json
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keymem.errors import StoreError
from keymem.settings import Settings
from keymem.store import engine
from tests.cli.conftest import cli_env, run_cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kuzu-0.1"


def _legacy_store(settings: Settings) -> dict[str, Any]:
    settings.data_dir.mkdir(parents=True, mode=0o700)
    with tarfile.open(FIXTURE / "store.tar.gz") as tar:
        tar.extractall(settings.data_dir, filter="data")
    return json.loads((FIXTURE / "digest.json").read_text())


def _digest(path: Path) -> dict[str, Any]:
    import ladybug

    db = ladybug.Database(str(path), read_only=True)
    conn = ladybug.Connection(db)
    try:
        return engine.digest(conn)
    finally:
        conn.close()
        db.close()


def test_a_fresh_store_has_the_pinned_storage_version(tmp_path: Path) -> None:
    import ladybug

    path = tmp_path / "fresh.lbug"
    ladybug.Database(str(path)).close()
    assert engine.file_format(path) == engine.current()
    assert ladybug.__version__ == engine.ENGINE_VERSION  # pyproject.toml pins the release


def test_keymem_migrate_moves_a_0_1_store_with_an_identical_digest(settings: Settings, minilm_dir: Path) -> None:
    expected = _legacy_store(settings)
    env = cli_env(settings, minilm_dir)
    legacy = settings.data_dir / engine.LEGACY_NAME
    assert engine.pending(settings.db_path) == (legacy, engine.FileFormat("kuzu", engine.KUZU_STORAGE_VERSION))

    doctor = run_cli(["doctor"], env)
    assert doctor.returncode == 1 and "keymem migrate" in doctor.stderr

    out = run_cli(["migrate"], env)
    assert out.returncode == 0, out.stderr
    assert "Memory 25" in out.stdout and "backups" in out.stdout
    assert not legacy.exists() and not legacy.with_name(legacy.name + ".wal").exists()
    backup = next((settings.data_dir / "backups").glob("keymem.kuzu.bak.*"))
    assert sorted(p.name for p in backup.iterdir()) == ["keymem.kuzu", "keymem.kuzu.wal"]
    assert engine.file_format(settings.db_path) == engine.current()
    assert _digest(settings.db_path) == expected  # the write that lived only in Kuzu's WAL came along

    again = run_cli(["migrate"], env)
    assert again.returncode == 0 and "nothing to move" in again.stdout

    from keymem.memory.graph import MemoryGraph

    g = MemoryGraph.open(settings, reranker=None, progress=False)
    try:
        hits = g.recall_direct(query="Where did Mira move?", top_k=3, reinforce=False).dump()
        assert "Lisbon" in json.dumps(hits)
        assert g.meta("engine") == f"{engine.ENGINE} {engine.ENGINE_VERSION}"
        from keymem.admin.invariants import check_invariants

        assert check_invariants(g) == []
    finally:
        g.close()


def test_the_first_open_moves_a_0_1_store(settings: Settings, minilm_embedder: Any) -> None:
    from keymem.memory.graph import MemoryGraph

    _legacy_store(settings)
    g = MemoryGraph.open(settings, embedder=minilm_embedder, reranker=None, progress=False)
    try:
        assert g.counts()["memories"] >= 24
    finally:
        g.close()
    assert engine.pending(settings.db_path) is None
    assert list((settings.data_dir / "backups").glob("keymem.kuzu.bak.*"))


def test_a_direct_open_of_a_0_1_store_names_the_command(settings: Settings) -> None:
    from keymem.store.db import Store

    _legacy_store(settings)
    with pytest.raises(StoreError, match="keymem migrate"):
        Store(settings.db_path, buffer_pool_mb=64, read_only=True)
    assert (settings.data_dir / engine.LEGACY_NAME).is_file()  # untouched


def test_a_failed_move_leaves_the_store_as_it_was(settings: Settings) -> None:
    _legacy_store(settings)
    legacy = settings.data_dir / engine.LEGACY_NAME
    before = legacy.read_bytes()
    with pytest.raises(StoreError, match="could not export"):
        _upgrade_with_broken_engine(settings)
    assert legacy.read_bytes() == before and not settings.db_path.exists()
    assert not list(settings.data_dir.glob(".keymem.lbug.upgrade"))


def _upgrade_with_broken_engine(settings: Settings) -> None:
    # A directory first on the export process's path whose `kuzu` cannot open anything.
    fake = settings.data_dir.parent / "broken-engine"
    (fake / "kuzu").mkdir(parents=True)
    (fake / "kuzu" / "__init__.py").write_text("raise ImportError('this engine is broken')\n")
    engine.upgrade(settings.db_path, engine_path=fake)


# -- extensions ------------------------------------------------------------------------------------


class _Repo(http.server.SimpleHTTPRequestHandler):
    requested: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).requested.append(self.path)
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def extension_repo(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A loopback stand-in for LadybugDB's extension server, serving files from a directory."""
    root = tmp_path / "repo"
    root.mkdir()
    requested: list[str] = []
    handler = type("Repo", (_Repo,), {"requested": requested})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", root, requested
    finally:
        server.shutdown()
        server.server_close()


def test_extensions_download_reports_a_missing_extension(settings: Settings, minilm_dir: Path, tmp_path: Path,
                                                         extension_repo: tuple[str, Path, list[str]]) -> None:
    url, _root, requested = extension_repo
    env = cli_env(settings, minilm_dir, HOME=str(tmp_path / "home"), KEYMEM_EXTENSION_REPO=url)
    out = run_cli(["extensions", "download"], env)
    assert out.returncode == 1
    assert "could not download the VECTOR extension" in out.stderr and "exact scan" in out.stderr
    assert requested == [f"/v{engine.ENGINE_VERSION}/linux_amd64/vector/libvector.lbug_extension"]


def test_extensions_download_refuses_a_file_that_does_not_load(settings: Settings, minilm_dir: Path, tmp_path: Path,
                                                               extension_repo: tuple[str, Path, list[str]]) -> None:
    url, root, requested = extension_repo
    served = root / f"v{engine.ENGINE_VERSION}" / "linux_amd64" / "vector" / "libvector.lbug_extension"
    served.parent.mkdir(parents=True)
    served.write_bytes(b"not a shared object")
    home = tmp_path / "home"
    env = cli_env(settings, minilm_dir, HOME=str(home))
    out = run_cli(["extensions", "download", "--repo", url], env)
    assert out.returncode == 1 and "downloaded but does not load" in out.stderr, out.stderr
    assert requested and list(home.rglob("libvector.lbug_extension"))  # the engine wrote it where it loads from
    status = run_cli(["extensions", "status"], env)
    assert status.returncode == 0 and "exact scan at every size" in status.stdout


# -- another LadybugDB release -------------------------------------------------------------------------
OLD_LADYBUG = "0.19.1"  # storage version 43 (0.22.0 writes 49)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_store_of_an_older_ladybug_release_moves_with_a_backup(settings: Settings, minilm_dir: Path,
                                                                 tmp_path: Path) -> None:
    """LadybugDB 0.19.1 (installed from the package index into a directory) writes a keymem store;
    `keymem migrate --engine-path DIR` moves it to the pinned release with an identical digest."""
    import subprocess
    import sys

    engine_dir = tmp_path / f"ladybug-{OLD_LADYBUG}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(engine_dir),
                          f"ladybug=={OLD_LADYBUG}"], capture_output=True, text=True, timeout=300)
    if pip.returncode != 0:
        pytest.skip(f"ladybug {OLD_LADYBUG} could not be installed from the package index: {pip.stderr[-300:]}")
    settings.data_dir.mkdir(parents=True, mode=0o700)
    write = ("import sys; from pathlib import Path; import ladybug\n"
             f"assert ladybug.__version__ == '{OLD_LADYBUG}', ladybug.__version__\n"
             "from keymem.store import migrations\nfrom keymem.store.db import Store\n"
             "s = Store(Path(sys.argv[1]), buffer_pool_mb=64)\n"
             "migrations.migrate.__globals__['_record_engine'] = lambda store: None\n"
             "migrations.migrate(s)\n"
             "with s.write() as tx:\n"
             "    tx.run('meta/set', name='written_by', value=ladybug.__version__)\n"
             "s.close()\n")
    env = {**cli_env(settings, minilm_dir), "PYTHONPATH": str(engine_dir)}
    made = subprocess.run([sys.executable, "-c", write, str(settings.db_path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    old = engine.file_format(settings.db_path)
    assert old is not None and old.engine == "ladybug" and old != engine.current()
    assert engine.pending(settings.db_path) == (settings.db_path, old)

    out = run_cli(["migrate", "--engine-path", str(engine_dir)], cli_env(settings, minilm_dir))
    assert out.returncode == 0, out.stderr
    assert engine.file_format(settings.db_path) == engine.current()
    backup = next((settings.data_dir / "backups").glob(f"keymem.lbug.bak.*.pre-{engine.ENGINE}-*"))
    assert engine.file_format(backup / "keymem.lbug") == old  # the old file as it was
    digest = _digest(settings.db_path)
    assert digest["counts"]["Meta"] >= 2 and digest["counts"]["KeymemMigration"] >= 4
