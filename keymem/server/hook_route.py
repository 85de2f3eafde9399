"""``POST /mcp/hook``: the prompt hook's context for a team member whose memory is on this server.

The hook's recall is not one of the ten MCP tools: it is the daemon's ``inject`` (memories only
when the prompt names something stored, at most ``KEYMEM_INJECT_MAX``, above the association
floor), the same call a local hook makes over the socket (keymem/server/hook.py). So the HTTP
server serves it on a route of its own beside ``/mcp`` (the caller: keymem/server/hook_remote.py)
and forwards it to the same backend as every tool call. The route is behind the same doors: the
Origin/Host guard and admission (keymem/server/http.py), a valid bearer token (else 401), and the
token's rights through :class:`~keymem.server.scope.ScopedBackend`: a namespace the token does not
hold is refused (403), a request naming none goes to the token's first namespace; ``inject``
changes nothing, so a read-only token may use it.

Request: ``{"prompt": str, "namespace"?: str}`` (JSON). Answer: the ``inject`` result,
``{"memory_ids": [...], "text": str}``, or ``{"error": {"message": ...}}`` with the status.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from keymem.errors import Forbidden, InvalidInput, KeymemError
from keymem.server.protocol import DaemonUnavailable
from keymem.server.scope import token_bound

log = logging.getLogger("keymem.http")

FIELDS = ("prompt", "namespace")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message}}, status_code=status, headers=headers)


async def _body(request: Any, limit: int) -> bytes | None:
    """The request body, or None past ``limit`` bytes (read no further)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def serve_hook(request: Any, backend: Any, max_body: int) -> Any:
    """One hook request: the caller's token, its prompt, the backend's ``inject`` under the token's rights."""
    from starlette.responses import JSONResponse

    access = getattr(request.scope.get("user"), "access_token", None)
    token = (getattr(access, "claims", None) or {}).get("keymem_token")
    if token is None:
        return _error(401, "keymem: a valid bearer token is required (Authorization: Bearer kmt_...)",
                      {"WWW-Authenticate": 'Bearer error="invalid_token"'})
    raw = await _body(request, max_body)
    if raw is None:
        return _error(413, f"keymem: the request body is over {max_body} bytes (KEYMEM_HTTP_MAX_BODY_BYTES)")
    try:
        params = json.loads(raw)
    except ValueError:
        params = None
    if not isinstance(params, dict) or not isinstance(params.get("prompt"), str):
        return _error(400, 'keymem hook: the body must be a JSON object {"prompt": "...", "namespace"?: "..."}')
    extra = sorted(set(params) - set(FIELDS))
    if extra:
        return _error(400, f"keymem hook: unexpected field(s) {', '.join(extra)[:200]}; it takes prompt and namespace")
    params = {k: v for k, v in params.items() if v is not None}
    try:
        with token_bound(token):
            result = await backend.call("inject", params, None)
    except Forbidden as exc:
        return _error(403, f"keymem hook: {exc}")
    except InvalidInput as exc:
        return _error(400, f"keymem hook: {exc}")
    except (KeymemError, DaemonUnavailable) as exc:  # the store is loading, the daemon is gone: try again later
        return _error(503, f"keymem hook: {exc}")
    except Exception:
        log.exception("the hook call by token %s failed", token.name)
        return _error(500, "keymem hook: the call failed on the server (its log says why)")
    return JSONResponse(result)
