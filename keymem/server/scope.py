"""What an HTTP caller's token allows, applied to every tool call before it reaches the daemon.

The HTTP server builds the same MCP server as stdio (:func:`keymem.server.tools.build_server`)
on a :class:`ScopedBackend`: a backend that reads the request's token (the SDK's bearer-auth
context) and

* refuses the six mutating tools for a read-only token;
* refuses a namespace the token does not hold, and puts a call that names none in the token's
  first namespace;
* looks an id up only in the token's namespaces (``forget`` and the other id-based tools take
  a ``namespace`` that narrows the lookup): a token of namespace A cannot read, change or
  delete a memory of namespace B by its id;
* records the token's name as the write's provenance, and logs every write with it.

A refused call raises :class:`~keymem.errors.Forbidden` before anything is sent: nothing is written.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from keymem.errors import Forbidden, NotFound, shown
from keymem.server.backends import Backend
from keymem.server.protocol import WRITES
from keymem.server.tokens import Token

log = logging.getLogger("keymem.http")

BY_ID = ("read_memory", "confirm_memory", "correct", "dismiss", "forget")  # the id narrows by namespace
BY_NAMESPACE = ("recall", "browse_keys", "remember")  # the namespace says where to search or write


_token: contextvars.ContextVar[Token | None] = contextvars.ContextVar("keymem_token", default=None)


def current_token() -> Token | None:
    """The token of the MCP message being handled (:func:`bind_token`), or None."""
    return _token.get()


@contextlib.contextmanager
def token_bound(token: Token) -> Iterator[None]:
    """``token`` is the caller's while the block runs (a route outside MCP: the hook's, hook_route.py)."""
    bound = _token.set(token)
    try:
        yield
    finally:
        _token.reset(bound)


async def bind_token(ctx: Any, call_next: Any) -> Any:
    """MCP server middleware: the token of the HTTP request that carried this message, for the
    handler's duration. Read from each message's own request (the SDK's bearer-auth middleware put
    the verified token there), so it is right in any session mode. A read-only token is not shown
    the tools it may not call."""
    user = getattr(ctx.request, "scope", {}).get("user") if ctx.request is not None else None
    access = getattr(user, "access_token", None)
    claims = getattr(access, "claims", None) or {}
    token = claims.get("keymem_token")
    bound = _token.set(token)
    try:
        result = await call_next(ctx)
    finally:
        _token.reset(bound)
    if token is not None and token.read_only and ctx.method == "tools/list" and isinstance(result, dict):
        result["tools"] = [t for t in result.get("tools") or [] if t.get("name") not in WRITES]
    return result


class ScopedBackend:
    """A :class:`Backend` that applies the calling token's rights, then forwards to ``inner``."""

    def __init__(self, inner: Backend, token: Callable[[], Token | None] = current_token) -> None:
        self.inner = inner
        self.token = token

    def start(self) -> None:
        self.inner.start()

    def kick(self) -> None:
        self.inner.kick()

    def counts(self, timeout: float) -> dict[str, Any] | None:
        return self.inner.counts(timeout)

    def close(self) -> None:
        self.inner.close()

    async def call(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                   request_id: str | None = None) -> Any:
        token = self.token()
        if token is None:  # the auth middleware answers 401 first; this is a second lock on the door
            raise Forbidden("no valid token for this request")
        if request_id is not None:  # one id space per token: another token's id replays nothing
            request_id = "http-" + hashlib.sha256(f"{token.sha256}\0{request_id}".encode()).hexdigest()[:40]
        if token.read_only and method in WRITES:
            log.info("http %s by token %s refused: read-only", method, token.name)
            raise Forbidden(f"token '{token.name}' is read-only; {method} changes the store")
        params = dict(params)
        try:
            candidates = self._namespaces(token, method, params)
        except Forbidden as exc:
            log.info("http %s by token %s refused: %s", method, token.name, exc)
            raise
        source = {"host_agent": "http", "host_session": token.name, "host_turn": None} if method in WRITES else None
        try:
            if len(candidates) <= 1:
                if candidates:
                    params["namespace"] = candidates[0]
                result = await self.inner.call(method, params, source, request_id)
            else:  # an id and several namespaces: the first that holds it
                result = await self._first_holding(method, params, source, candidates, request_id)
        except Exception as exc:
            if method in WRITES:
                _log_write(token, method, params, None, exc)
            raise
        if method in WRITES:
            _log_write(token, method, params, result, None)
        return result

    def _namespaces(self, token: Token, method: str, params: dict[str, Any]) -> list[str]:
        """Where the call may look: [] (unchanged), [ns] (set), or several (id lookups, in order)."""
        if method == "remember_batch":
            items = params.get("items")
            if isinstance(items, list):
                params["items"] = [self._item(token, it) for it in items]
            return []
        given = params.get("namespace")
        if given is not None:
            if not isinstance(given, str) or not token.allows(given):
                raise Forbidden(f"token '{token.name}' may not use namespace {shown(given)} "
                                f"(its namespaces: {', '.join(token.namespaces)})")
            return [given]
        if not token.namespaces:
            return []
        by_id = method in BY_ID or (method == "read_key" and str(params.get("key_id", "")).startswith("k_"))
        return list(token.namespaces) if by_id else [token.namespaces[0]]

    def _item(self, token: Token, item: Any) -> Any:
        if not isinstance(item, dict):
            return item  # the domain names what is wrong with it
        ns = item.get("namespace")
        if ns is None:
            return {**item, "namespace": token.default_namespace} if token.namespaces else item
        if not isinstance(ns, str) or not token.allows(ns):
            raise Forbidden(f"token '{token.name}' may not use namespace {ns!r} "
                            f"(its namespaces: {', '.join(token.namespaces)})")
        return item

    async def _first_holding(self, method: str, params: dict[str, Any], source: dict[str, Any] | None,
                             namespaces: list[str], request_id: str | None) -> Any:
        for ns in namespaces:  # a NotFound records nothing, so the request id is free for the next
            try:
                return await self.inner.call(method, {**params, "namespace": ns}, source, request_id)
            except NotFound:
                continue
        what = "key" if method == "read_key" else "memory"
        ident = params.get("key_id") if method == "read_key" else params.get("memory_id")
        raise NotFound(f"{what} {ident} does not exist in namespaces {', '.join(namespaces)}")


def _log_write(token: Token, method: str, params: dict[str, Any], result: Any, exc: BaseException | None) -> None:
    """One line per write over HTTP, naming the token (never its secret)."""
    target = params.get("memory_id") or f"namespace {params.get('namespace') or 'default'}"
    if exc is not None:
        log.info("http write %s by token %s (%s) refused: %s", method, token.name, target, exc)
        return
    made = result.get("memory_id") if isinstance(result, dict) and method != "forget" else None
    if method == "remember_batch" and isinstance(result, dict):
        made = f"{len(result.get('results') or [])} items"
    log.info("http write %s by token %s: %s%s", method, token.name, target, f" -> {made}" if made else "")
