"""A session does not pay twice: what ``recall`` and ``read_key`` hold back because the agent has it.

An MCP session's context already holds every memory a tool result delivered in it, so a later
``recall`` or ``read_key`` that repeats one spends the agent's tokens on nothing new. The domain
takes ``seen`` (memory ids the caller has): they are not delivered again, take no slot and no
budget, and the next best memories come in their place; the result counts them (``omitted``).

* **stdio**: one server process serves one session, so it keeps a :class:`Delivered` record of
  the memory ids its ``recall``, ``read_key`` and ``read_memory`` results delivered, and sends
  them as ``seen`` with every later ``recall`` and ``read_key``.
* **streamable HTTP** is stateless (any request may reach any connection, nothing survives a
  restart), so it keeps no record: the client passes the ids it has as ``seen`` itself.

Either way ``include_seen=true`` asks for everything again: nothing is held back, the caller's
``seen`` included.
"""

from __future__ import annotations

from typing import Any

from keymem.memory.views import MAX_SEEN

SEEN_TOOLS = ("recall", "read_key")  # the tools that take seen / include_seen
DELIVERING = ("recall", "read_key", "read_memory")  # the results whose memories the session records


class Delivered:
    """The memory ids one session's results delivered, the most recent ``limit`` of them."""

    def __init__(self, limit: int = MAX_SEEN) -> None:
        self.limit = limit
        self._ids: dict[str, None] = {}  # insertion order: oldest first

    def ids(self) -> list[str]:
        return list(self._ids)

    def record(self, method: str, data: Any) -> None:
        """Remember the memories a successful ``method`` result delivered."""
        if method not in DELIVERING or not isinstance(data, dict):
            return
        found: list[Any] = []
        if method == "read_memory":
            found.append(data.get("memory_id"))
        else:  # recall's preview is its first memory again
            preview = data.get("memory")
            if isinstance(preview, dict):
                found.append(preview.get("memory_id"))
            found += [m.get("memory_id") for m in data.get("memories") or [] if isinstance(m, dict)]
        for mid in found:
            if isinstance(mid, str):
                self._ids.pop(mid, None)  # delivered again: now among the most recent
                self._ids[mid] = None
        while len(self._ids) > self.limit:
            del self._ids[next(iter(self._ids))]


def seen_arguments(args: dict[str, Any], delivered: Delivered | None) -> dict[str, Any]:
    """A ``recall`` or ``read_key`` call's arguments for the backend: ``include_seen`` is applied here
    and dropped; ``seen`` is the caller's ids plus the session's record (most recent first, at most
    ``MAX_SEEN``), left out when empty or when ``include_seen`` is true."""
    out = dict(args)
    include = out.pop("include_seen", False)
    given = out.pop("seen", None) or []
    if include:
        return out
    recent = reversed(delivered.ids()) if delivered is not None else iter(())
    ids = list(dict.fromkeys([*given, *recent]))[:MAX_SEEN]
    if ids:
        out["seen"] = ids
    return out
