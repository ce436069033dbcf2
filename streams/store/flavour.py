"""Which server the store talks to, and the one switch for the embedded store's workarounds.

The embedded store (SecantusDB) speaks MongoDB's wire protocol, but some standard
operations are slow or refused there, and the repositories work around them. On a real
MongoDB (a replica set, a sharded cluster) the standard operation runs instead. One
switch decides every workaround: MEMORY_STORE_FLAVOUR (`embedded` or `mongodb`), or,
when it is not set, the server's own `buildInfo` (SecantusDB names itself there with
`secantusVersion`; mongod does not). docs/store.md lists each workaround and its reason.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Literal

from pymongo import MongoClient
from pymongo.errors import PyMongoError

Flavour = Literal["embedded", "mongodb"]
EMBEDDED: Flavour = "embedded"
MONGODB: Flavour = "mongodb"
FLAVOURS: tuple[Flavour, ...] = (EMBEDDED, MONGODB)
# Ids a `$pull {$in}` or `$addToSet {$each}` takes on the embedded store, which compares
# every id with every listed one (10,000 of each took minutes); more: read and `$set`.
EMBEDDED_LIST_INLINE = 64
# Store transactions of one process open at once on the embedded store (`transaction_gate`).
EMBEDDED_TRANSACTIONS_PER_PROCESS = 1

_chosen: weakref.WeakKeyDictionary[MongoClient, Flavour] = weakref.WeakKeyDictionary()
_detected: weakref.WeakKeyDictionary[MongoClient, Flavour] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


@dataclass(frozen=True)
class Workarounds:
    """What the repositories do on this flavour (each reason in docs/store.md)."""

    flavour: Flavour

    @property
    def embedded(self) -> bool:
        return self.flavour == EMBEDDED

    @property
    def list_inline_max(self) -> int | None:
        """Ids an array operator (`$pull {$in}`, `$addToSet {$each}`) is given at once;
        None: any number (mongod's are linear). Past it the list is read and `$set`."""
        return EMBEDDED_LIST_INLINE if self.embedded else None

    @property
    def lists_set_whole(self) -> bool:
        """A consolidation's commit sets the scope's id lists whole from its read,
        instead of one `$pull` with the version condition."""
        return self.embedded

    @property
    def batch_may_lead(self) -> bool:
        """Whether a client `bulkWrite` may be a transaction's first command (the
        embedded store refuses the read concern pymongo sends with that command)."""
        return not self.embedded

    @property
    def transactions_per_process(self) -> int:
        """How many of a process's transactions may be open at once (0: no limit). Every
        open transaction pins the embedded store's snapshot horizon, and a dozen at a time
        stalled its writes in WiredTiger's page-in loop; mongod's do not stall so."""
        return EMBEDDED_TRANSACTIONS_PER_PROCESS if self.embedded else 0

    @property
    def kill_sessions_before_drop(self) -> bool:
        """A drop that meets a transaction whose client died spins on the embedded
        store until it is reaped: `killAllSessions` first (the test suite's drop)."""
        return self.embedded


def parse_flavour(value: str | None) -> Flavour | None:
    """The setting's value: `embedded`, `mongodb`, or empty (detect); ValueError else."""
    text = (value or "").strip().lower()
    if not text:
        return None
    for flavour in FLAVOURS:
        if text == flavour:
            return flavour
    raise ValueError(f"MEMORY_STORE_FLAVOUR must be one of {', '.join(FLAVOURS)} or empty")


def choose_flavour(client: MongoClient, flavour: Flavour | None) -> None:
    """The setting for this client (None: detect from the server)."""
    with _lock:
        if flavour is None:
            _chosen.pop(client, None)
        else:
            _chosen[client] = flavour


def detect_flavour(client: MongoClient) -> Flavour | None:
    """`embedded` when `buildInfo` names SecantusDB, `mongodb` when it does not, None
    when the server could not be asked."""
    try:
        info = client.admin.command("buildInfo")
    except PyMongoError:
        return None
    return EMBEDDED if "secantusVersion" in info else MONGODB


def flavour_of(client: MongoClient) -> Flavour:
    """The setting, else what the server says (asked once per client). A server that
    cannot be asked counts as embedded for now (every workaround is correct on mongod
    too, only slower) and is asked again next time."""
    with _lock:
        known = _chosen.get(client) or _detected.get(client)
    if known is not None:
        return known
    detected = detect_flavour(client)
    if detected is None:
        return EMBEDDED
    with _lock:
        _detected[client] = detected
    return detected


def workarounds(client: MongoClient) -> Workarounds:
    return Workarounds(flavour_of(client))
