"""``keymem serve --http``: the ten tools and the prompt over MCP streamable HTTP, at ``/mcp``, and the
prompt hook's context for remote team members at ``/mcp/hook`` (keymem/server/hook_route.py).

The HTTP server is a front of the shared daemon, as each stdio server is: it builds the same
MCP server (:func:`keymem.server.tools.build_server`) and bridges every call to the daemon,
which owns the store and the models for every client (one writer). It starts the daemon
when none runs, and if the daemon dies it starts a new one and retries the call once with
the same request id, so a write that committed is answered with its result, not redone.

Parts, all from libraries: the MCP SDK's streamable HTTP transport (stateless, JSON
responses: any request may go to any connection and nothing is lost with a restart), its
bearer-token middleware (401 with ``WWW-Authenticate``) and body size limit (413), Starlette,
and uvicorn (TLS). Added here: the token verifier (:mod:`keymem.server.tokens`), what a token
allows (:mod:`keymem.server.scope`), and two small ASGI guards: foreign ``Origin`` (403) and
``Host`` (421) against DNS rebinding, and admission (a cap on requests in flight: 503 with
``Retry-After``; a per-request time limit: 504).
"""

from __future__ import annotations

import ipaddress
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from keymem.errors import KeymemError, shown
from keymem.server.tokens import Token, TokenFile
from keymem.settings import Settings

log = logging.getLogger("keymem.http")

PATH = "/mcp"
HOOK_PATH = PATH + "/hook"  # POST: the prompt hook's context (keymem/server/hook_route.py)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


class ListenError(ValueError):
    """A listen address, TLS or origin option is unusable; the message says which and why."""


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    behind_tls_proxy: bool = False
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert else "http"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{PATH}"


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_listen(value: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); host defaults to 127.0.0.1."""
    text = value.strip()
    host, port_text = "127.0.0.1", text
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1:end + 2] != ":":
            raise ListenError(f"listen address {shown(value)}: write an IPv6 host as [::1]:8765")
        host, port_text = text[1:end], text[end + 2:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ListenError(f"listen address {shown(value)}: the port must be a number from 1 to 65535")
    if not host:
        raise ListenError(f"listen address {shown(value)}: the host is empty")
    return host, int(port_text)


def check_options(options: HttpOptions) -> None:
    """A non-loopback address needs TLS here or a TLS proxy in front (said explicitly)."""
    if bool(options.tls_cert) != bool(options.tls_key):
        raise ListenError("--tls-cert and --tls-key go together")
    for path in (options.tls_cert, options.tls_key):
        if path is not None and not path.is_file():
            raise ListenError(f"TLS file {path} does not exist")
    if not options.loopback and not options.tls_cert and not options.behind_tls_proxy:
        raise ListenError(
            f"{options.host} is not a loopback address: serve TLS (--tls-cert FILE --tls-key FILE) or say that a "
            "TLS proxy is in front (--behind-tls-proxy); bearer tokens must not cross a network in clear text")
    for origin in options.allow_origins:
        if "://" not in origin or origin.endswith("/"):
            raise ListenError(f"--allow-origin {shown(origin)}: give scheme://host[:port], as a browser sends it")


# -- authentication ------------------------------------------------------------------------
class KeymemTokenVerifier:
    """The SDK's TokenVerifier over the token file: the token's name is the client id."""

    def __init__(self, tokens: TokenFile) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        try:
            found = self.tokens.verify(token)
        except Exception as exc:  # a damaged token file refuses every request; the log says why
            log.error("%s", exc)
            return None
        if found is None:
            log.info("refused a request with an unknown or revoked token")
            return None
        return AccessToken(token="", client_id=found.name, scopes=[], claims={"keymem_token": found})


# -- guards --------------------------------------------------------------------------------
async def _refuse(scope: dict[str, Any], receive: Any, send: Any, status: int, message: str,
                  headers: dict[str, str] | None = None) -> None:
    """A refusal as a JSON-RPC error (what MCP clients read), with the HTTP status that says why."""
    from starlette.responses import JSONResponse

    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == name), None)


class OriginGuard:
    """Refuse a browser's request from a foreign origin (403) and, where hosts are listed, a foreign
    ``Host`` (421): a page on another site, even one whose name resolves to this machine (DNS
    rebinding), cannot use the server. Clients that are not browsers send no Origin."""

    def __init__(self, app: Any, origins: tuple[str, ...], hosts: tuple[str, ...]) -> None:
        self.app, self.origins, self.hosts = app, set(origins), {h.lower() for h in hosts}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") != "/health":  # /health says "ok" and nothing else
            origin = _header(scope, b"origin")
            if origin is not None and origin not in self.origins:
                log.warning("refused a request from origin %s", origin[:200])
                await _refuse(scope, receive, send, 403, f"keymem: origin {origin[:200]} is not allowed (start the server with "
                                         "--allow-origin to allow it)")
                return
            host = (_header(scope, b"host") or "").lower()
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if self.hosts and name not in self.hosts:
                log.warning("refused a request for host %s", host[:200])
                await _refuse(scope, receive, send, 421, f"keymem: host {host[:200]} is not served here (--allow-host)")
                return
        await self.app(scope, receive, send)


class Admission:
    """At most ``limit`` requests in flight (else 503, ``Retry-After: 1``), each within ``timeout`` s (else 504)."""

    def __init__(self, app: Any, limit: int, timeout: float) -> None:
        self.app, self.limit, self.timeout = app, limit, timeout
        self.in_flight = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            await _refuse(scope, receive, send, 503, f"keymem: {self.limit} requests are in flight; retry shortly",
                          {"retry-after": "1"})
            return
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        self.in_flight += 1
        try:
            with anyio.move_on_after(self.timeout) as scope_:
                await self.app(scope, receive, tracked)
            if scope_.cancelled_caught and not started:
                log.warning("a request took longer than %g s and was answered 504", self.timeout)
                await _refuse(scope, receive, send, 504, f"keymem: the call took longer than {self.timeout:g} s; a write may "
                                         "still complete (recall before repeating it)")
        finally:
            self.in_flight -= 1


# -- the app -------------------------------------------------------------------------------
def build_app(settings: Settings, options: HttpOptions, backend: Any) -> Any:
    """The ASGI app: guards -> Starlette (bearer auth -> the SDK's streamable HTTP transport)."""
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.responses import PlainTextResponse

    from keymem.server.hook_route import serve_hook
    from keymem.server.scope import bind_token
    from keymem.server.tools import build_server

    verifier = KeymemTokenVerifier(TokenFile(settings.token_file))
    base = f"{options.scheme}://{'localhost' if options.loopback else options.host}:{options.port}"
    auth = AuthSettings(issuer_url=base, resource_server_url=None)  # type: ignore[arg-type]
    server = build_server(settings, backend, auth=auth, token_verifier=verifier)
    server.middleware.insert(0, bind_token)  # every message knows its token (keymem/server/scope.py)

    @server.custom_route("/health", methods=["GET"])  # no token: for load balancers and container health checks
    async def health(_request: Any) -> Any:  # says nothing else
        return PlainTextResponse("ok\n")

    @server.custom_route(HOOK_PATH, methods=["POST"])  # the prompt hook of a remote team member (hook_route.py)
    async def hook(request: Any) -> Any:  # the bearer-auth middleware has run: the route checks the token itself
        return await serve_hook(request, backend, settings.http_max_body_bytes)

    app = server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=True,
        stateless_http=True,
        max_request_body_size=settings.http_max_body_bytes,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # OriginGuard's job
        host=options.host,
    )
    loopback_origins = tuple(f"{s}://{h}:{options.port}" for s in ("http", "https")
                             for h in ("127.0.0.1", "localhost", "[::1]"))
    origins = options.allow_origins + (loopback_origins if options.loopback else ())
    hosts = options.allow_hosts or (("127.0.0.1", "localhost", "[::1]") if options.loopback else ())
    guarded = Admission(app, settings.http_max_concurrent, settings.http_timeout_s)
    return OriginGuard(guarded, origins, hosts)


