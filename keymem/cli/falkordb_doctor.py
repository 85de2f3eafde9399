"""``keymem doctor``'s and ``keymem stats``' store lines for a FalkorDB store (``KEYMEM_STORE_URL``).

The server's address (never its password), the FalkorDB and Redis versions, the durability settings
that decide what survives a crash (appendonly, appendfsync, save, replicas) and keymem's
acknowledgement policy. A server that cannot be reached is one line within the connect deadline.
"""

from __future__ import annotations

from typing import Any

import typer

from keymem.cli.common import daemon_stats, human_bytes, schema_state


def engine_lines(server: dict[str, Any]) -> list[str]:
    """The server facts (:func:`keymem.cli.ops.server_of`) as the lines doctor and stats print."""
    from keymem.store.falkor_connect import durability_line

    if "error" in server:
        return [f"engine: FalkorDB, CANNOT REACH: {server['error']}", f"acknowledgement: {server['ack']}"]
    return [f"engine: FalkorDB {server['falkordb_version']} on Redis {server['redis_version']}, {server['where']}",
            f"durability: {durability_line(server)}",
            f"acknowledgement: {server['ack']}"]


def problems_of(server: dict[str, Any], settings: Any) -> list[tuple[str, str]]:
    """What in the server's state makes keymem's writes fail or less durable than the user may think."""
    problems: list[tuple[str, str]] = []
    if server["role"] != "master":
        problems.append((f"the server {server['where']} is a replica: it refuses keymem's writes",
                         "point KEYMEM_STORE_URL at the primary, or use the falkordb+sentinel:// form"))
    online = sum(1 for r in server["replicas"] if r["state"] == "online")
    if settings.falkordb_ack_replicas > online:
        problems.append((f"KEYMEM_FALKORDB_ACK_REPLICAS={settings.falkordb_ack_replicas} but the primary has "
                         f"{online} replica(s) online: every write will be reported as not acknowledged",
                         "attach the replicas, or lower KEYMEM_FALKORDB_ACK_REPLICAS"))
    if server["appendonly"] == "no":
        problems.append((f"the server {server['where']} keeps no append-only file: a restart loses every write "
                         f"since its last snapshot (save \"{server['save']}\")",
                         "run CONFIG SET appendonly yes on it and set appendonly yes in its configuration file"))
    return problems


def doctor_store(settings: Any, *, daemon_running: bool) -> list[tuple[str, str]]:
    """The ``store:`` section of ``keymem doctor`` for a FalkorDB store."""
    from keymem.engine_url import parse_store_url
    from keymem.errors import KeymemError
    from keymem.store import migrations
    from keymem.store.factory import open_store
    from keymem.store.falkor_connect import AckPolicy, server_facts

    url = parse_store_url(settings.store_url)
    try:
        server = {**server_facts(url), "ack": AckPolicy.of(settings).describe()}
    except KeymemError as exc:
        typer.echo(f"  {url.shown()}: CANNOT REACH")
        return [(str(exc), "start the server, or correct KEYMEM_STORE_URL (unset, it is the embedded store)")]
    for line in engine_lines(server):
        typer.echo(f"  {line}")
    problems = problems_of(server, settings)
    if daemon_running:
        data = daemon_stats(settings)
        applied, available, size = data["schema"]["applied"], data["schema"]["available"], data["store"]["bytes"]
        opened = "opened by the daemon"
    else:
        try:
            store = open_store(settings, read_only=True)
        except KeymemError as exc:
            typer.echo(f"  graph {url.graph}: CANNOT OPEN")
            return [*problems, (str(exc), "see the message above")]
        try:
            applied, available, size = migrations.applied(store), migrations.available(), store.size_bytes()
        finally:
            store.close()
        opened = "opens cleanly"
    typer.echo(f"  graph {url.graph}: {opened}, {human_bytes(size)}; schema {schema_state(applied, available, problems)}")
    return problems
