"""Reaching a FalkorDB server: the first contact, the client, the server's facts, and when a write is
acknowledged.

* :func:`connect`: the client for ``falkordb://`` (one server) or ``falkordb+sentinel://`` (the primary
  the Sentinels name now). The first contact has a deadline of :data:`CONNECT_TIMEOUT_S` over every
  step and no retry, so a server or Sentinel that is down, a port that never answers, or a Redis
  without the module is one line within it. Through Sentinel, a connection that reconnects asks the
  Sentinels for the primary again, so the store follows a failover; a write whose connection drops
  mid-command is not resent (it may have run), it fails with one line.
* :func:`server_facts`: versions and durability settings for ``keymem doctor`` and ``keymem stats``.
* :class:`AckPolicy` and :func:`acknowledge`: a committed write scope is acknowledged once the
  primary has applied it, or, with ``KEYMEM_FALKORDB_ACK_REPLICAS=n``, once ``n`` replicas hold it.
  ``WAIT`` counts the replicas that have every write sent on *its own connection*, and the store's
  writes may have gone over other connections of the pool, so the acknowledgement first sends one
  ``PUBLISH`` on the same connection (it is replicated, writes no key, and moves that connection's
  replication offset past every write committed before it) and then ``WAIT``, in one round trip.
* A Redis Cluster (``falkordb://`` naming any of its nodes): the client finds the cluster itself and
  sends each graph's commands to the shard holding it. Keys kept beside a graph carry its name as a
  hash tag (``{<graph>}:writer``, :func:`beside`), so they live on its shard; :func:`list_graphs` asks
  every primary; the acknowledgement goes to the graph's shard (a cluster does not replicate
  ``PUBLISH``, so there a ``SET`` of ``{<graph>}:ack`` moves the offset instead). When a shard's primary
  dies, a command whose connection drops is not resent; one that could not connect is sent again once on
  a fresh slot map (:func:`_resending_unsent`), so after the cluster promotes a replica the next
  statement goes to it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keymem.engine_url import FalkorURL
from keymem.errors import StoreError

if TYPE_CHECKING:
    import redis

    from keymem.settings import Settings

CONNECT_TIMEOUT_S = 2.0  # an unreachable server is one line within this
ACK_CHANNEL = "keymem:ack"  # the PUBLISH that carries WAIT's offset (nobody subscribes)
ACK_KEY_TTL_MS = 60_000  # on a cluster, the key whose SET carries WAIT's offset instead


def beside(graph: str, name: str) -> str:
    """The key ``name`` kept beside ``graph`` (``{graph}:name``): its hash tag is the graph's name, and a
    name without braces hashes whole, so on a Redis Cluster the key shares the graph's slot."""
    return f"{{{graph}}}:{name}"


def cluster_of(connection: Any) -> Any | None:
    """The ``redis.cluster.RedisCluster`` when ``connection`` is one (the client found a cluster), else None."""
    from redis.cluster import RedisCluster

    return connection if isinstance(connection, RedisCluster) else None


def list_graphs(connection: Any) -> list[str]:
    """Every graph's name (GRAPH.LIST), on a cluster from every primary, in name order."""
    cluster = cluster_of(connection)
    if cluster is None:
        names = list(connection.execute_command("GRAPH.LIST"))
    else:
        reply = cluster.execute_command("GRAPH.LIST", target_nodes=cluster.PRIMARIES)
        names = [g for listed in reply.values() for g in listed] if isinstance(reply, dict) else list(reply)
    return sorted(g.decode() if isinstance(g, bytes) else str(g) for g in names)


@dataclass(frozen=True)
class AckPolicy:
    """When a committed write scope is acknowledged: at once (``replicas`` 0), or once ``replicas``
    replicas hold it, waiting at most ``timeout_ms`` before the write is reported as an error."""

    replicas: int = 0
    timeout_ms: int = 1000

    @classmethod
    def of(cls, settings: Settings) -> AckPolicy:
        return cls(replicas=settings.falkordb_ack_replicas, timeout_ms=settings.falkordb_ack_timeout_ms)

    def describe(self) -> str:
        if self.replicas <= 0:
            return ("a write is acknowledged once the primary has applied it (KEYMEM_FALKORDB_ACK_REPLICAS=0; "
                    "what survives a crash then rests on the server's appendfsync)")
        return (f"a write is acknowledged once {self.replicas} replica(s) hold it (WAIT, at most "
                f"{self.timeout_ms} ms, else the write is reported as an error; KEYMEM_FALKORDB_ACK_REPLICAS)")


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.05, self.end - time.monotonic())


