"""Suite-wide fixtures: one embedded store per run, one database per test, the query guard."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_admin.runtime.embedded_store import EmbeddedServer, start_server, stop_server
from streams.memory import window
from streams.store import DECLARED_INDEXES, MemoryStore
from streams.store.client import close_clients, get_client
from streams.store.flavour import workarounds
from streams.store.query_guard import QueryGuard
from tests.db_pool import DatabasePool, WrittenCollections

pytest_plugins = ["tests.fakes.openai_server", "tests.task_mode"]

QUERY_GUARD = QueryGuard(DECLARED_INDEXES)
# Every reuse of an add's kept window is compared with a fresh read: a write path that
# changes an observation's text without moving its scope's log revision fails the test.
window.CHECK = True
WRITTEN = WrittenCollections()


@pytest.fixture(scope="session")
def embedded_mongo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A real SecantusDB server for the whole run, reached over the wire like production."""
    root: Path = tmp_path_factory.mktemp("mongo")
    server = start_server(
        storage_path=root / "data", log_path=root / "server.log", start_timeout=60, detached=False
    )
    os.environ["MEMORY_TEST_MONGODB_URI"] = server.uri  # for subprocesses the tests start
    # The guard is attached to the one client every test and every served request uses.
    get_client(server.uri, event_listeners=[QUERY_GUARD, WRITTEN])
    yield server
    close_clients()
    stop_server(server)


@pytest.fixture(scope="session")
def database_pool(embedded_mongo: EmbeddedServer) -> DatabasePool:
    return DatabasePool(get_client(embedded_mongo.uri), embedded_mongo.uri, WRITTEN)


@pytest.fixture(autouse=True)
def memory_db(
    embedded_mongo: EmbeddedServer, database_pool: DatabasePool, settings
) -> Iterator[str]:
    """Every test gets an empty database of its own, with the declared indexes applied
    (`tests/db_pool.py`: one a test before left, emptied, or a new one)."""
    db_name = database_pool.take()
    settings.MONGODB_URI = embedded_mongo.uri
    # Jobs run synchronously after the request, as before the in-process pool existed,
    # so tests stay deterministic; tests/api/test_never_block.py turns the pool on.
    settings.MEMORY_INPROCESS_WORKERS = 0
    settings.MEMORY_INPROCESS_ISOLATION = "thread"
    # The race tests overlap transactions of one process on purpose: no gate here
    # (tests/streams/store/test_transaction_gate.py tests it; the rehearsal runs with it).
    settings.MEMORY_STORE_TRANSACTIONS_PER_PROCESS = 0
    settings.MONGODB_DB = db_name
    client = get_client(embedded_mongo.uri)
    yield db_name
    # Background work still writing (a chat turn being filed, a pooled job) would race
    # the drop, and the embedded store can deadlock on a drop that meets an open
    # transaction: wait for it first.
    from memory_admin.api.v1.chat import after_send_drain
    from memory_admin.jobs import inprocess

    after_send_drain()
    inprocess.shutdown()  # the pool's threads and job-runner children end here
    # Counts and log records written behind (access counts go in transactions) must not
    # meet the drop either: write what is queued, and wait for a flush in flight.
    from streams.store import access_log, search_pending, write_behind

    access_log.flush()
    write_behind.flush()
    search_pending.flush()
    # A transaction whose client went away mid-way (a test's own client closed under a
    # background fold, a killed writer) stays open until a later statement reaps it, and
    # a drop that meets it spins forever holding the store's lock. Between tests nothing
    # legitimate is open: abort what is left, as driver test suites do.
    if workarounds(client).kill_sessions_before_drop:  # the embedded store's (flavour.py)
        client.admin.command("killAllSessions", [])
    database_pool.give_back(db_name)


@pytest.fixture(autouse=True)
def query_guard(memory_db: str) -> Iterator[QueryGuard]:
    """Fail any test that sent an unindexed or unbounded query to a memory collection."""
    QUERY_GUARD.take()
    yield QUERY_GUARD
    violations = QUERY_GUARD.take()
    if violations:
        pytest.fail("queries not served by a declared index:\n" + "\n".join(violations))


@pytest.fixture
def store(embedded_mongo: EmbeddedServer, memory_db: str) -> MemoryStore:
    from memory_admin.stores import erasure_key

    # The served requests' key, so a tombstone one side leaves the other side sees.
    return MemoryStore(
        get_client(embedded_mongo.uri),
        memory_db,
        erasure_key=erasure_key(),
        transactions_per_process=0,  # as the served requests' (`memory_db`)
    )


@pytest.fixture(autouse=True)
def celery_join_state() -> Iterator[None]:
    """Undo a flag eager Celery can leak between tests.

    Eager `apply_async` sets a process-global "inside a task" flag and restores the
    value it saw on entry; two threads doing so at once (a request and a pooled job)
    can leave it set, and every later `result.get()` then refuses to run.
    """
    from celery.result import _set_task_join_will_block

    yield
    _set_task_join_will_block(False)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the re-runs (Django on PostgreSQL, jobs through Redis) now, beside this one."""
    from tests.integration.side_runs import start_early

    start_early(session)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The local model's tests need the `local-embeddings` extra (torch, ~1.2 GB), which
    the light default and CI do not install: without it they are deselected (reported in
    the run's summary), never skipped. `make test-local-embeddings` runs them with it;
    MEMORY_TEST_LOCAL_EMBEDDINGS=1 makes them run (and fail) without it."""
    from streams.search.local_embeddings import local_available

    if os.environ.get("MEMORY_TEST_LOCAL_EMBEDDINGS") == "1" or local_available():
        return
    kept = [i for i in items if i.get_closest_marker("local_embeddings") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
