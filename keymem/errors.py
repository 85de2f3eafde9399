"""Errors the domain raises; interfaces turn them into MCP tool errors or CLI messages."""

from __future__ import annotations

import json


class KeymemError(Exception):
    """Base class: the message is safe and useful to show an agent or a user."""


class InvalidInput(KeymemError, ValueError):
    """The call's arguments are wrong (empty content, no keys, bad number, ...)."""


class NotFound(KeymemError, LookupError):
    """An id names nothing visible in this namespace."""


class StoreError(KeymemError):
    """The store cannot be opened or written (lock, corruption, full disk, read-only)."""


class PoolFull(StoreError):
    """A statement could not get buffer-pool memory; nothing the call was part of was written."""


class ModelError(KeymemError):
    """An embedding or reranker model cannot be found, downloaded or loaded."""


class Forbidden(KeymemError, PermissionError):
    """The caller's token does not allow this call (another namespace, or a write with a read-only token)."""


ECHO_CHARS = 80  # the most characters of a given value an error line repeats


def shown(value: object, limit: int = ECHO_CHARS, *, as_json: bool = False, quoted: bool = True) -> str:
    """A value the caller gave, for an error line: quoted (``repr``, JSON with ``as_json``, as it is
    with ``quoted=False``) and, longer than ``limit`` characters, cut with its length added, so that
    a 100 KB argument gives a short line that still says which value it was:
    ``'aaaa…' (100000 characters)``."""

    def quote(v: object) -> str:
        if not quoted:
            return str(v)
        return json.dumps(v, ensure_ascii=False, default=str) if as_json else repr(v)

    if not isinstance(value, str):
        text = quote(value)
        return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"
    if len(value) <= limit:
        return quote(value)
    return quote(value[:limit] + "…") + f" ({len(value)} characters)"
