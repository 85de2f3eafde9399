"""``KEYMEM_STORE_URL``: which engine holds the store. Unset is the embedded LadybugDB file in the data dir.

Two forms name a FalkorDB server; the store is the graph ``prefix`` (default ``keymem``) on it:

* ``falkordb://[user:password@]host:port[/prefix]``: one server.
* ``falkordb+sentinel://[user:password@]host:port[,host:port...]/master-name[/prefix]``: the Sentinels
  to ask for the current primary of ``master-name``; the client asks again after a failover. The
  credentials are the data servers' (the Sentinels are asked without them).

Parsed without importing any engine, so a bad value is one line at settings time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlsplit

DEFAULT_PREFIX = "keymem"
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
FORM = "falkordb://[user:password@]host:port[/prefix]"
SENTINEL_FORM = "falkordb+sentinel://[user:password@]host:port[,host:port...]/master-name[/prefix]"
_SENTINEL_SCHEME = "falkordb+sentinel://"
_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>\d{1,5})")


class StoreURLError(ValueError):
    """The URL is not one keymem can use; the message says why in one line."""


@dataclass(frozen=True)
class FalkorURL:
    """A FalkorDB store. In the Sentinel form ``host``/``port`` are the first Sentinel's, ``sentinels``
    lists them all and ``master`` is the name they monitor."""

    host: str
    port: int
    prefix: str = DEFAULT_PREFIX
    username: str | None = None
    password: str | None = None
    sentinels: tuple[tuple[str, int], ...] = ()
    master: str | None = None
    namespace: str | None = None  # set: the graph of this one namespace (KEYMEM_FALKORDB_GRAPHS=namespace)

    @property
    def graph(self) -> str:
        """The graph holding the store: ``prefix``, or ``prefix:namespace`` for one namespace's graph."""
        return self.prefix if self.namespace is None else f"{self.prefix}:{self.namespace}"

    def for_namespace(self, namespace: str) -> FalkorURL:
        """The same server, the graph of ``namespace`` alone."""
        return replace(self, namespace=namespace)

    @property
    def via_sentinel(self) -> bool:
        return self.master is not None

    def shown(self) -> str:
        """The URL without its password (logs, errors, ``keymem doctor``)."""
        user = f"{self.username}:***@" if self.username else ("***@" if self.password else "")
        if self.master is not None:
            hosts = ",".join(_joined(h, p) for h, p in self.sentinels)
            return f"falkordb+sentinel://{user}{hosts}/{self.master}/{self.prefix}"
        return f"falkordb://{user}{_joined(self.host, self.port)}/{self.prefix}"


def _joined(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_store_url(text: str) -> FalkorURL:
    """``text`` -> its parts; :class:`StoreURLError` saying what is wrong (never echoing a password)."""
    text = text.strip()
    if text.lower().startswith(_SENTINEL_SCHEME):
        return _parse_sentinel(text[len(_SENTINEL_SCHEME):])
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise StoreURLError(f"is not a URL of the form {FORM} ({exc})") from None
    if parts.scheme != "falkordb":
        raise StoreURLError(f"must start with falkordb:// or falkordb+sentinel:// (the forms are {FORM} and "
                            f"{SENTINEL_FORM}); unset it for the embedded store")
    if not parts.hostname:
        raise StoreURLError(f"names no host (the form is {FORM})")
    if port is None or port == 0:
        raise StoreURLError(f"names no port (the form is {FORM})")
    if parts.query or parts.fragment:
        raise StoreURLError(f"takes no ?query or #fragment (the form is {FORM})")
    prefix = parts.path.strip("/") or DEFAULT_PREFIX
    if not _NAME.fullmatch(prefix):
        raise StoreURLError("prefix must be 1-64 letters, digits, '_', '.' or '-'")
    return FalkorURL(
        host=parts.hostname, port=port, prefix=prefix,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _parse_sentinel(rest: str) -> FalkorURL:
    """The part after ``falkordb+sentinel://``: ``[user:password@]host:port[,host:port...]/master[/prefix]``."""
    if "?" in rest or "#" in rest:
        raise StoreURLError(f"takes no ?query or #fragment (the form is {SENTINEL_FORM})")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon and secret else None
    sentinels: list[tuple[str, int]] = []
    for item in hosts.split(","):
        m = _HOST_PORT.fullmatch(item.strip())
        port = int(m.group("port")) if m else 0
        if m is None or not 0 < port < 65536:
            raise StoreURLError(f"has a Sentinel address that is not host:port (the form is {SENTINEL_FORM})")
        sentinels.append((m.group("v6") or m.group("host"), port))
    names = [p for p in path.split("/") if p]
    if not names:
        raise StoreURLError(f"names no master (the form is {SENTINEL_FORM})")
    if len(names) > 2:
        raise StoreURLError(f"has more than a master name and a prefix in its path (the form is {SENTINEL_FORM})")
    master, prefix = names[0], names[1] if len(names) == 2 else DEFAULT_PREFIX
    if not _NAME.fullmatch(master):
        raise StoreURLError("master name must be 1-64 letters, digits, '_', '.' or '-'")
    if not _NAME.fullmatch(prefix):
        raise StoreURLError("prefix must be 1-64 letters, digits, '_', '.' or '-'")
    return FalkorURL(host=sentinels[0][0], port=sentinels[0][1], prefix=prefix, username=username,
                     password=password, sentinels=tuple(sentinels), master=master)
