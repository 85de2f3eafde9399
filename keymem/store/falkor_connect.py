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
        return FalkorDB(host=url.host, port=url.port, username=url.username, password=url.password,
                        socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=None)
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


def acknowledge(connection: Any, policy: AckPolicy, url: FalkorURL) -> None:
    """Return once the writes committed so far are acknowledged as ``policy`` says; else a
    :class:`StoreError` saying what is committed where and what is missing."""
    if policy.replicas <= 0:
        return
    import redis

    pipe = connection.pipeline(transaction=False)
    pipe.execute_command("PUBLISH", ACK_CHANNEL, "1")
    pipe.execute_command("WAIT", policy.replicas, policy.timeout_ms)
    try:
        _, got = pipe.execute()
    except (redis.exceptions.RedisError, OSError) as exc:
        raise StoreError(f"the write is committed on the primary of {url.shown()}, but asking its replicas to "
                         f"acknowledge it failed ({_first_line(exc)}): it is lost if that primary fails before "
                         "they copy it") from None
    if int(got) < policy.replicas:
        raise StoreError(f"the write is committed on the primary of {url.shown()}, but only {int(got)} of the "
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
    except (redis.exceptions.RedisError, OSError) as exc:
        raise StoreError(f"the FalkorDB server {where} stopped answering ({_first_line(exc)})") from None
    finally:
        client.close()
    replicas = [{"address": f"{v.get('ip')}:{v.get('port')}", "state": v.get("state"), "lag_s": v.get("lag")}
                for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
    return {
        "where": where,
        "primary": primary,
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


def durability_line(facts: dict[str, Any]) -> str:
    """The server's durability settings and replication in one line."""
    replicas = ", ".join(f"{r['address']} {r['state']}, lag {r['lag_s']} s" for r in facts["replicas"])
    role = ("primary" if facts["role"] == "master" else f"replica of {facts['master_link']}"
            if facts["role"] == "slave" else str(facts["role"]))
    return (f"appendonly {facts['appendonly']}, appendfsync {facts['appendfsync']}, save \"{facts['save']}\"; "
            f"{role}, {len(facts['replicas'])} replica(s) connected" + (f" ({replicas})" if replicas else ""))


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
