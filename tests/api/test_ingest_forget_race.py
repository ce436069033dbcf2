"""Ingest racing forget-user of the same person, through the API, in parallel threads.

For 10 seconds two threads send one person's (and a second person's) messages to a
few sessions, formations starting as thresholds are reached, while a third forgets
that person over and over. No request may fail with a 5xx (a 409 would be a clear
answer), and afterwards every session's counters equal what is stored.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter

from memory_admin.models import ApiKey
from tests.api.conftest import API, bearer_client

RACE_SECONDS = 10.0
AGENT = "agent-race"
SESSIONS = ["s1", "s2", "s3"]


def test_ingest_and_forget_user_in_parallel(transactional_db, store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_FORMATION_MAX_MESSAGES = 6
    _, raw = ApiKey.generate(name="race", agent_ids=[])
    statuses: Counter[tuple[str, int]] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + RACE_SECONDS
    ids = itertools.count()

    def record(kind: str, response) -> None:
        with lock:
            statuses[kind, response.status_code] += 1
            if response.status_code >= 500:
                errors.append(response.content.decode()[:300])

    def ingest_loop(speaker: str) -> None:
        client = bearer_client(raw)
        while time.monotonic() < stop:
            n = next(ids)
            session = SESSIONS[n % len(SESSIONS)]
            body = {
                "user_id": "u1",
                "user_name": "Gene",
                "messages": [
                    {"id": f"m{n}", "role": "user", "content": f"I prefer tea number {n}."},
                    {"id": f"m{n}b", "role": "user", "content": "I live in Lisbon.",
                     "user_id": speaker},
                ],
            }  # fmt: skip
            record(
                "ingest",
                client.post(
                    f"{API}/agents/{AGENT}/sessions/{session}/messages",
                    body,
                    content_type="application/json",
                ),
            )

    def forget_loop() -> None:
        client = bearer_client(raw)
        while time.monotonic() < stop:
            record("forget", client.delete(f"{API}/agents/{AGENT}/users/u1"))
            time.sleep(0.05)

    threads = [
        threading.Thread(target=ingest_loop, args=("u1",)),
        threading.Thread(target=ingest_loop, args=("u2",)),
        threading.Thread(target=forget_loop),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(RACE_SECONDS + 60)

    assert not errors, errors
    # The race really ran both ways, and every answer was an accepted or a clear one.
    assert statuses["ingest", 202] > 20 and statuses["forget", 202] > 5, statuses
    assert {status for _, status in statuses} <= {202, 409}, statuses
    print(dict(statuses))
    for session in SESSIONS:
        buffer = store.sessions.get_buffer(AGENT, session)
        if buffer is None:
            continue
        unformed = list(
            store.sessions.messages.find(
                {"agent_id": AGENT, "session_id": session, "formed": False}
            ).limit(10_000)
        )
        assert buffer["unformed_count"] == len(unformed), (session, buffer, len(unformed))
        tokens = sum(m["weighted_tokens"] for m in unformed)
        assert abs(buffer["unformed_tokens"] - tokens) < 1e-6, (session, buffer, tokens)
