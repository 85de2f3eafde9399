"""The engine under the store, and moving a store written by another engine to it.

keymem stores its graph in LadybugDB (``ladybug``, pinned in pyproject.toml), the maintained
continuation of Kuzu. A store file names its engine and storage version in its first bytes
(``KUZU`` or ``LBUG``, then one version byte); an engine refuses files of another format
and leaves them unchanged. Stores written by keymem 0.1 (Kuzu 0.11.3, ``keymem.kuzu``) and by
a LadybugDB with another storage version are moved by :func:`upgrade`:

1. the old files are copied into ``backups/`` (the copy is what the export reads: the
   original is never opened);
2. the engine that wrote the store exports it (``EXPORT DATABASE``, Parquet) in a child
   process (:func:`_export_main`), which also digests every node, edge and key vector;
3. this engine imports the export into a new file beside the store, digests it again and
   refuses the result unless both digests are equal;
4. the new file replaces the store with one rename, and the old files move into the backup.

A crash at any step leaves the old store as it was (the new file is only renamed in at the
end) and the next open starts over. ``keymem migrate`` runs it by hand; the daemon runs it at
its first open of a store that needs it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keymem.errors import StoreError

log = logging.getLogger("keymem.store")

ENGINE = "ladybug"
ENGINE_VERSION = "0.22.0"  # pyproject.toml pins it: storage versions differ between releases
STORAGE_VERSION = 0x31  # the version byte LadybugDB 0.22.0 writes after "LBUG" (tests/store/test_engine.py)
EXPLORER_IMAGE = "ghcr.io/ladybugdb/explorer:latest"  # LadybugDB's Explorer (reads the snapshot, LBUG_FILE)
LEGACY_NAME = "keymem.kuzu"  # the store file of keymem 0.1 (Kuzu 0.11.3)
KUZU_STORAGE_VERSION = 0x27  # what Kuzu 0.11.3 writes after "KUZU"


@dataclass(frozen=True)
class FileFormat:
    engine: str  # "kuzu" or "ladybug"
    storage_version: int

    def __str__(self) -> str:
        name = "Kuzu" if self.engine == "kuzu" else "LadybugDB"
        return f"{name} (storage version {self.storage_version})"


def file_format(path: Path) -> FileFormat | None:
    """The engine and storage version a store file was written with; None if it is no store file."""
    try:
        with open(path, "rb") as f:
            head = f.read(5)
    except OSError:
        return None
    if len(head) < 5:
        return None
    engine = {b"KUZU": "kuzu", b"LBUG": "ladybug"}.get(head[:4])
    return FileFormat(engine, head[4]) if engine else None


def current() -> FileFormat:
    return FileFormat(ENGINE, STORAGE_VERSION)


def pending(db_path: Path) -> tuple[Path, FileFormat] | None:
    """The store file that needs moving to this engine, with its format; None if nothing does."""
    legacy = db_path.with_name(LEGACY_NAME)
    if not db_path.exists() and legacy.is_file() and (fmt := file_format(legacy)) and fmt.engine == "kuzu":
        return legacy, fmt
    fmt = file_format(db_path)
    if fmt is not None and fmt != current():
        return db_path, fmt
    return None


def engine_module(fmt: FileFormat) -> str:
    return "kuzu" if fmt.engine == "kuzu" else "ladybug"


def upgrade(db_path: Path, *, engine_path: Path | None = None, timeout: float = 3600.0) -> dict[str, Any] | None:
    """Move the store under ``db_path`` to this engine (steps in the module docstring); None if not needed.

    ``engine_path`` is a directory holding the engine package that wrote the store (``pip install
    --target DIR ladybug==X``), put first on the export process's path; Kuzu 0.11.3 is a dependency
    of keymem and needs none.
    """
    found = pending(db_path)
    if found is None:
        return None
    src, fmt = found
    if fmt.engine == "ladybug" and fmt.storage_version > STORAGE_VERSION:
        raise StoreError(f"the store {src} was written by a newer LadybugDB ({fmt}) than this keymem's "
                         f"{ENGINE} {ENGINE_VERSION}; upgrade keymem")
    started = time.monotonic()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    backup = db_path.parent / "backups" / f"{src.name}.bak.{stamp}.pre-{ENGINE}-{ENGINE_VERSION}"
    work = db_path.parent / f".{db_path.name}.upgrade"
    shutil.rmtree(work, ignore_errors=True)
    try:
        backup.mkdir(parents=True, mode=0o700)
        originals = [p for p in (src, src.with_name(src.name + ".wal")) if p.is_file()]
        for p in originals:
            shutil.copyfile(p, backup / p.name)
            os.chmod(backup / p.name, 0o600)
        (work / "old").mkdir(parents=True, mode=0o700)
        (work / "new").mkdir(mode=0o700)
        # The export reads a copy: an engine replaying a WAL writes to the file it opens.
        for p in originals:
            shutil.copyfile(p, work / "old" / p.name)
        old = _export(work / "old" / src.name, work / "export", fmt, engine_path, timeout)
        new_file = work / "new" / db_path.name
        try:
            new = _import(new_file, work / "export")
        except RuntimeError as exc:  # the engine's own error: the old store stays as it was
            raise StoreError(f"could not import the exported store into {ENGINE} {ENGINE_VERSION}: {exc}") from exc
        if new["digest"] != old["digest"]:
            raise StoreError(f"the store moved to {ENGINE} does not match the original "
                             f"({old['digest']['counts']} vs {new['digest']['counts']})")
        os.chmod(new_file, 0o600)
        with contextlib.suppress(FileNotFoundError):
            db_path.with_name(db_path.name + ".wal").unlink()
        os.replace(new_file, db_path)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(work, ignore_errors=True)
    for p in originals:  # the backup holds them
        if p != db_path:
            with contextlib.suppress(OSError):
                p.unlink()
    if src == db_path:
        with contextlib.suppress(OSError):
            src.with_name(src.name + ".wal").unlink()
    report = {"from": str(fmt), "to": str(current()), "store": str(db_path), "backup": str(backup),
              "counts": old["digest"]["counts"], "seconds": round(time.monotonic() - started, 2)}
    log.warning("moved the store %s from %s to %s in %.1f s; the old files are in %s",
                db_path, fmt, current(), report["seconds"], backup)
    return report


def _export(src: Path, dest: Path, fmt: FileFormat, engine_path: Path | None, timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    if engine_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(engine_path), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "keymem.store.engine", engine_module(fmt), str(src), str(dest)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StoreError(f"exporting the store {src.name} took longer than {timeout:.0f} s") from exc
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        hint = ""
        if fmt.engine == "ladybug":
            hint = (f" It was written by another LadybugDB release ({fmt}): install that release into a directory "
                    "(`pip install --target DIR ladybug==VERSION`) and run `keymem migrate --engine-path DIR`.")
        raise StoreError(f"could not export the store {src.name} with {engine_module(fmt)}: {tail}.{hint}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _import(dest: Path, export_dir: Path) -> dict[str, Any]:
    import ladybug

    db = ladybug.Database(str(dest), auto_checkpoint=False)
    conn = ladybug.Connection(db)
    try:
        conn.execute(f"IMPORT DATABASE '{_literal(export_dir)}'")  # the engine takes no parameter here
        conn.execute("CHECKPOINT")
        return {"digest": digest(conn)}
    finally:
        conn.close()
        db.close()


_ENGINE_KIND = re.compile(r"^([A-Z][A-Za-z]*) exception: ")
_PARSE_POSITION = re.compile(r"\(line: (\d+), offset: (\d+)\)\n\"(.*)\"(?:\n|$)")
_NOT_INSTALLED = re.compile(r"Extension: (\w+) is an official extension and has not been installed")
_READ_ONLY = ("read-only database", "read-only transaction")


def engine_message(error: BaseException | str) -> str:
    """What the engine said, in keymem's words: one line, without LadybugDB's exception class
    ("Binder exception: ..."), a syntax error as its line, offset and the text there."""
    text = str(error).strip()
    kind = _ENGINE_KIND.match(text)
    body = text[kind.end():] if kind else text
    if (ext := _NOT_INSTALLED.search(body)) is not None:
        return f"LadybugDB's {ext.group(1).upper()} extension is not installed"
    if any(words in body for words in _READ_ONLY):
        return "the store is open read-only here, and the statement would change it"
    if kind is not None and kind.group(1) == "Parser" and (at := _PARSE_POSITION.search(body)) is not None:
        line, offset, shown = int(at.group(1)), int(at.group(2)), at.group(3)
        near = " ".join(shown[offset:].split())
        where = f'near "{near[:40]}{"…" if len(near) > 40 else ""}"' if near else "at the end of the statement"
        return f"Cypher syntax error at line {line}, offset {offset}: {where}"
    return " ".join(" ".join(body.split("\n")).split()) or "LadybugDB gave no reason"


def cypher_literal(text: str, what: str) -> str:
    """``text`` for a quoted literal in a statement the engine takes no parameter in (IMPORT,
    EXPORT, INSTALL ... FROM): refused when it holds a quote or a backslash."""
    if "'" in text or "\\" in text:
        raise StoreError(f"{what} cannot hold a quote or a backslash: {text}")
    return text


def _literal(path: Path) -> str:
    return cypher_literal(str(path), "the data dir's path, for a store move,")


def digest(conn: Any) -> dict[str, Any]:
    """Row counts per table and one sha256 over every node, edge and key vector (either engine).

    On a bare connection, so both sides of a move of the file are digested alike: every row as the
    engine orders it, with each schema step's time. (:func:`keymem.admin.invariants.store_digest`, the
    digest across engines, orders rows itself and leaves that bookkeeping out.)
    """
    import hashlib

    import numpy as np

    from keymem.store import cypher

    counts: dict[str, int] = {}
    h = hashlib.sha256()

    def rows(name: str) -> Any:
        result = conn.execute(cypher.load(name).text)
        names = result.get_column_names()
        while result.has_next():
            yield dict(zip(names, result.get_next(), strict=True))

    def feed(label: str, row: dict[str, Any]) -> None:
        counts[label] = counts.get(label, 0) + 1
        clean = {k: v for k, v in row.items() if not k.startswith("_") and v is not None}
        h.update(json.dumps([label, clean], sort_keys=True, default=repr).encode("utf-8"))

    tables = {r[0] for r in conn.execute(cypher.load("engine/tables").text).get_all()}
    for r in rows("invariants/digest_nodes"):
        feed(r["label"], r["n"])
    for r in rows("invariants/digest_rels"):
        feed(r["label"], {**r["r"], "src": r["src"], "dst": r["dst"]})
    if "KeyVec" in tables:
        for r in rows("invariants/digest_vecs"):
            feed("KeyVec", {"id": r["id"], "namespace": r["namespace"]})
            h.update(np.asarray(r["vec"], dtype=np.float32).tobytes())
    return {"counts": dict(sorted(counts.items())), "sha256": h.hexdigest()}


def _export_main(module: str, src: str, dest: str) -> None:
    """Child process: open ``src`` with ``module`` (the engine that wrote it), digest it, export it to ``dest``.

    The HNSW index (stores past ``KEYMEM_VECTOR_INDEX_MIN_KEYS`` keys) is dropped from the copy
    first: its extension may not exist for this engine; keymem builds it again where it can.
    """
    import importlib

    engine = importlib.import_module(module)
    db = engine.Database(src, auto_checkpoint=False)
    conn = engine.Connection(db)
    try:
        from keymem.store import cypher

        with contextlib.suppress(Exception):
            for row in conn.execute(cypher.load("engine/indexes").text).get_all():
                if row[0] == "KeyVec":
                    conn.execute(cypher.load("vectors/drop_index").text)
        conn.execute("CHECKPOINT")
        result = {"digest": digest(conn)}
        conn.execute(f"EXPORT DATABASE '{_literal(Path(dest))}'")
    finally:
        conn.close()
        db.close()
    print(json.dumps(result))


if __name__ == "__main__":  # python -m keymem.store.engine MODULE SRC DEST (see _export)
    _export_main(*sys.argv[1:4])
