"""The daemon's wire protocol: newline-delimited JSON over an owner-only Unix socket.

One request per line, one response line per request, in order, on each connection:

    -> {"id": 7, "token": "<hex>", "method": "recall", "params": {...}, "source": {...} | null}
    -> {"id": 8, "token": "<hex>", "method": "forget", "params": {...}, "request_id": "<hex>"}
    <- {"id": 7, "ok": true, "result": {...}}
    <- {"id": 7, "ok": false, "error": {"type": "InvalidInput", "message": "..."}}

A mutating tool call (:data:`WRITES`) carries a ``request_id`` its client makes once per call
and sends again when it retries the call on a new daemon: the daemon answers a repeated id
with the first call's recorded result instead of running it again (``memory/requests.py``).

``json.dumps`` escapes newlines inside strings, so a line is always one message. The token
(a random 256-bit hex string in ``daemon.token``, mode 0600) is checked on every request;
a wrong one gets an ``Unauthorized`` error and the connection is closed. Every line gets an
answer and the connection stays usable: a line that is not a JSON object gets a
``ProtocolError`` with id null, and a request with a string that is not valid Unicode (a lone
surrogate escape such as ``"\ud800"``, or bytes that are not UTF-8) an ``InvalidInput`` naming
the field, with its id. This module is imported by the prompt hook, so it must stay stdlib-only.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keymem.errors import InvalidInput, KeymemError, ModelError, NotFound, StoreError
from keymem.paths import ensure_private_dir  # noqa: F401 (the daemon and client use it from here)

if TYPE_CHECKING:
    from keymem.settings import Settings

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # remember_batch: 1000 items x 100k chars fits
MAX_SOCKET_PATH = 104  # sun_path is 108 on Linux, 104 on macOS

# The ten MCP tools, then the daemon's own methods.
TOOLS = (
    "recall", "browse_keys", "read_key", "read_memory", "confirm_memory",
    "remember", "correct", "dismiss", "forget", "remember_batch",
)
CONTROL = ("ping", "counts", "stats", "inject", "sweep", "shutdown")
# The tools that change the store and are answered once per request id (memory/requests.py's MUTATING).
WRITES = ("confirm_memory", "remember", "correct", "dismiss", "forget", "remember_batch")


class DaemonUnavailable(ConnectionError):
    """No daemon answers (not running, crashed, refused us); the message says what to do."""


class Unauthorized(KeymemError):
    """The request's token does not match the daemon's."""


class ProtocolError(KeymemError):
    """A malformed request or response line."""


class BadLine(ProtocolError):
    """One line that is not a JSON object; the stream is still in step, so the next line is read."""


class InternalError(KeymemError):
    """The daemon hit an unexpected error; details are in its log."""


ERROR_TYPES: dict[str, type[KeymemError]] = {
    "InvalidInput": InvalidInput,
    "NotFound": NotFound,
    "StoreError": StoreError,
    "ModelError": ModelError,
    "Unauthorized": Unauthorized,
    "ProtocolError": ProtocolError,
    "InternalError": InternalError,
}


def error_payload(exc: BaseException) -> dict[str, str]:
    """The wire form of an exception (KeymemError messages are safe to show)."""
    name = type(exc).__name__
    for wire, cls in ERROR_TYPES.items():
        if isinstance(exc, cls):
            name = wire
            break
    else:
        name = "InternalError"
    return {"type": name, "message": str(exc)}


def raise_error(err: Any) -> None:
    """Re-raise a wire error as the matching keymem exception."""
    if not isinstance(err, dict):
        raise ProtocolError(f"malformed error from the daemon: {err!r}")
    cls = ERROR_TYPES.get(str(err.get("type")), InternalError)
    raise cls(str(err.get("message", "unknown error")))


def settle(resp: dict[str, Any], keep: Callable[[], None], drop: Callable[[], None]) -> Any:
    """A daemon reply's result, or its error raised. The connection is kept (``keep``) after any
    answer but ``Unauthorized`` (a daemon restarted between connect and token read), which drops it."""
    if resp.get("ok"):
        keep()
        return resp.get("result")
    err = resp.get("error") or {}
    (drop if isinstance(err, dict) and err.get("type") == "Unauthorized" else keep)()
    raise_error(err)


def request_line(rid: int, token: str, method: str, params: Any, source: Any, request_id: str | None) -> bytes:
    """One request as its wire line (what every client of the daemon sends)."""
    msg: dict[str, Any] = {"id": rid, "token": token, "method": method, "params": params or {}}
    if source is not None:
        msg["source"] = source
    if request_id is not None:
        msg["request_id"] = request_id
    return encode(msg)


def write_request_id(method: str, request_id: str | None) -> str | None:
    """A mutating call's request id: the caller's, else a new one that every retry of the call must
    send again (the daemon runs the write at most once per id). None for a read."""
    if request_id is None and method in WRITES:
        return os.urandom(16).hex()  # os, not secrets: the hook imports this module
    return request_id


def encode(message: dict[str, Any]) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: JSON escapes still carry it, and the peer can say what is wrong
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def _bad_char(text: str) -> str | None:
    """The first character of ``text`` that UTF-8 cannot encode, described; None if there is none."""
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # decoding with surrogateescape turns a non-UTF-8 byte into one of these
            return f"bytes that are not valid UTF-8 (0x{code - 0xDC00:02x}) or a lone surrogate \\u{code:04x}"
        if 0xD800 <= code <= 0xDFFF:
            return f"a lone surrogate \\u{code:04x} (half of a UTF-16 pair), which is not a Unicode character"
    return None


def bad_unicode(value: Any, path: str = "") -> tuple[str, str] | None:
    """(field path, what is wrong) for the first string or object key that is not valid Unicode.

    Paths name the field as sent, e.g. ``params.arguments.content`` or ``params.items[2].keys[0]``.
    """
    if isinstance(value, str):
        bad = _bad_char(value)
        return (path or "the message", bad) if bad else None
    if isinstance(value, dict):
        for key, item in value.items():
            bad = _bad_char(key)
            if bad:
                return (f"a field name in {path or 'the message'}", bad)
            found = bad_unicode(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = bad_unicode(item, f"{path}[{i}]")
            if found:
                return found
    return None


def parse_line(line: bytes) -> Any:
    """A line's JSON value; bytes that are not UTF-8 are kept as surrogate escapes (see bad_unicode)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "surrogateescape")
    return json.loads(text)


