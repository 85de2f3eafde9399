"""Mutating calls answered once: each call's result remembered by its request id (issue 12, item 3).

A daemon client that loses the daemon mid-call (``keymem/server/client.py``) starts a new one
and retries the call once. The write may have committed before the daemon died, and a retry
that runs it again answers wrongly: a ``forget`` "does not exist", a ``correct`` "superseded",
a ``dismiss`` halves the link twice, a ``confirm_memory`` deepens twice. So the client sends
each mutating call with a request id it makes once per call and keeps across the retry, and:

* the write records its answer as a ``Request`` row (``cypher/request/record``) inside its own
  transaction (:meth:`RequestLog.record`, called by ``memory/write.py``): the row is committed
  exactly when the write is;
* a call whose id is already recorded gets the recorded answer without running again
  (:meth:`RequestLog.once`); ``confirm_memory`` records the memory's id and answers with its
  view as it is then (it includes the confirmation);
* the same id with other arguments is refused (InvalidInput): a client error, not a retry; two
  calls with one id at once run one after the other, so the second is answered from the first,
  also on two daemons of one shared store (the id is held there: ``Store.held``), so a retry sent
  to another front answers the first result and writes nothing twice;
* a call that failed recorded nothing (its transaction rolled back), so its retry runs again;
* rows are kept at least ``REQUEST_TTL_S`` (one hour, far beyond a retry's ~10-30 s) and are
  deleted by the periodic sweep after it; at most ``MAX_REQUESTS`` are kept (the oldest go first
  once ``MAX_REQUESTS + PRUNE_SLACK`` are reached), so the table stays small under any load.

Calls without an id (in-process callers, the CLI with ``KEYMEM_DAEMON=off``, imports) record
nothing. ``read_memory`` is not recorded although it writes: a retried read answers the same
view (nothing is refused), and what it writes is usage statistics. Without a key its access
count is only pending in memory at the reply (``memory/access.py``), so a crash before the
reply loses it rather than counting it twice; through a key the retry counts the access once
more and strengthens that one link once more (by the Hebbian step, within the link's bounds),
which is what a re-read by the agent would do too.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keymem.errors import InvalidInput, shown

if TYPE_CHECKING:
    from keymem.store.db import Store, Tx

log = logging.getLogger("keymem.memory")

# The calls that record their result; the daemon's clients send a request id with exactly these.
MUTATING = ("remember", "remember_batch", "correct", "forget", "dismiss", "confirm_memory")
REQUEST_TTL_S = 3600.0
MAX_REQUESTS = 10_000
PRUNE_SLACK = 1_000

_REQUEST_ID = re.compile(r"^[A-Za-z0-9_.:-]{8,128}$")


@dataclass
class _Pending:
    """The request a call runs for, until its write records it."""

    id: str
    digest: str
    committed: bool = False


_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar("keymem_request", default=None)


def check_request_id(value: Any) -> str:
    if not isinstance(value, str) or not _REQUEST_ID.match(value):
        raise InvalidInput(f"request_id {shown(value)} is invalid: use 8-128 letters, digits or the characters _ . : -")
    return value


def call_digest(method: str, params: dict[str, Any]) -> str:
    """What a retry must repeat exactly: the method and its arguments (not the host's provenance)."""
    text = json.dumps([method, params], sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class RequestLog:
    """The recorded results of one graph's mutating calls."""

    def __init__(self, store: Store, clock: Callable[[], float], memory_view: Callable[[str], Any]) -> None:
        self.store, self.now = store, clock
        self.memory_view = memory_view  # a memory's read_memory view as JSON: confirm_memory's replayed answer
        self.ttl = REQUEST_TTL_S
        self.max_rows = MAX_REQUESTS
        self.slack = PRUNE_SLACK
        self.replays = 0  # calls answered from a recorded result, for tests and logs
        self._rows: int | None = None  # rows in the table (approximate), counted lazily
        self._rows_lock = threading.Lock()
        self._busy: set[str] = set()  # ids whose call is running
        self._busy_changed = threading.Condition()

    def once(self, request_id: Any, method: str, params: dict[str, Any], run: Callable[[], Any]) -> Any:
        """``run()`` unless ``request_id`` already has a recorded result, which is then the answer."""
        rid = check_request_id(request_id)
        digest = call_digest(method, params)
        # the same id at once on another daemon of a shared store waits too, then finds the recorded result
        with self._claim(rid), self.store.held(f"request:{rid}"):
            rows = self.store.query("request/get", id=rid)
            if rows:
                if rows[0]["digest"] != digest:
                    raise InvalidInput(f"request_id {rid} was already used for another call; send a new id for a new call")
                self.replays += 1
                log.info("%s (request %s) was already applied; answering with its recorded result", method, rid)
                return self._replay(method, json.loads(rows[0]["result"]))
            token = _PENDING.set(_Pending(rid, digest))
            try:
                result = run()
            finally:
                _PENDING.reset(token)
        self._bound()
        return result

    def record(self, tx: Tx, result: Any) -> None:
        """In the write's transaction: remember ``result`` (a view or JSON) for the call's request id."""
        pending = _PENDING.get()
        if pending is None or pending.committed or tx.scratch.get("request_recorded"):
            return
        payload = result.dump() if hasattr(result, "dump") else result
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
        tx.run("request/record", id=pending.id, digest=pending.digest, result=text, at=self.now())
        tx.scratch["request_recorded"] = True

        def committed() -> None:
            pending.committed = True
            with self._rows_lock:
                if self._rows is not None:
                    self._rows += 1

        tx.after_commit(committed)

    def _replay(self, method: str, payload: Any) -> Any:
        if method == "remember":  # recorded as the batch the single memory was written in
            return payload["results"][0]
        if method == "confirm_memory":
            return self.memory_view(payload["memory_id"])
        return payload

    @contextlib.contextmanager
    def _claim(self, rid: str) -> Iterator[None]:
        with self._busy_changed:
            while rid in self._busy:
                self._busy_changed.wait()
            self._busy.add(rid)
        try:
            yield
        finally:
            with self._busy_changed:
                self._busy.discard(rid)
                self._busy_changed.notify_all()

    # -- keeping the table small ---------------------------------------------------------
    def count(self) -> int:
        rows = self._rows
        if rows is None:
            rows = int(self.store.query("request/count")[0]["n"])
            with self._rows_lock:
                self._rows = rows
        return rows

    def _bound(self) -> None:
        if self.count() >= self.max_rows + self.slack:
            self.prune()

    def prune(self) -> int:
        """Delete the oldest results beyond ``max_rows``; return how many went."""
        rows = self.store.query("request/cutoff", keep=self.max_rows)
        if not rows:
            return 0
        return self._expire(math.nextafter(float(rows[0]["at"]), math.inf))

    def sweep(self) -> int:
        """Delete the results older than ``ttl`` (the periodic sweep); return how many went."""
        before = self.now() - self.ttl
        oldest = self.store.query("request/oldest")
        if not oldest or oldest[0]["at"] is None or oldest[0]["at"] >= before:
            return 0
        return self._expire(before)

    def _expire(self, before: float) -> int:
        with self.store.write() as tx:
            done = tx.run("request/expire", before=before)
        n = int(done[0]["n"])  # a write's rows are read once its scope committed
        with self._rows_lock:
            self._rows = None
        return n