def _client(host: str, port: int, deadline: _Deadline, *, username: str | None = None,
            password: str | None = None) -> redis.Redis:
    """One server, every step bounded by what is left of ``deadline``, no retry."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(host=host, port=port, username=username, password=password,
                       socket_connect_timeout=deadline.left(), socket_timeout=deadline.left(),
                       retry=Retry(NoBackoff(), 0), decode_responses=True)


def _primary(url: FalkorURL, deadline: _Deadline) -> tuple[str, int]:
    """The server holding the store: the URL's own, or the primary the first answering Sentinel names."""
    import redis

    if not url.via_sentinel:
        return url.host, url.port
    why: list[str] = []
    for host, port in url.sentinels:
        sentinel = _client(host, port, deadline)
        try:
            found = sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", url.master)
        except (redis.exceptions.RedisError, OSError) as exc:
            why.append(f"{host}:{port}: {_first_line(exc)}")
            continue
        finally:
            sentinel.close()
        if not found:
            raise StoreError(f"the Sentinel {host}:{port} of {url.shown()} monitors no master named {url.master}")
        return str(found[0]), int(found[1])
    raise StoreError(f"no Sentinel of {url.shown()} answered ({'; '.join(why)})")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _probe(url: FalkorURL, deadline: _Deadline) -> tuple[redis.Redis, str, str]:
    """A client on the primary that answered PING and has the FalkorDB module, the primary's address,
    and the store's address in words."""
    import redis

    host, port = _primary(url, deadline)
    where = url.shown() if not url.via_sentinel else f"{url.shown()} (primary {host}:{port})"
    client = _client(host, port, deadline, username=url.username, password=url.password)
    try:
        client.ping()
        modules = client.execute_command("MODULE", "LIST")
    except redis.exceptions.AuthenticationError as exc:
        client.close()
        raise StoreError(f"the FalkorDB server {where} refused the credentials ({exc})") from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        client.close()
        raise StoreError(f"the FalkorDB server {where} is unreachable ({exc})") from None
    except redis.exceptions.RedisError as exc:  # an answer, but not a Redis server's
        client.close()
        raise StoreError(f"the server {where} did not answer as a FalkorDB server ({exc})") from None
    if _graph_module(modules) is None:
        client.close()
        raise StoreError(f"the server {where} answers but has no FalkorDB module loaded")
    return client, f"{host}:{port}", where


def connect(url: FalkorURL) -> Any:
    """A ``falkordb.FalkorDB`` client on the store's server (for a Sentinel URL, on whichever server is
    the primary when a connection opens). Raises :class:`StoreError` in one line within the deadline."""
    from falkordb import FalkorDB

    client, _, _ = _probe(url, _Deadline(CONNECT_TIMEOUT_S))
    client.close()
    if not url.via_sentinel:
        db = FalkorDB(host=url.host, port=url.port, username=url.username, password=url.password,
                      socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=None)
        if (cluster := cluster_of(db.connection)) is not None:
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            # A write whose connection dropped may have run: never send it twice (redirects still follow).
            cluster.set_retry(Retry(NoBackoff(), 0))
            db.execute_command = cluster.execute_command = _resending_unsent(cluster)
        return db
    from falkordb.sentinel import FalkorDBSentinelManagedConnection, FalkorDBSentinelRedis
    from redis.sentinel import Sentinel

    sentinel = Sentinel(list(url.sentinels), socket_connect_timeout=CONNECT_TIMEOUT_S,
                        sentinel_kwargs={"socket_connect_timeout": CONNECT_TIMEOUT_S,
                                         "socket_timeout": CONNECT_TIMEOUT_S},
                        username=url.username, password=url.password)
    assert url.master is not None
    primary = sentinel.master_for(url.master, redis_class=FalkorDBSentinelRedis,
                                  connection_class=FalkorDBSentinelManagedConnection, decode_responses=True)
    primary.retry_writes = False  # a write whose connection dropped may have run: never send it twice
    return _OnConnection(primary)


