"""A worker killed in the middle of a write does not block its session (probe finding F2).

The killed process leaves its store transaction open (closing a connection does not
abort one). Writes to what it touched conflict until the store reaps it. Before, a
retry or a new message to that session waited 30 s and answered 500; now it answers
503 `busy` with Retry-After within the store's conflict window, and the embedded store
reaps the orphan after MEMORY_STORE_TRANSACTION_LIFETIME_SECONDS (10), not 60.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from streams.store.sessions import BUFFERS
from tests.api.conftest import API, assert_error

SESSION = f"{API}/agents/agent-1/sessions/s1"

ORPHAN = """
import sys, time
from pymongo import MongoClient
uri, db_name, agent, session_id = sys.argv[1:5]
client = MongoClient(uri)
session = client.start_session()
session.start_transaction()
done = client[db_name][sys.argv[5]].update_one(
    {"agent_id": agent, "session_id": session_id},
    {"$set": {"touched_by": "a worker about to die"}},
    session=session,
)
assert done.matched_count == 1, "no buffer to hold"
print("holding", flush=True)
time.sleep(600)
"""


def ingest(client, n: int):
    body = {
        "user_id": "u1",
        "user_name": "Gene",
        "messages": [{"id": f"m{n}", "role": "user", "content": f"I like tea number {n}."}],
    }
    return client.post(f"{SESSION}/messages", body, content_type="application/json")


@pytest.fixture
def orphan(embedded_mongo, memory_db):
    """Open a transaction on the session's buffer in another process, then SIGKILL it."""

    def leave() -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", ORPHAN, embedded_mongo.uri, memory_db, "agent-1", "s1", BUFFERS],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout.readline().strip() == "holding"
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            child.stdout.close()

    return leave


def test_a_session_held_by_a_killed_writer_answers_503_then_recovers(api, store, settings, orphan):
    settings.MEMORY_STORE_CONFLICT_SECONDS = 1.0
    assert ingest(api, 1).status_code == 202
    orphan()

    busy = ingest(api, 2)
    error = assert_error(busy, 503, "busy")
    assert "retry" in error["message"]
    assert busy["Retry-After"] == "1"
    again = ingest(api, 1)  # a retry of what was stored before: the same answer, not a 500
    assert again.status_code in (202, 503), again.content
    if again.status_code == 503:
        assert_error(again, 503, "busy")

    # The store reaps the orphan after its (shortened) transaction lifetime; meanwhile
    # every answer is a quick 503 with Retry-After, never a 500.
    deadline = time.monotonic() + 45  # the embedded store's default would be 60 s
    while True:
        answer = ingest(api, 2)
        if answer.status_code == 202:
            break
        assert_error(answer, 503, "busy")
        assert time.monotonic() < deadline, "the orphan transaction was not reaped"
        time.sleep(float(answer["Retry-After"]))
    assert store.sessions.get_buffer("agent-1", "s1")["unformed_count"] == 2


def test_a_page_whose_write_is_busy_answers_503_with_retry_after(rf):
    from memory_admin.web.middleware import StoreUnavailableMiddleware
    from streams.core.exceptions import Busy

    middleware = StoreUnavailableMiddleware(lambda request: None)
    request = rf.post("/ui/scopes/abc/observations")
    response = middleware.process_exception(request, Busy("held", retry_after=5))
    assert response is not None and response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"This memory is busy for a moment" in response.content
