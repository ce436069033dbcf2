"""One transaction's writes sent together: one client-level `bulkWrite` round trip.

After claiming its place in the scope's log, a short add writes five collections (the
observation, its postings, the audit entry, the agent's counters and its day). One
command each was one round trip each to the store, and on the embedded store (a
Python server sharing the CPU with the web worker) every round trip is a hand-over
between two processes: under load, each waits for a CPU slice. MongoDB 8.0's
`bulkWrite` (pymongo's `MongoClient.bulk_write`) carries writes to several collections
in one command, inside the same transaction (`session`): still one journaled commit,
the write and its audit entry together.

Repositories add their operations (with `namespace`) instead of sending them when they
are given a batch; `flush` sends them in order. A duplicate key or a write conflict is
a `Conflict`: the caller's transaction is aborted and retried whole, as when the
writes went one by one. A batch is never a transaction's first command: pymongo sends
the transaction's read concern with that one, and the embedded store refuses a read
concern on `bulkWrite` (the add's conditional claim of the scope's log goes first); on a
real MongoDB it may be (`streams.store.flavour`, MEMORY_STORE_FLAVOUR).

A conditional update whose miss must undo the transaction (the add's claim of its place
in the scope's log, when a read went first) joins with `must_match`: the batch then asks
for each operation's result, and a miss is a `Conflict` once it is sent (the transaction
is aborted and retried whole, nothing of it committed): one round trip fewer than the
claim sent alone.

A server without `bulkWrite` (MongoDB before 8.0) gets no batch (`for_session` answers
None) and the writes go one by one as before.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from pymongo import MongoClient
from pymongo.client_session import ClientSession
from pymongo.errors import ClientBulkWriteException, PyMongoError

from streams.core.exceptions import Conflict

CLIENT_BULK_WRITE_WIRE_VERSION = 25  # MongoDB 8.0
DUPLICATE_KEY = 11000
WRITE_CONFLICT = 112

# Whether each client's server takes `bulkWrite` (asked once per client; a test may set
# `ENABLED = False` to take the one-by-one path).
ENABLED = True
_supported: weakref.WeakKeyDictionary[MongoClient, bool] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def supports_client_bulk_write(client: MongoClient) -> bool:
    with _lock:
        known = _supported.get(client)
    if known is None:
        try:
            hello = client.admin.command("hello")
        except PyMongoError:
            return False  # unknown for now: one by one, ask again next time
        known = int(hello.get("maxWireVersion", 0)) >= CLIENT_BULK_WRITE_WIRE_VERSION
        with _lock:
            _supported[client] = known
    return known


class WriteBatch:
    def __init__(self, client: MongoClient, session: ClientSession) -> None:
        self.client = client
        self.session = session
        self.ops: list[Any] = []
        self.must_match: list[int] = []  # indexes of updates that must match a document

    @classmethod
    def for_session(cls, client: MongoClient, session: ClientSession) -> WriteBatch | None:
        """A batch for this transaction, or None when the server cannot take one."""
        if not ENABLED or not supports_client_bulk_write(client):
            return None
        return cls(client, session)

    def add(self, op: Any, *, must_match: bool = False) -> None:
        """An operation built with `namespace="db.collection"`; with `must_match` (an
        update), the flush is a `Conflict` when it matched no document."""
        if must_match:
            self.must_match.append(len(self.ops))
        self.ops.append(op)

    def flush(self) -> None:
        if not self.ops:
            return
        ops, self.ops = self.ops, []
        must_match, self.must_match = self.must_match, []
        try:
            result = self.client.bulk_write(
                ops, session=self.session, ordered=True, verbose_results=bool(must_match)
            )
        except ClientBulkWriteException as exc:
            if isinstance(exc.error, PyMongoError):
                raise exc.error from exc  # e.g. a TransientTransactionError: retried
            # The server's error documents (by index, or a list): pymongo annotates
            # `write_errors` as WriteError exceptions, but they are these documents.
            errors: Any = exc.details.get("writeErrors") or []
            codes = {
                e.get("code") for e in (errors.values() if isinstance(errors, dict) else errors)
            }
            if codes & {DUPLICATE_KEY, WRITE_CONFLICT}:
                raise Conflict("a concurrent write claimed the same keys; retry") from exc
            raise
        for index in must_match:
            if result.update_results[index].matched_count != 1:
                raise Conflict("a conditional write of the batch missed; retry")
