"""Webhook delivery isolated per agent (issue 44): the periodic pass hands deliveries to
a pool of their own and returns, each agent holds at most its share of that pool, so
one agent's 30 slow receivers delay neither the sweeps nor another agent's delivery.

Ordering, not timing: the slow receivers answer only once the test lets them, and
everything asserted happens while they are all still held."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory_admin.integrations import webhooks
from memory_admin.jobs.tasks import deliver_webhooks
from streams.records.webhooks import webhook_create, webhook_outbox_add
from streams.store import MemoryStore
from tests.eventually import eventually

SLOW_AGENT, FAST_AGENT = "a-slow", "a-fast"
SLOW_RECEIVERS = 30
CAP = 2


class Receivers:
    """`/slow/N` answers once `release` is set (at most 20 s); `/fast` at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.slow_in_flight = 0
        self.slow_most = 0
        self.fast = threading.Event()
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/slow/"):
                    with receivers.lock:
                        receivers.slow_in_flight += 1
                        receivers.slow_most = max(receivers.slow_most, receivers.slow_in_flight)
                    receivers.release.wait(20)
                    with receivers.lock:
                        receivers.slow_in_flight -= 1
                else:
                    receivers.fast.set()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers(settings) -> Iterator[Receivers]:
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 2
    settings.MEMORY_WEBHOOK_THREADS = 8
    settings.MEMORY_WEBHOOK_AGENT_CONCURRENCY = CAP
    webhooks._pool = None  # made again with these settings
    made = Receivers()
    yield made
    made.close()
    if webhooks._pool is not None:
        eventually(webhooks._pool.idle, until=bool, within=30)
    webhooks._pool = None


def _hook(store: MemoryStore, agent_id: str, url: str) -> None:
    webhook_create(
        store=store,
        agent_id=agent_id,
        url=url,
        events=["observation.created"],
        actor="test",
        allow_private=True,
    )


def test_slow_receivers_of_one_agent_delay_neither_the_sweep_nor_another_agent(
    store: MemoryStore, receivers: Receivers
):
    base = f"http://127.0.0.1:{receivers.port}"
    for n in range(SLOW_RECEIVERS):
        _hook(store, SLOW_AGENT, f"{base}/slow/{n}")
    _hook(store, FAST_AGENT, f"{base}/fast")
    # The slow agent's entries are the older ones: first in the outbox's order.
    webhook_outbox_add(
        store=store,
        agent_id=SLOW_AGENT,
        event="observation.created",
        objects=[("observation:s", {"id": "s"})],
        session=None,
    )
    webhook_outbox_add(
        store=store,
        agent_id=FAST_AGENT,
        event="observation.created",
        objects=[("observation:f", {"id": "f"})],
        session=None,
    )
    swept = threading.Event()

    def sweep() -> None:  # what the periodic thread runs
        deliver_webhooks()
        swept.set()

    threading.Thread(target=sweep, daemon=True).start()
    assert swept.wait(60) and not receivers.release.is_set()  # the sweep did not wait
    assert receivers.fast.wait(60) and not receivers.release.is_set()  # nor did agent B
    assert receivers.slow_most <= CAP  # agent A held its share of the pool, no more
    receivers.release.set()


def test_the_agent_cap_leaves_the_rest_waiting_for_a_later_pass(
    store: MemoryStore, receivers: Receivers
):
    base = f"http://127.0.0.1:{receivers.port}"
    for n in range(5):
        _hook(store, SLOW_AGENT, f"{base}/slow/{n}")
    webhook_outbox_add(
        store=store,
        agent_id=SLOW_AGENT,
        event="observation.created",
        objects=[("observation:s", {"id": "s"})],
        session=None,
    )
    first = deliver_webhooks()
    assert first["dispatched"] == CAP and first["waiting"] == 5 - CAP
    again = deliver_webhooks()  # both still in flight: no room
    assert again["dispatched"] == 0
    receivers.release.set()
    eventually(webhooks.delivery_pool().idle, until=bool, within=30)
    later = deliver_webhooks()
    assert later["dispatched"] == min(CAP, 5 - CAP)
