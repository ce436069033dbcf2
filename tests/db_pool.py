"""Indexed test databases, emptied and handed on from one test to the next.

Every test gets a database with the declared indexes. Creating one costs twenty
collections and ninety indexes on the embedded store (each a table of its own), and
dropping it as much again: about 0.2 s a test, a fifth of the suite's time. A database a
test leaves behind is emptied instead (only the collections it wrote to, as the client's
command listener saw them) and handed to a later test, when the store then confirms it
holds no document and the same secondary indexes as a fresh one; otherwise it is dropped.

What a process remembers per database (webhook lists, the audit log's start, vector
caches) is forgotten before a database is reused, as if it were new.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from pymongo import MongoClient, monitoring

from memory_admin.stores import indexes_ensured
from streams.store import MemoryStore

MAX_DOCUMENTS_EMPTIED = 2_000
WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify", "create"})


class WrittenCollections(monitoring.CommandListener):
    """The collections each database received a write for, since it was last taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: dict[str, set[str]] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        name = event.command_name
        if name == "bulkWrite":
            namespaces = [ns.get("ns", "") for ns in event.command.get("nsInfo", [])]
        elif name in WRITE_COMMANDS:
            namespaces = [f"{event.database_name}.{event.command.get(name)}"]
        else:
            return
        with self._lock:
            for namespace in namespaces:
                database, _, collection = str(namespace).partition(".")
                self._written.setdefault(database, set()).add(collection)

    def take(self, database: str) -> set[str]:
        with self._lock:
            return self._written.pop(database, set())

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


class DatabasePool:
    """Test databases with the declared indexes: a fresh one, or one a test left, emptied."""

    def __init__(self, client: MongoClient, uri: str, written: WrittenCollections) -> None:
        self.client, self.uri, self.written = client, uri, written
        self.free: list[str] = []
        self.secondary_indexes: int | None = None  # a fresh database's, for the check

    def take(self) -> str:
        if self.free:
            name = self.free.pop()
        else:
            name = f"t_{uuid.uuid4().hex[:16]}"
            MemoryStore(self.client, name).ensure_indexes()
            indexes_ensured(self.uri, name)  # so the app does not create them again
            if self.secondary_indexes is None:
                self.secondary_indexes = self._shape(name)[1]
        self.written.take(name)
        return name

    def give_back(self, name: str) -> None:
        """Empty what the test wrote to and keep the database, or drop it: when it holds
        many documents (a drop is cheaper than deleting them), other indexes, or
        documents the listener did not see written (another process's)."""
        written = self.written.take(name)
        objects, secondary = self._shape(name)
        if objects > MAX_DOCUMENTS_EMPTIED or secondary != self.secondary_indexes:
            self.client.drop_database(name)
            return
        if objects:
            database = self.client[name]
            for collection in sorted(written):
                database[collection].delete_many({})
            if self._shape(name)[0]:
                self.client.drop_database(name)
                return
        _forget_database(name)
        self.free.append(name)

    def _shape(self, name: str) -> tuple[int, int]:
        """(documents, secondary indexes): every collection has one `_id` index."""
        stats = self.client[name].command("dbStats")
        return int(stats["objects"]), int(stats["indexes"]) - int(stats["collections"])


def _forget_database(name: str) -> None:
    """What this process remembers about a database's contents, forgotten."""
    from streams.memory.window import WINDOWS
    from streams.search import vectors
    from streams.store import audit, webhooks

    WINDOWS.forget_database(name)
    vectors.forget_cached(name)
    webhooks.forget_cached(name)
    audit.forget_started(name)
