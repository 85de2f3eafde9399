"""The prompt hook's remote mode: ask a ``keymem serve --http`` for the injection, not the local daemon.

A team member's memory lives on a server (``KEYMEM_HOOK_URL``, its MCP URL); the hook POSTs the
same request it would send the daemon (``prompt``, ``namespace``) to ``<URL>/hook`` with the
bearer token from ``KEYMEM_HOOK_TOKEN_FILE``, and the server answers with the daemon's own
``inject`` result under the token's namespaces (keymem/server/hook_route.py). The token file must
be the user's and owner-only (0600): a file others can read is refused before anything is sent.

The whole exchange (name lookup, connect, TLS, the answer) runs on a daemon thread that the hook
waits for only until its time limit: a remote that is down or slow costs the prompt at most that.
Any failure is a :class:`RemoteHookError` whose message is one line, never holding the token.
Stdlib only: this runs before every prompt.
"""

from __future__ import annotations

import ipaddress
import json
import os
import ssl
import stat
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from keymem.settings import Settings

HOOK_SUFFIX = "/hook"  # the route beside the MCP endpoint: <…>/mcp/hook
TOKEN_PREFIX = "kmt_"  # keymem/server/tokens.py
MAX_ANSWER_BYTES = 8 * 1024 * 1024


class RemoteHookError(Exception):
    """The remote hook could not get an injection; the message is one line for the log."""


def hook_endpoint(url: str) -> str:
    """``KEYMEM_HOOK_URL`` (the server's MCP URL) -> the hook route; refuses a URL that would send the
    token in clear text over a network (http:// to a host that is not loopback)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteHookError(f"KEYMEM_HOOK_URL {_cut(url)!r} is not an http(s) URL "
                              "(give the server's MCP URL, such as https://HOST:8765/mcp)")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise RemoteHookError(f"KEYMEM_HOOK_URL {_cut(url)!r} is plain http to another host: the token must not "
                              "cross a network in clear text (use https://, or an SSH tunnel to 127.0.0.1)")
    if parts.query or parts.fragment:
        raise RemoteHookError(f"KEYMEM_HOOK_URL {_cut(url)!r} has a query or fragment; give the MCP URL alone")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}{HOOK_SUFFIX}"


def read_token(path: Path | None) -> str:
    """The bearer token in ``path``, refused unless the file is the user's own and owner-only."""
    if path is None:
        raise RemoteHookError("KEYMEM_HOOK_URL is set but KEYMEM_HOOK_TOKEN_FILE is not: name the file holding "
                              "the token (`chmod 600` it)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise RemoteHookError(f"KEYMEM_HOOK_TOKEN_FILE {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RemoteHookError(f"KEYMEM_HOOK_TOKEN_FILE {path} is not a regular file")
        if st.st_uid != os.getuid():
            raise RemoteHookError(f"KEYMEM_HOOK_TOKEN_FILE {path} belongs to another user; the token file must be yours")
        if st.st_mode & 0o077:
            raise RemoteHookError(f"KEYMEM_HOOK_TOKEN_FILE {path} is readable by others (mode "
                                  f"{stat.S_IMODE(st.st_mode):04o}); refused: `chmod 600 {path}`")
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    token = raw.decode("utf-8", "replace").strip()
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200 or any(c.isspace() for c in token):
        raise RemoteHookError(f"KEYMEM_HOOK_TOKEN_FILE {path} does not hold one keymem token "
                              f"({TOKEN_PREFIX}..., as `keymem token create` prints it)")
    return token


def remote_inject(settings: Settings, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The server's ``inject`` result for ``params`` within ``timeout`` seconds, or RemoteHookError."""
    assert settings.hook_url is not None
    endpoint = hook_endpoint(settings.hook_url)
    token = read_token(settings.hook_token_file)
    outcome: list[Any] = []

    def ask() -> None:
        try:
            outcome.append(_post(endpoint, token, params, timeout))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append(exc)

    worker = threading.Thread(target=ask, name="keymem-hook-remote", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:  # the thread is left behind; the process exits without waiting for it
        raise RemoteHookError(_too_slow(endpoint, timeout))
    found = outcome[0]
    if isinstance(found, BaseException):
        raise found
    return found  # type: ignore[no-any-return]


def _post(endpoint: str, token: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    body = json.dumps(params, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(endpoint, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"})
    context = ssl.create_default_context() if endpoint.startswith("https:") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:  # noqa: S310 (http(s) only)
            data = answer.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise RemoteHookError(_refusal(endpoint, exc)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):  # the socket's own limit, the same as the caller's
            raise RemoteHookError(_too_slow(endpoint, timeout)) from None
        raise RemoteHookError(f"cannot reach {endpoint} ({_cut(str(reason), 160)})") from None
    if len(data) > MAX_ANSWER_BYTES:
        raise RemoteHookError(f"{endpoint} answered more than {MAX_ANSWER_BYTES} bytes; ignored")
    try:
        result = json.loads(data)
    except ValueError:
        result = None
    if not isinstance(result, dict) or not isinstance(result.get("text"), str):
        raise RemoteHookError(f"{endpoint} did not answer as a keymem server does (is KEYMEM_HOOK_URL keymem's /mcp?)")
    return result


def _refusal(endpoint: str, exc: urllib.error.HTTPError) -> str:
    """One line for an HTTP error status, with the server's own message when it sent one."""
    try:
        body = json.loads(exc.read(64 * 1024) or b"{}")
    except (ValueError, OSError):
        body = {}
    message = ""
    if isinstance(body, dict):
        err = body.get("error")
        message = err.get("message", "") if isinstance(err, dict) else str(err or body.get("error_description") or "")
    if exc.code == 401:
        return (f"{endpoint} refused the token in KEYMEM_HOOK_TOKEN_FILE (401: unknown or revoked; "
                "ask for a new one: `keymem token create NAME` on the server)")
    if exc.code == 404:
        return (f"{endpoint} has no keymem hook route (404): is KEYMEM_HOOK_URL a keymem server's /mcp URL, "
                "and the server as recent as this keymem?")
    return f"{endpoint} answered {exc.code}: {_cut(message or str(exc.reason), 300)}"


def _too_slow(endpoint: str, timeout: float) -> str:
    return f"{endpoint} did not answer within {timeout * 1000:.0f} ms (KEYMEM_HOOK_TIMEOUT_MS)"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
