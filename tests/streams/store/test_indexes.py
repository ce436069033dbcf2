"""A process's start asks for the indexes: where they are in place it reads, and writes none.

Each web worker and each job runner ensures the indexes once at its start. Sent as
`createIndexes` of what exists (a no-op write per collection), that was a second per
collection on a loaded embedded store: three job runners starting beside 16 clients'
adds (`benchmarks concurrency`) stalled them for seconds.
"""

from __future__ import annotations

from pymongo import MongoClient, monitoring

from streams.store import DECLARED_INDEXES, MemoryStore


class Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_indexes_in_place_are_read_not_created_again(store, embedded_mongo, memory_db):
    commands = Commands()
    client = MongoClient(embedded_mongo.uri, event_listeners=[commands])
    try:
        names = MemoryStore(client, memory_db).ensure_indexes()
    finally:
        client.close()
    assert "createIndexes" not in commands.names
    assert len(names) == len(DECLARED_INDEXES)  # every declared index named as in place


def test_a_missing_index_is_created_and_only_it(store, embedded_mongo, memory_db):
    spec = DECLARED_INDEXES[-1]
    name = spec.model().document["name"]
    store.db[spec.collection].drop_index(name)
    commands = Commands()
    client = MongoClient(embedded_mongo.uri, event_listeners=[commands])
    try:
        MemoryStore(client, memory_db).ensure_indexes()
    finally:
        client.close()
    assert commands.names.count("createIndexes") == 1
    assert name in store.db[spec.collection].index_information()
