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
    cluster = server.get("cluster")
    if cluster:  # each graph's writes wait for its own shard's replicas: the shard with the fewest decides
        online = int(cluster["fewest_replicas"])
    if settings.falkordb_ack_replicas > online:
        who = "a shard of the cluster has" if cluster else "the primary has"
        problems.append((f"KEYMEM_FALKORDB_ACK_REPLICAS={settings.falkordb_ack_replicas} but {who} "
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
    layout = layout_problems(settings, url)
    if layout:
        return [*problems, *layout]
    if settings.falkordb_graphs == "namespace":
        return [*problems, *doctor_namespace_graphs(url)]
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


def layout_problems(settings: Any, url: Any) -> list[tuple[str, str]]:
    """The server holds the other layout's graphs for this prefix (keymem would refuse to open it)."""
    from keymem.errors import StoreError
    from keymem.memory.namespace_graphs import check_layout, server_layout

    graphs, one_holds_data = server_layout(url)
    try:
        check_layout(graphs, url, settings.falkordb_graphs, one_holds_data=one_holds_data)
    except StoreError as exc:
        typer.echo("  layout: DOES NOT MATCH KEYMEM_FALKORDB_GRAPHS")
        return [(str(exc), "set KEYMEM_FALKORDB_GRAPHS to the layout the store has")]
    return []


SHOWN_GRAPHS = 8  # namespace graphs doctor lists one by one


def doctor_namespace_graphs(url: Any) -> list[tuple[str, str]]:
    """A graph per namespace: each namespace's graph, its size and schema steps (read-only opens, which
    create nothing)."""
    from keymem.errors import KeymemError
    from keymem.memory.namespace_graphs import namespace_graph_names, server_graphs
    from keymem.store import migrations
    from keymem.store.falkordb import FalkorStore

    names = namespace_graph_names(server_graphs(url), url.prefix)
    typer.echo(f"  layout: a graph per namespace (KEYMEM_FALKORDB_GRAPHS=namespace), {len(names)} namespace(s)"
               + ("; the first remember creates its graph" if not names else ""))
    found: list[tuple[str, str]] = []
    for namespace in names[:SHOWN_GRAPHS]:
        where = url.for_namespace(namespace)
        try:
            store = FalkorStore(where, read_only=True)
            try:
                applied, size = migrations.applied(store), store.size_bytes()
            finally:
                store.close()
        except KeymemError as exc:
            typer.echo(f"  graph {where.graph}: CANNOT OPEN")
            found.append((str(exc), "see the message above"))
            continue
        state = schema_state(applied, migrations.available(), found)
        typer.echo(f"  graph {where.graph}: opens cleanly, {human_bytes(size)}; schema {state}")
    if len(names) > SHOWN_GRAPHS:
        typer.echo(f"  ... and {len(names) - SHOWN_GRAPHS} more namespace graph(s)")
    return found