def _resending_unsent(cluster: Any) -> Any:
    """``cluster.execute_command``, except that a command whose node could not even be connected to (so
    nothing of it was sent) is sent once more on a slot map asked for now.

    After a shard's primary dies and the cluster promotes its replica, the client's slot map still names
    the dead node until a refresh, and the client paces the refreshes an error asks for (at most one a
    second), so one made during the outage can leave the old map in place past the promotion: without
    this the first statement after the failover would fail. A command whose connection dropped after it
    was sent is never sent again (it may have run): only a failure to open the connection is resent.
    """
    import redis

    send = cluster.execute_command

    def execute_command(*args: Any, **kwargs: Any) -> Any:
        try:
            return send(*args, **kwargs)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if not _never_sent(exc):
                raise
            try:
                cluster.nodes_manager.initialize()
            except (redis.exceptions.RedisError, OSError):
                raise exc from None
            return send(*args, **kwargs)

    return execute_command


def _never_sent(exc: BaseException) -> bool:
    """Whether the cluster client failed ``exc`` before it had a connection to send on: it names the
    node, not a connection (redis-py's ``RedisCluster._execute_command``); anything else may have run."""
    from redis.cluster import ClusterNode

    return isinstance(getattr(exc, "connection", None), ClusterNode)


class _OnConnection:
    """The parts of ``falkordb.FalkorDB`` the store uses, over a client made here (the Sentinel's
    primary client: ``FalkorDB(connection_pool=...)`` would wrap it in a client that resends writes)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.execute_command = connection.execute_command

    def select_graph(self, name: str) -> Any:
        from falkordb.graph import Graph

        return Graph(self, name)

    def close(self) -> None:
        self.connection.close()


def acknowledge(connection: Any, policy: AckPolicy, url: FalkorURL, graph: str | None = None) -> None:
    """Return once the writes committed so far (to ``graph``) are acknowledged as ``policy`` says; else a
    :class:`StoreError` saying what is committed where and what is missing. On a cluster the ``WAIT``
    goes to the primary of the shard holding ``graph`` and counts that shard's replicas."""
    if policy.replicas <= 0:
        return
    import redis

    cluster = cluster_of(connection)
    if cluster is None:
        pipe = connection.pipeline(transaction=False)
        pipe.execute_command("PUBLISH", ACK_CHANNEL, "1")
        primary = f"the primary of {url.shown()}"
    else:
        # A cluster sends PUBLISH over its bus, not down the replication stream: a replicated SET on the
        # graph's shard moves the connection's offset past the writes instead.
        graph = graph or url.graph
        node = cluster.get_node_from_key(graph)
        pipe = cluster.get_redis_connection(node).pipeline(transaction=False)
        pipe.execute_command("SET", beside(graph, "ack"), "1", "PX", ACK_KEY_TTL_MS)
        primary = f"{node.name}, the primary of the shard holding the graph {graph} of {url.shown()}"
    pipe.execute_command("WAIT", policy.replicas, policy.timeout_ms)
    try:
        _, got = pipe.execute()
    except (redis.exceptions.RedisError, OSError) as exc:
        raise StoreError(f"the write is committed on {primary}, but asking its replicas to "
                         f"acknowledge it failed ({_first_line(exc)}): it is lost if that primary fails before "
                         "they copy it") from None
    if int(got) < policy.replicas:
        raise StoreError(f"the write is committed on {primary}, but only {int(got)} of the "
                         f"{policy.replicas} replica(s) KEYMEM_FALKORDB_ACK_REPLICAS asks for acknowledged it "
                         f"within {policy.timeout_ms} ms: it is lost if that primary fails before they copy it")


