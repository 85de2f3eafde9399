"""Fetch named models from the Hugging Face Hub into ``~/.keymem/models/<name>``.

A model directory is *complete* when its required files (model.onnx, tokenizer.json) are
there; then nothing touches the network. Otherwise only the missing files are fetched
(repair). Every file is downloaded by huggingface_hub into a private cache inside the
destination (which writes ``*.incomplete`` and renames when the size checks out) and then
renamed into place, so a crash or a cut connection can never leave a truncated model.onnx
that looks complete. Progress bars go to stderr: stdout is the MCP protocol channel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from keymem.errors import ModelError
from keymem.models.profiles import RERANKER, ModelProfile, RemoteFile

log = logging.getLogger("keymem.models")

_TMP_PREFIX = ".download-"
_DEFAULT_ENDPOINT = "https://huggingface.co"


def missing_files(files: Sequence[RemoteFile], dest: Path) -> list[RemoteFile]:
    """Files of ``files`` that ``dest`` lacks (a zero-byte file counts as missing)."""
    out = []
    for f in files:
        path = dest / f.local_name
        if not (path.is_file() and path.stat().st_size > 0):
            out.append(f)
    return out


def is_complete(files: Sequence[RemoteFile], dest: Path) -> bool:
    return not any(f.required for f in missing_files(files, dest))


def ensure_model(
    profile: ModelProfile, dest: Path, *, endpoint: str | None = None, progress: bool = True
) -> Path:
    """``dest`` holding model.onnx + tokenizer.json (+ configs) for ``profile``; downloads what is missing."""
    return ensure_files(
        profile.files(),
        Path(dest),
        what=f"embedding model {profile.name} ({profile.size_hint or 'size unknown'})",
        manual_var="LOCAL_EMBEDDING_MODEL_PATH",
        endpoint=endpoint,
        progress=progress,
    )


def ensure_reranker(dest: Path, *, endpoint: str | None = None, progress: bool = True) -> Path:
    """``dest`` holding the bge-reranker-v2-m3 quantized ONNX + tokenizer; downloads what is missing."""
    return ensure_files(
        RERANKER.files(),
        Path(dest),
        what=f"reranker {RERANKER.name} ({RERANKER.size_hint})",
        manual_var="KEYMEM_RERANK_MODEL_PATH",
        endpoint=endpoint,
        progress=progress,
    )


def ensure_files(
    files: Sequence[RemoteFile],
    dest: Path,
    *,
    what: str,
    manual_var: str,
    endpoint: str | None = None,
    progress: bool = True,
) -> Path:
    """Make ``dest`` complete, fetching only missing files. Raises ModelError on failure."""
    if is_complete(files, dest):
        return dest
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"Cannot create model directory {dest}: {exc}") from exc
    try:
        with _dir_lock(dest):
            todo = missing_files(files, dest)  # another process may have finished meanwhile
            if not any(f.required for f in todo):
                return dest
            _remove_stale_tmp(dest)
            log.info("Downloading %s into %s: %s", what, dest, ", ".join(f.local_name for f in todo))
            tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=dest))
            try:
                for f in todo:
                    _fetch_one(
                        f, dest, tmp, what=what, manual_var=manual_var, endpoint=endpoint, progress=progress
                    )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:  # read-only directory, full disk, ...
        raise ModelError(
            f"Cannot write the {what} into {dest}: {exc}. Point {manual_var} at a complete model directory."
        ) from exc
    return dest


def _fetch_one(
    f: RemoteFile, dest: Path, tmp: Path, *, what: str, manual_var: str, endpoint: str | None, progress: bool
) -> None:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import RemoteEntryNotFoundError

    try:
        cached = hf_hub_download(
            repo_id=f.repo_id,
            filename=f.path,
            revision=f.revision,
            cache_dir=tmp,
            endpoint=endpoint,
            library_name="keymem",
            tqdm_class=None if progress else _silent_tqdm(),
        )
    except RemoteEntryNotFoundError as exc:  # a 404 for this file (not a connection problem)
        if not f.required:
            log.info("Optional file %s not found in %s; skipped", f.path, f.repo_id)
            return
        raise _download_error(f, dest, what, manual_var, endpoint, exc) from exc
    except Exception as exc:  # network, HTTP, disk, offline mode: all end the same way
        if not f.required:
            log.warning("Optional file %s from %s not downloaded: %s", f.path, f.repo_id, _short(exc))
            return
        raise _download_error(f, dest, what, manual_var, endpoint, exc) from exc
    blob = Path(cached).resolve()  # the snapshot entry is a symlink to the blob
    target = dest / f.local_name
    part = dest / (f.local_name + ".part")
    shutil.move(str(blob), part)  # same filesystem: a rename
    os.replace(part, target)  # atomic: the final name only ever names a whole file


def _download_error(
    f: RemoteFile, dest: Path, what: str, manual_var: str, endpoint: str | None, exc: BaseException
) -> ModelError:
    base = (endpoint or os.environ.get("HF_ENDPOINT") or _DEFAULT_ENDPOINT).rstrip("/")
    url = f"{base}/{f.repo_id}/resolve/{f.revision}/{f.path}"
    return ModelError(
        f"Could not download {f.path} from {f.repo_id} for the {what}: {_short(exc)}. "
        f"Check the network (or HF_ENDPOINT), or place the files by hand: save {url} as "
        f"{dest / f.local_name} (plus tokenizer.json), or point {manual_var} at a directory that "
        "already holds model.onnx and tokenizer.json."
    )


def _short(exc: BaseException) -> str:
    """The exception's first line, plus its root cause (huggingface_hub wraps the useful part)."""

    def line(e: BaseException) -> str:
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")

    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return line(exc) if root is exc else f"{line(exc)} (cause: {line(root)})"


def _remove_stale_tmp(dest: Path) -> None:
    """Leftovers of a crashed download (we hold the directory lock, so none is live)."""
    for child in dest.iterdir():
        if child.name.startswith(_TMP_PREFIX) and child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        elif child.name.endswith(".part") and child.is_file():
            child.unlink(missing_ok=True)


@contextlib.contextmanager
def _dir_lock(dest: Path) -> Iterator[None]:
    """One downloader per directory across processes (the daemon and a CLI may start together)."""
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process lock; atomic renames still keep files whole
        yield
        return
    with open(dest / ".download.lock", "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _silent_tqdm() -> Any:
    """A tqdm class that never draws (progress=False)."""
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent
