"""Webhook delivery against a real local HTTP receiver: signed, in order per object, retried
until it arrives (the receiver fails its first two deliveries), from an outbox written in
the change's own transaction."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from bson import ObjectId

from memory_admin.integrations.webhooks import http_post
from streams.core.documents import utcnow
from streams.memory.consolidation import consolidation_edit
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.records.webhook_delivery import webhook_deliver_due
from streams.records.webhooks import webhook_create, webhook_outbox_add
from streams.store import MemoryStore

AGENT = "a1"
EVENTS = [
    "observation.created",
    "observation.updated",
    "observation.deleted",
    "consolidation.version",
]


class Receiver:
    """A real HTTP server on a loopback port. `script`: what the first requests get
    (an HTTP status, or "drop": the connection closed without an answer, as a receiver
    killed mid-delivery); every later request gets 200 and is recorded."""

    def __init__(self, script: list[int | str]) -> None:
        self.script = list(script)
        self.received: list[dict[str, Any]] = []
        self.requests = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests += 1
                step = receiver.script.pop(0) if receiver.script else 200
                if step == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if step == 200:
                    receiver.received.append({"headers": dict(self.headers), "body": body})
                self.send_response(int(step))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made: list[Receiver] = []

    def make(script: list[int | str]) -> Receiver:
        made.append(Receiver(script))
        return made[-1]

    yield make  # type: ignore[misc]
    for r in made:
        r.close()


def _deliver_until_done(store: MemoryStore, passes: int = 30) -> list[dict[str, int]]:
    """Passes of the runner, an hour apart (past every backoff, within the day)."""
    results = []
    now = utcnow()
    for n in range(passes):
        results.append(
            webhook_deliver_due(
                store=store,
                post=http_post,
                timeout=5,
                allow_private=True,
                now=now + timedelta(minutes=30 * n),
            )
        )
        if not store.webhooks.undelivered(limit=1):
            break
    return results


def test_every_event_arrives_in_order_per_object_with_a_valid_signature(
    store: MemoryStore, receiver
) -> None:
    box = receiver([500, "drop"])  # fails its first two deliveries
    hook = webhook_create(
        store=store, agent_id=AGENT, url=box.url, events=EVENTS, actor="t", allow_private=True
    )
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    a = observation_add(store=store, scope=scope, content="Gene likes tea.")
    observation_update(store=store, observation=a, content="Gene likes green tea.")
    b = observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content="B.")
    observation_delete(store=store, observation=store.observations.get(ObjectId(a.id)))
    fresh = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(store=store, scope=fresh, text="Gene: tea.", expected_version=0, actor="t")
    written = 5

    results = _deliver_until_done(store)

    assert sum(r["delivered"] for r in results) == written
    assert box.requests == written + 2  # the two failures were delivered again
    bodies = []
    for got in box.received:
        signature = got["headers"]["X-Memory-Signature"]
        expected = hmac.new(hook["secret"].encode(), got["body"], hashlib.sha256).hexdigest()
        assert signature == f"sha256={expected}"
        bodies.append(json.loads(got["body"]))
    assert set(bodies[0]) == {"id", "event", "agent_id", "created_at", "data"}
    per_object: dict[str, list[str]] = {}
    for body in bodies:
        key = body["data"].get("id") or f"scope:{body['data']['scope_id']}"
        per_object.setdefault(key, []).append(body["event"])
    assert per_object[a.id] == ["observation.created", "observation.updated", "observation.deleted"]
    assert per_object[b.id] == ["observation.created"]
    assert per_object[f"scope:{scope.id}"] == ["consolidation.version"]
    updated = next(b for b in bodies if b["event"] == "observation.updated")
    assert updated["data"]["content"] == "Gene likes green tea."
    assert len({b["id"] for b in bodies}) == written  # each event once, never lost

    log = store.webhooks.log(webhook_id=ObjectId(hook["id"]), before=None, limit=10)
    first = next(d for d in log if d["event"] == "observation.created" and a.id in d["body"])
    assert [x["status_code"] for x in first["attempts"]] == [500, None, 200]
    assert first["attempts"][1]["error"]  # the dropped connection, recorded


def test_an_inactive_hook_stops_and_a_day_of_failures_gives_up(store: MemoryStore, receiver):
    dead = receiver([500] * 100)
    hook = webhook_create(
        store=store, agent_id=AGENT, url=dead.url, events=EVENTS, actor="t", allow_private=True
    )
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")

    results = _deliver_until_done(store, passes=60)

    assert sum(r["failed"] for r in results) == 1  # gave up after a day of backoff
    (entry,) = store.webhooks.log(webhook_id=ObjectId(hook["id"]), before=None, limit=5)
    assert entry["status"] == "failed" and 20 <= len(entry["attempts"]) <= 50
    gaps = [
        (later["at"] - earlier["at"]).total_seconds()
        for earlier, later in zip(entry["attempts"], entry["attempts"][1:], strict=False)
    ]
    assert gaps == sorted(gaps)  # backoff never shrinks

    observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content="New.")
    store.webhooks.update(ObjectId(hook["id"]), AGENT, {"active": False})  # queued, then off
    before = dead.requests
    results = _deliver_until_done(store)
    assert sum(r["stopped"] for r in results) == 1 and dead.requests == before
    observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content="Z.")
    assert store.webhooks.undelivered(limit=5) == []  # an inactive hook gets nothing new


def test_the_outbox_entry_is_part_of_the_changes_transaction(store: MemoryStore) -> None:
    webhook_create(
        store=store,
        agent_id=AGENT,
        url="http://127.0.0.1:9/hook",
        events=EVENTS,
        actor="t",
        allow_private=True,
    )

    def change(session) -> None:
        webhook_outbox_add(
            store=store,
            agent_id=AGENT,
            event="observation.created",
            objects=[("observation:x", {"id": "x"})],
            session=session,
        )
        raise RuntimeError("the change fails after writing its outbox entry")

    with pytest.raises(RuntimeError):
        store.in_transaction(change)
    assert store.webhooks.undelivered(limit=5) == []
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    assert len(store.webhooks.undelivered(limit=5)) == 1


def test_no_hook_no_entry_and_an_unwanted_event_is_not_queued(store: MemoryStore) -> None:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    assert store.webhooks.undelivered(limit=5) == []
    webhook_create(
        store=store,
        agent_id=AGENT,
        url="http://127.0.0.1:9/hook",
        events=["user.forgotten"],
        actor="t",
        allow_private=True,
    )
    observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content="x y")
    assert store.webhooks.undelivered(limit=5) == []


def test_forget_user_deletes_the_deliveries_of_their_observations_and_sends_a_receipt(
    store: MemoryStore,
) -> None:
    from streams.people.privacy import forget_user_request, forget_user_run
    from tests.task_mode import run_job

    webhook_create(
        store=store,
        agent_id=AGENT,
        url="http://127.0.0.1:9/hook",
        events=["observation.created", "user.forgotten"],
        actor="t",
        allow_private=True,
    )
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    other, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u2"))
    observation_add(store=store, scope=other, content="Ada likes coffee.")
    job = forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="t")

    run = run_job(store=store, job_id=job.id, work=lambda r: forget_user_run(store=store, run=r))

    assert run is not None
    waiting = store.webhooks.undelivered(limit=10)
    assert sorted(d["event"] for d in waiting) == ["observation.created", "user.forgotten"]
    assert all("Gene likes tea." not in d["body"] for d in waiting)
    receipt = json.loads(next(d for d in waiting if d["event"] == "user.forgotten")["body"])
    assert receipt["data"]["user_id"] == "u1"
    assert set(receipt["data"]) == {"user_id", "forgotten_at"}
    assert run.result["deleted"]["memory_webhook_deliveries"] == 1