def serve_http(settings: Settings, options: HttpOptions) -> int:
    """Run until SIGINT/SIGTERM. Returns the process exit status."""
    import uvicorn

    from keymem.server.backends import Backend, DaemonBackend, LocalBackend
    from keymem.server.scope import ScopedBackend

    check_options(options)
    tokens = TokenFile(settings.token_file)
    try:
        known: list[Token] = tokens.tokens()
    except (KeymemError, OSError) as exc:
        raise ListenError(str(exc)) from None
    if settings.daemon == "off":  # as the stdio server: this process opens the store itself
        local = LocalBackend(settings)
        inner: Backend = local
        warm: Callable[[], Any] = local.open
    else:
        bridge = DaemonBackend(settings)
        inner, warm = bridge, bridge.warm
    backend = ScopedBackend(inner)
    backend.start()
    threading.Thread(target=warm, name="keymem-warm", daemon=True).start()  # models load before traffic
    app = build_app(settings, options, backend)
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_level="warning", access_log=False,
        ssl_certfile=str(options.tls_cert) if options.tls_cert else None,
        ssl_keyfile=str(options.tls_key) if options.tls_key else None,
        proxy_headers=options.behind_tls_proxy, server_header=False,
        limit_concurrency=max(64, 4 * settings.http_max_concurrent), timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    print(f"keymem: serving MCP at {options.url} for {len(known)} token(s) "
          f"({settings.token_file}); stop with Ctrl-C", file=sys.stderr, flush=True)
    if not known:
        print("keymem: no tokens yet, so every request is refused: create one with `keymem token create NAME`",
              file=sys.stderr, flush=True)
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot start
        pass
    finally:
        backend.close()
    if not server.started:  # uvicorn said why (the port is taken, a TLS file does not load, ...)
        print(f"keymem: could not serve on {options.host}:{options.port}", file=sys.stderr, flush=True)
        return 1
    return 0
