"""The CLI's engine commands: ``keymem migrate`` and ``keymem extensions``.

``migrate`` moves a store written by another engine (keymem 0.1's Kuzu 0.11.3, or another
LadybugDB storage version) to the pinned LadybugDB, keeping the old files in ``backups/``
(keymem/store/engine.py). ``extensions download`` installs LadybugDB's VECTOR extension,
which the engine downloads instead of bundling; without it keymem searches key vectors by
an exact scan, so nothing needs it to work offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from keymem.cli.common import fail, settings_or_exit

extensions_app = typer.Typer(help="LadybugDB extensions (the HNSW vector index).", no_args_is_help=True,
                             add_completion=False)

EXTENSIONS = ("VECTOR",)  # what keymem uses; FTS, ALGO and JSON are not used


def migrate(
    engine_path: Annotated[Path | None, typer.Option(
        "--engine-path", help="Directory holding the LadybugDB release that wrote the store (pip install --target)",
        file_okay=False, exists=True)] = None,
) -> None:
    """Move a store written by Kuzu (keymem 0.1) or another LadybugDB release to this one; a backup is kept."""
    from keymem.errors import KeymemError
    from keymem.server.client import status
    from keymem.store import engine

    settings = settings_or_exit()
    found = engine.pending(settings.db_path)
    if found is None:
        typer.echo(f"{settings.db_path}: nothing to move (written by {engine.current()} or not created yet)")
        return
    if settings.daemon == "auto" and status(settings) is not None:
        raise fail("the shared daemon is running and holds the data dir",
                   fix="run `keymem daemon --stop`, then `keymem migrate` again")
    typer.echo(f"moving {found[0]} ({found[1]}) to {engine.current()} ...", err=True)
    try:
        report = engine.upgrade(settings.db_path, engine_path=engine_path)
    except KeymemError as exc:
        raise fail(str(exc), fix="the store was left as it was; see the message above") from None
    assert report is not None
    counts = ", ".join(f"{name} {n}" for name, n in report["counts"].items())
    typer.echo(f"moved in {report['seconds']} s: {counts}")
    typer.echo(f"the store is {report['store']}; the old files are kept in {report['backup']}")


def vector_status() -> tuple[bool, str]:
    """(loads, words): whether the VECTOR extension loads in this engine, checked on an in-memory database."""
    import ladybug

    from keymem.store.vectors import load_vector

    conn = ladybug.Connection(ladybug.Database())
    try:
        why = load_vector(conn.execute)
    finally:
        conn.close()
    if why is None:
        return True, "installed"
    return False, "not installed" if why.endswith("extension is not installed") else f"does not load ({why})"


@extensions_app.command("download")
def extensions_download(
    repo: Annotated[str | None, typer.Option("--repo", help="Extension server (default: KEYMEM_EXTENSION_REPO, "
                                                            "else the engine's own)")] = None,
) -> None:
    """Install LadybugDB's VECTOR extension (the HNSW key index for very large stores); needs the network once."""
    import ladybug

    from keymem.store.engine import ENGINE_VERSION, engine_message

    settings = settings_or_exit()
    repo = repo or settings.extension_repo
    conn = ladybug.Connection(ladybug.Database())
    try:
        for name in EXTENSIONS:
            statement = f"INSTALL {name}" + (f" FROM '{_quoted(repo)}'" if repo else "")
            try:
                conn.execute(statement)
            except Exception as exc:
                raise fail(f"could not download the {name} extension for LadybugDB {ENGINE_VERSION}: "
                           f"{engine_message(exc)}",
                           fix="keymem works without it (key vectors are searched by an exact scan); retry "
                               "when online, or set KEYMEM_EXTENSION_REPO to a mirror") from None
            try:
                conn.execute(f"LOAD EXTENSION {name}")
            except Exception as exc:
                raise fail(f"the {name} extension was downloaded but does not load: {engine_message(exc)}",
                           fix="check that the server serves LadybugDB " + ENGINE_VERSION + "'s build") from None
            typer.echo(f"{name}: installed and loads")
    finally:
        conn.close()


@extensions_app.command("status")
def extensions_status() -> None:
    """Whether the VECTOR extension is installed, and so which key search serves large stores."""
    loads, words = vector_status()
    typer.echo(f"VECTOR: {words}")
    typer.echo("key search: " + ("HNSW index from KEYMEM_VECTOR_INDEX_MIN_KEYS keys, exact scan below" if loads
                                 else "exact scan at every size (`keymem extensions download` adds the HNSW index)"))


def _quoted(text: str) -> str:
    from keymem.errors import StoreError
    from keymem.store.engine import cypher_literal

    try:
        return cypher_literal(text, "the extension server address")
    except StoreError as exc:
        raise fail(str(exc), code=2) from None
