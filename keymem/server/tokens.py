"""Bearer tokens for the HTTP server: created and revoked by ``keymem token``, checked per request.

A token is shown once, when it is created; the file keeps only its SHA-256 (a token is 256
random bits, so a plain hash cannot be reversed by guessing). Each entry says what the token
may do: ``namespaces`` (empty: every namespace; else only these, the first being its default)
and ``read_only`` (no mutating tool). The file is JSON, 0600, replaced atomically; the HTTP
server re-reads it when it changes, so a revocation takes effect on the next request.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from keymem.errors import InvalidInput, shown
from keymem.paths import ensure_private_dir
from keymem.server.protocol import write_private

PREFIX = "kmt_"
FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_NAMESPACE = re.compile(r"^[A-Za-z0-9._:@/+\-]{1,128}$")  # the domain's rule (memory/validate.py)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Token:
    """One token's name and rights (never its secret)."""

    name: str
    sha256: str
    namespaces: tuple[str, ...] = ()
    read_only: bool = False
    created: float = 0.0

    @property
    def default_namespace(self) -> str | None:
        """Where a call that names no namespace goes (None: the store's default namespace)."""
        return self.namespaces[0] if self.namespaces else None

    def allows(self, namespace: str) -> bool:
        return not self.namespaces or namespace in self.namespaces

    def describe(self) -> str:
        scope = ", ".join(self.namespaces) if self.namespaces else "every namespace"
        return f"{self.name}: {scope}{' (read-only)' if self.read_only else ''}"

    def dump(self) -> dict[str, Any]:
        out = asdict(self)
        out["namespaces"] = list(self.namespaces)
        return out


@dataclass
class TokenFile:
    """The token file at ``path``; safe for concurrent CLI writers (flock) and readers (atomic rename)."""

    path: Path
    _cache: tuple[tuple[int, int, int], dict[str, Token]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- reading --------------------------------------------------------------------
    def tokens(self) -> list[Token]:
        return sorted(self._by_hash().values(), key=lambda t: t.name)

    def verify(self, secret: str) -> Token | None:
        """The token whose secret this is, or None (unknown, revoked, malformed)."""
        if not secret.startswith(PREFIX) or len(secret) > 200:
            return None
        wanted = digest(secret)
        for h, token in self._by_hash().items():
            if hmac.compare_digest(h, wanted):
                return token
        return None

    def find(self, name: str) -> Token | None:
        return next((t for t in self._by_hash().values() if t.name == name), None)

    def _by_hash(self) -> dict[str, Token]:
        """Parsed once per change of the file (its inode, size and mtime)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._cache is not None and self._cache[0] == stamp:
                return self._cache[1]
            parsed = {t.sha256: t for t in _parse(self.path)}
            self._cache = (stamp, parsed)
            return parsed

    # -- writing (keymem token ...) ----------------------------------------------------
    def create(self, name: str, namespaces: list[str], read_only: bool) -> tuple[Token, str]:
        """A new token and its secret (shown once); refuses a name in use."""
        if not _NAME.match(name):
            raise InvalidInput(f"token name {shown(name)} is invalid: use 1-64 letters, digits or . _ - (not first)")
        for ns in namespaces:
            if not _NAMESPACE.match(ns):
                raise InvalidInput(f"namespace {shown(ns)} is invalid: use 1-128 letters, digits or the characters . : @ / + - _")
        ordered = tuple(dict.fromkeys(namespaces))
        secret = PREFIX + secrets.token_urlsafe(32)
        token = Token(name=name, sha256=digest(secret), namespaces=ordered, read_only=read_only,
                      created=round(time.time(), 3))
        with self._locked() as entries:
            if any(e.name == name for e in entries):
                raise InvalidInput(f"a token named {shown(name)} exists; revoke it first or choose another name")
            entries.append(token)
        return token, secret

    def revoke(self, name: str) -> Token:
        with self._locked() as entries:
            found = next((e for e in entries if e.name == name), None)
            if found is None:
                known = ", ".join(e.name for e in entries) or "none"
                raise InvalidInput(f"no token named {shown(name)} (tokens: {known})")
            entries.remove(found)
        return found

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[Token]]:
        """The entries, under an exclusive lock; written back atomically (0600) when the block ends."""
        ensure_private_dir(self.path.parent, tighten=False)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            entries = _parse(self.path) if self.path.exists() else []
            yield entries
            body = {"format": FORMAT, "tokens": [e.dump() for e in sorted(entries, key=lambda e: e.name)]}
            write_private(self.path, json.dumps(body, indent=2) + "\n")
        finally:
            os.close(fd)


def _parse(path: Path) -> list[Token]:
    """The entries of a token file; a damaged file is an error naming it (never an open server)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        entries = raw["tokens"]
        return [Token(name=str(e["name"]), sha256=str(e["sha256"]), namespaces=tuple(e.get("namespaces") or ()),
                      read_only=bool(e.get("read_only", False)), created=float(e.get("created", 0.0)))
                for e in entries]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"token file {path} is unreadable ({type(exc).__name__}: {exc}); "
                           "fix or remove it and create the tokens again") from None