def server_facts(url: FalkorURL) -> dict[str, Any]:
    """What ``keymem doctor`` shows of the server: where, versions, durability settings, replication.
    Raises :class:`StoreError` in one line within :data:`CONNECT_TIMEOUT_S` when it cannot be reached."""
    import redis

    deadline = _Deadline(CONNECT_TIMEOUT_S)
    client, primary, where = _probe(url, deadline)
    try:
        modules = client.execute_command("MODULE", "LIST")
        info = client.info()
        config: dict[str, str] = {}
        for name in ("appendonly", "appendfsync", "save"):
            try:
                config.update({str(k): str(v) for k, v in client.config_get(name).items()})
            except redis.exceptions.ResponseError:  # CONFIG renamed or refused (managed servers)
                config[name] = "unknown"
        cluster = _cluster_facts(client) if info.get("redis_mode") == "cluster" else None
    except (redis.exceptions.RedisError, OSError) as exc:
        raise StoreError(f"the FalkorDB server {where} stopped answering ({_first_line(exc)})") from None
    finally:
        client.close()
    replicas = [{"address": f"{v.get('ip')}:{v.get('port')}", "state": v.get("state"), "lag_s": v.get("lag")}
                for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
    if cluster is not None:
        where = f"{where} (a node of a cluster of {cluster['primaries']} primaries, cluster_state {cluster['state']})"
    return {
        "where": where,
        "primary": primary,
        "cluster": cluster,
        "falkordb_version": _graph_module(modules),
        "redis_version": info.get("redis_version"),
        "role": info.get("role"),
        "master_link": (f"{info.get('master_host')}:{info.get('master_port')} {info.get('master_link_status')}"
                        if info.get("role") == "slave" else None),
        "replicas": replicas,
        "appendonly": config.get("appendonly", "unknown"),
        "appendfsync": config.get("appendfsync", "unknown"),
        "save": config.get("save", "unknown"),
    }


def _cluster_facts(client: redis.Redis) -> dict[str, Any]:
    """A cluster's state, its primaries serving slots, and the fewest replicas one of them has (what a
    ``WAIT`` on the emptiest shard can count), from the node ``client`` talks to."""
    raw = client.execute_command("CLUSTER", "INFO")
    info = raw if isinstance(raw, dict) else dict(
        line.split(":", 1) for line in str(raw).split() if ":" in line)
    primaries: dict[str, int] = {}
    replica_of: list[str] = []
    for line in str(client.execute_command("CLUSTER", "NODES")).splitlines():  # id addr flags primary ... slots
        fields = line.split()
        if len(fields) < 8 or "fail" in fields[2].split(","):
            continue
        if "master" in fields[2].split(",") and len(fields) > 8:  # a primary serving slots
            primaries.setdefault(fields[0], 0)
        elif "slave" in fields[2].split(","):
            replica_of.append(fields[3])
    for parent in replica_of:
        if parent in primaries:
            primaries[parent] += 1
    return {"state": str(info.get("cluster_state", "unknown")), "primaries": len(primaries),
            "fewest_replicas": min(primaries.values(), default=0)}


def durability_line(facts: dict[str, Any]) -> str:
    """The server's durability settings and replication in one line (on a cluster: the node's, and the
    cluster's shape)."""
    replicas = ", ".join(f"{r['address']} {r['state']}, lag {r['lag_s']} s" for r in facts["replicas"])
    role = ("primary" if facts["role"] == "master" else f"replica of {facts['master_link']}"
            if facts["role"] == "slave" else str(facts["role"]))
    line = (f"appendonly {facts['appendonly']}, appendfsync {facts['appendfsync']}, save \"{facts['save']}\"; "
            f"{role}, {len(facts['replicas'])} replica(s) connected" + (f" ({replicas})" if replicas else ""))
    cluster = facts.get("cluster")
    if cluster:
        line += (f"; cluster of {cluster['primaries']} primaries (cluster_state {cluster['state']}), "
                 f"the fewest replicas of one: {cluster['fewest_replicas']}")
    return line


def _graph_module(modules: Any) -> str | None:
    """The FalkorDB module's version in MODULE LIST ("4.16.3"), None when it is not loaded."""
    for entry in modules:
        pairs = dict(entry) if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=False))
        pairs = {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in pairs.items()}
        name = pairs.get("name", b"")
        if (name.decode() if isinstance(name, bytes) else str(name)) == "graph":
            ver = int(pairs.get("ver", 0) or 0)
            return f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}"
    return None