class LineReader:
    """Reads newline-terminated messages from a socket, with a size limit."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def read(self) -> dict[str, Any] | None:
        """The next message, or None at a clean end of stream.

        Raises :class:`BadLine` for a line that is not a JSON object (the next read goes on with
        the next line) and :class:`ProtocolError` for a message over the size limit.
        """
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                try:
                    msg = parse_line(line)
                except ValueError as exc:
                    raise BadLine(f"message is not JSON: {exc}") from None
                if not isinstance(msg, dict):
                    raise BadLine("message is not a JSON object")
                return msg
            if len(self.buf) > MAX_MESSAGE_BYTES:
                raise ProtocolError(f"message larger than {MAX_MESSAGE_BYTES} bytes")
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                if self.buf:
                    raise ConnectionResetError("connection closed in the middle of a message")
                return None
            self.buf += chunk


# -- files in the data dir -------------------------------------------------------------


def token_path(data_dir: Path) -> Path:
    return data_dir / "daemon.token"


def lock_path(data_dir: Path) -> Path:
    return data_dir / "daemon.lock"


def out_path(data_dir: Path) -> Path:
    """Where a detached daemon's raw stdout/stderr go (tracebacks before logging is up)."""
    return data_dir / "logs" / "daemon.out"


def write_private(path: Path, text: str) -> None:
    """Atomically write a 0600 file (token, pid)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_token(data_dir: Path) -> str:
    try:
        return token_path(data_dir).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise DaemonUnavailable(f"cannot read the daemon token ({exc})") from None


def socket_address(path: Path) -> str:
    """The socket path as a string, refusing paths too long for AF_UNIX."""
    text = str(path.absolute())
    if len(text.encode()) > MAX_SOCKET_PATH:
        raise DaemonUnavailable(
            f"the data dir path is too long for a Unix socket ({text}); set KEYMEM_DATA_DIR to a shorter path"
        )
    return text


def pid_alive(pid: int) -> bool:
    """True if ``pid`` names a live (non-zombie) process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return "Z" not in line.split()[1]
    return True


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


_LOCAL_ONLY = ("local_embedding_model", "local_embedding_model_path", "local_embedding_model_file")
_OPENAI_ONLY = ("openai_embedding_model", "openai_base_url")
_RERANK_ONLY = ("rerank_model_path", "rerank_pool", "rerank_min_score")


def daemon_view(settings: Settings) -> dict[str, str]:
    """The values of :data:`DAEMON_SETTINGS` that apply, as text by variable name (what ``ping`` reports
    and clients compare): the effective backend, a model's canonical name, absolute paths."""
    from keymem.models.profiles import find_model
    from keymem.settings import DAEMON_SETTINGS, VARS

    out: dict[str, str] = {}
    for name in DAEMON_SETTINGS:
        if (name in _LOCAL_ONLY and settings.backend != "local") or (name in _OPENAI_ONLY and settings.backend != "openai") \
                or (name in _RERANK_ONLY and not settings.rerank):
            continue
        value: Any = settings.backend if name == "embedding_backend" else getattr(settings, name)
        if name == "local_embedding_model":
            profile = find_model(value)
            value = profile.name if profile else value
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif value is None:
            text = "unset"
        elif isinstance(value, Path):
            text = os.path.abspath(value)
        else:
            text = str(value)
        out[VARS[name].env] = text
    return out
