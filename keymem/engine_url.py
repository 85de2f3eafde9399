"""``KEYMEM_STORE_URL``: which engine holds the store. Unset is the embedded LadybugDB file in the data dir.

``falkordb://[user:password@]host:port[/prefix]`` names a FalkorDB server; the store is the graph
``prefix`` (default ``keymem``). Parsed without importing any engine, so a bad value is one line at
settings time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

DEFAULT_PREFIX = "keymem"
_PREFIX = re.compile(r"[A-Za-z0-9_.-]{1,64}")
FORM = "falkordb://[user:password@]host:port[/prefix]"


class StoreURLError(ValueError):
    """The URL is not one keymem can use; the message says why in one line."""


@dataclass(frozen=True)
class FalkorURL:
    host: str
    port: int
    prefix: str = DEFAULT_PREFIX
    username: str | None = None
    password: str | None = None

    @property
    def graph(self) -> str:
        """The graph holding the store."""
        return self.prefix

    def shown(self) -> str:
        """The URL without its password (logs, errors, ``keymem doctor``)."""
        user = f"{self.username}:***@" if self.username else ("***@" if self.password else "")
        return f"falkordb://{user}{self.host}:{self.port}/{self.prefix}"


def parse_store_url(text: str) -> FalkorURL:
    """``text`` -> its parts; :class:`StoreURLError` saying what is wrong (never echoing a password)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise StoreURLError(f"is not a URL of the form {FORM} ({exc})") from None
    if parts.scheme != "falkordb":
        raise StoreURLError(f"must start with falkordb:// (the form is {FORM}); unset it for the embedded store")
    if not parts.hostname:
        raise StoreURLError(f"names no host (the form is {FORM})")
    if port is None or port == 0:
        raise StoreURLError(f"names no port (the form is {FORM})")
    if parts.query or parts.fragment:
        raise StoreURLError(f"takes no ?query or #fragment (the form is {FORM})")
    prefix = parts.path.strip("/") or DEFAULT_PREFIX
    if not _PREFIX.fullmatch(prefix):
        raise StoreURLError("prefix must be 1-64 letters, digits, '_', '.' or '-'")
    return FalkorURL(
        host=parts.hostname, port=port, prefix=prefix,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )
