"""Errors the domain raises; interfaces turn them into MCP tool errors or CLI messages."""

from __future__ import annotations


class KeymemError(Exception):
    """Base class: the message is safe and useful to show an agent or a user."""


class InvalidInput(KeymemError, ValueError):
    """The call's arguments are wrong (empty content, no keys, bad number, ...)."""


class NotFound(KeymemError, LookupError):
    """An id names nothing visible in this namespace."""


class StoreError(KeymemError):
    """The store cannot be opened or written (lock, corruption, full disk, read-only)."""


class ModelError(KeymemError):
    """An embedding or reranker model cannot be found, downloaded or loaded."""


class Forbidden(KeymemError, PermissionError):
    """The caller's token does not allow this call (another namespace, or a write with a read-only token)."""
