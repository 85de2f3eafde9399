"""The CLI's remote commands: ``keymem serve --http`` and ``keymem token create|list|revoke``.

``serve --http`` runs the MCP server over streamable HTTP in this terminal, as a front of
the shared daemon (keymem/server/http.py). Tokens live in ``KEYMEM_HTTP_TOKEN_FILE``
(``<data dir>/tokens.json``), hashed; ``token create`` prints the secret once, as the last line
of stdout, so ``TOKEN=$(keymem token create laptop | tail -1)`` works.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from keymem.cli.common import fail, settings_or_exit

token_app = typer.Typer(help="Bearer tokens for `keymem serve --http`.", no_args_is_help=True, add_completion=False)


def serve(
    http: Annotated[str, typer.Option("--http", metavar="[HOST:]PORT",
                                      help="Serve MCP over streamable HTTP at /mcp on this address")] = "127.0.0.1:8765",
    tls_cert: Annotated[Path | None, typer.Option("--tls-cert", help="TLS certificate (PEM)", dir_okay=False)] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="TLS private key (PEM)", dir_okay=False)] = None,
    behind_tls_proxy: Annotated[bool, typer.Option(
        "--behind-tls-proxy", help="A TLS proxy is in front: serve plain HTTP on a non-loopback address")] = False,
    allow_origin: Annotated[list[str] | None, typer.Option(
        "--allow-origin", help="A browser origin allowed to call (scheme://host[:port]); repeatable")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="A Host name clients use (others get 421); repeatable. Default: loopback names "
                             "on a loopback address, any name elsewhere")] = None,
) -> None:
    """Serve the tools over MCP streamable HTTP, with bearer tokens (`keymem token create`)."""
    from keymem.server.http import (
        HttpOptions,
        ListenError,
        check_options,
        parse_listen,
        serve_http,
    )
    from keymem.server.logs import setup_logging

    settings = settings_or_exit()
    try:
        host, port = parse_listen(http)
        options = HttpOptions(host=host, port=port, tls_cert=tls_cert, tls_key=tls_key,
                              behind_tls_proxy=behind_tls_proxy, allow_origins=tuple(allow_origin or ()),
                              allow_hosts=tuple(h.lower() for h in allow_host or ()))
        check_options(options)
    except ListenError as exc:
        raise fail(str(exc), code=2) from None
    setup_logging(settings, stderr=True, path=settings.log_path.with_name("http.log"))
    try:
        code = serve_http(settings, options)
    except ListenError as exc:
        raise fail(str(exc), code=2) from None
    raise typer.Exit(code)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Who or what uses the token (laptop, ci, team-bot)")],
    namespace: Annotated[list[str] | None, typer.Option(
        "--namespace", help="Only this namespace (repeatable; the first is the default). Default: every namespace")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="No remember, correct, forget, dismiss, confirm")] = False,
) -> None:
    """Create a token and print it once (the last line); only its hash is kept."""
    from keymem.errors import KeymemError
    from keymem.server.tokens import TokenFile

    settings = settings_or_exit()
    tokens = TokenFile(settings.token_file)
    try:
        token, secret = tokens.create(name, list(namespace or ()), read_only)
    except KeymemError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"created token {token.describe()}; stored hashed in {tokens.path}")
    typer.echo("the token is shown this once; give it to the client as `Authorization: Bearer <token>`:")
    typer.echo(secret)


@token_app.command("list")
def token_list(
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, for scripts")] = False,
) -> None:
    """The tokens: name, namespaces, read-only, when created (never the secret)."""
    from keymem.errors import KeymemError
    from keymem.server.tokens import TokenFile

    tokens = TokenFile(settings_or_exit().token_file)
    try:
        found = tokens.tokens()
    except KeymemError as exc:
        raise fail(str(exc)) from None
    if as_json:
        for t in found:
            typer.echo(json.dumps({k: v for k, v in t.dump().items() if k != "sha256"}))
        return
    if not found:
        typer.echo(f"no tokens in {tokens.path} (create one: keymem token create NAME)")
        return
    for t in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(t.created))
        typer.echo(f"{t.describe()}  created {when}")


@token_app.command("revoke")
def token_revoke(name: Annotated[str, typer.Argument(help="The token's name")]) -> None:
    """Revoke a token: the running server refuses it from the next request."""
    from keymem.errors import KeymemError
    from keymem.server.tokens import TokenFile

    tokens = TokenFile(settings_or_exit().token_file)
    try:
        gone = tokens.revoke(name)
    except KeymemError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"revoked token {gone.name}")
