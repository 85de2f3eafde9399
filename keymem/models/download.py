"""Fetch named models from the Hugging Face Hub into ``~/.keymem/models/<name>``.

A model directory is *complete* when its required files (model.onnx, tokenizer.json) are
there; then nothing touches the network. Otherwise only the missing files are fetched
(repair). Every file is downloaded by huggingface_hub into a private cache inside the
destination (which writes ``*.incomplete`` and renames when the size checks out) and then
renamed into place, so a crash or a cut connection can never leave a truncated model.onnx
that looks complete.

Before the first file, :func:`check_reachable` resolves the hub's host (or the proxy's) and
opens one TCP connection to it within :data:`PROBE_TIMEOUT` seconds: offline, huggingface_hub
would otherwise retry with backoff for some 25 s before giving up. Progress goes to stderr
(stdout is the MCP protocol channel): a tqdm bar per file on a terminal, a line every
:data:`LINE_INTERVAL` seconds and one at the end of each file otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from keymem.errors import ModelError, shown
from keymem.models.profiles import RERANKER, ModelProfile, RemoteFile

log = logging.getLogger("keymem.models")

_TMP_PREFIX = ".download-"
_DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT = 1.5  # seconds for resolving the hub's host and connecting to it, together
LINE_INTERVAL = 10.0  # seconds between progress lines when stderr is not a terminal


class HubUnreachable(OSError):
    """The hub's host (or the proxy's) cannot be resolved or connected to."""


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
        check_reachable(endpoint)
    except HubUnreachable as exc:
        first = next(f for f in missing_files(files, dest) if f.required)
        raise _download_error(first, files, dest, what, manual_var, endpoint, exc) from exc
    try:
        from keymem.paths import ensure_private_dir

        ensure_private_dir(dest, tighten=False)  # a new data dir is created 0700, an existing one left alone
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
                        f, files, dest, tmp, what=what, manual_var=manual_var, endpoint=endpoint, progress=progress
                    )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:  # read-only directory, full disk, ...
        raise ModelError(
            f"Cannot write the {what} into {dest}: {exc}. Point {manual_var} at a complete model directory."
        ) from exc
    return dest


def _fetch_one(
    f: RemoteFile, files: Sequence[RemoteFile], dest: Path, tmp: Path, *, what: str, manual_var: str,
    endpoint: str | None, progress: bool,
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
            tqdm_class=_progress_tqdm(f"{dest.name}/{f.local_name}") if progress else _silent_tqdm(),
        )
    except RemoteEntryNotFoundError as exc:  # a 404 for this file (not a connection problem)
        if not f.required:
            log.info("Optional file %s not found in %s; skipped", f.path, f.repo_id)
            return
        raise _download_error(f, files, dest, what, manual_var, endpoint, exc) from exc
    except Exception as exc:  # network, HTTP, disk, offline mode: all end the same way
        if not f.required:
            log.warning("Optional file %s from %s not downloaded: %s", f.path, f.repo_id, _short(exc))
            return
        raise _download_error(f, files, dest, what, manual_var, endpoint, exc) from exc
    blob = Path(cached).resolve()  # the snapshot entry is a symlink to the blob
    target = dest / f.local_name
    part = dest / (f.local_name + ".part")
    shutil.move(str(blob), part)  # same filesystem: a rename
    os.replace(part, target)  # atomic: the final name only ever names a whole file


def check_reachable(endpoint: str | None = None, *, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise :class:`HubUnreachable` unless the hub (or its proxy) accepts a TCP connection in ``timeout`` s.

    Nothing is checked in huggingface_hub's offline mode (HF_HUB_OFFLINE): its own error says so.
    """
    import huggingface_hub.constants as hf_constants

    if hf_constants.HF_HUB_OFFLINE:
        return
    url = endpoint or hf_constants.ENDPOINT or _DEFAULT_ENDPOINT
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise HubUnreachable(f"the hub address {shown(url)} names no host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    what = f"{host}:{port}"
    proxy = _proxy_for(parts.scheme, host)
    if proxy is not None:
        host, port = proxy
        what = f"the proxy {host}:{port}"
    deadline = time.monotonic() + timeout
    addresses = _resolve(host, port, timeout, what)
    last: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock = socket.socket(family, kind, proto)
        sock.settimeout(remaining)
        try:
            sock.connect(address)
            return
        except OSError as exc:
            last = exc
        finally:
            sock.close()
    if last is None or isinstance(last, TimeoutError):
        raise HubUnreachable(f"{what} did not accept a connection within {timeout:g} s")
    raise HubUnreachable(f"cannot connect to {what} ({last})")


def _proxy_for(scheme: str, host: str) -> tuple[str, int] | None:
    """(host, port) of the proxy httpx would use for ``scheme://host`` (HTTPS_PROXY, ALL_PROXY, NO_PROXY)."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not parts.hostname:
        return None
    default = {"http": 80, "https": 443}.get(parts.scheme, 1080)  # else a SOCKS proxy
    return parts.hostname, parts.port or default


def _resolve(host: str, port: int, timeout: float, what: str) -> list[Any]:
    """getaddrinfo with a deadline (it has none of its own; a dead DNS server can block for long)."""
    result: list[Any] = []
    error: list[OSError] = []

    def work() -> None:
        try:
            result.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            error.append(exc)

    worker = threading.Thread(target=work, name="keymem-hub-resolve", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise HubUnreachable(f"{what} could not be resolved within {timeout:g} s")
    if error:
        raise HubUnreachable(f"{what} cannot be resolved ({error[0]})")
    return result


def file_url(f: RemoteFile, endpoint: str | None = None) -> str:
    """Where ``f`` is downloaded from (``endpoint``, else HF_ENDPOINT, else huggingface.co)."""
    base = (endpoint or os.environ.get("HF_ENDPOINT") or _DEFAULT_ENDPOINT).rstrip("/")
    return f"{base}/{f.repo_id}/resolve/{f.revision}/{f.path}"


def placement(files: Sequence[RemoteFile], dest: Path, endpoint: str | None = None) -> list[str]:
    """How to complete ``dest`` by hand: ``save <URL> as <path>`` for every required file it lacks."""
    return [f"save {file_url(f, endpoint)} as {dest / f.local_name}"
            for f in missing_files(files, dest) if f.required]


def _download_error(
    f: RemoteFile, files: Sequence[RemoteFile], dest: Path, what: str, manual_var: str, endpoint: str | None,
    exc: BaseException,
) -> ModelError:
    steps = placement(files, dest, endpoint) or [f"save {file_url(f, endpoint)} as {dest / f.local_name}"]
    return ModelError(
        f"Could not download {f.path} from {f.repo_id} for the {what}: {_short(exc)}. "
        f"Check the network (or HF_ENDPOINT), or place the files by hand: {'; '.join(steps)}; "
        f"or point {manual_var} at a directory that already holds model.onnx and tokenizer.json."
    )


def hub_unreachable(endpoint: str | None = None) -> str | None:
    """Why the hub cannot be reached from here (offline mode, no DNS, no connection), or None when it can."""
    import huggingface_hub.constants as hf_constants

    if hf_constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    try:
        check_reachable(endpoint)
    except HubUnreachable as exc:
        return str(exc)
    return None


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


def _progress_tqdm(label: str) -> Any:
    """A tqdm class for one file, labelled ``label`` (e.g. "bge-m3/model.onnx"), drawing on stderr.

    On a terminal it is tqdm's own bar (80 x 24 when the terminal reports no size). Else
    it writes a plain line every :data:`LINE_INTERVAL` seconds and one when the file is done,
    so a log or an agent's shell shows the download moving rather than nothing at all.
    """
    from tqdm.auto import tqdm

    class _Bar(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            desc = str(kwargs.get("desc") or "")
            # huggingface_hub's Xet downloads draw two bars: "<file>: downloading bytes" and
            # "<file>: reconstructing file"; its plain HTTP download draws one, "<file>".
            suffix = next((s for s in (": downloading bytes", ": reconstructing file") if desc.endswith(s)), "")
            kwargs["desc"] = label + suffix
            kwargs["file"] = sys.stderr
            self._lines = not _is_terminal(sys.stderr)
            if self._lines:
                kwargs["disable"] = True
            else:
                kwargs["disable"] = False
                columns, rows = _terminal_size(sys.stderr)
                if not columns:  # tqdm draws nothing on a terminal that reports no size
                    kwargs.setdefault("ncols", 80)
                if not rows:
                    kwargs.setdefault("nrows", 24)
            self._label = kwargs["desc"]
            self._done = float(kwargs.get("initial") or 0)
            self._size = kwargs.get("total")
            self._last_line = time.monotonic()
            self._ended = False
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            if self._lines:
                self._done += n or 0
                if time.monotonic() - self._last_line >= LINE_INTERVAL:
                    self._line()
            return shown  # type: ignore[no-any-return]

        def close(self) -> None:
            if self._lines and not self._ended:
                self._ended = True
                self._line()
            super().close()

        def _line(self) -> None:
            self._last_line = time.monotonic()
            size = self.total or self._size
            text = f"{self._label}: {tqdm.format_sizeof(self._done, 'B', 1024)}"
            if size:
                text += f" of {tqdm.format_sizeof(size, 'B', 1024)} ({min(100.0, 100 * self._done / size):.0f}%)"
            print(text, file=sys.stderr, flush=True)

    return _Bar


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _terminal_size(stream: Any) -> tuple[int, int]:
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 0, 0
    return size.columns, size.lines


def _silent_tqdm() -> Any:
    """A tqdm class that never draws (progress=False)."""
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return _Silent
