"""The webhook SSRF check: the URL's host is resolved before the store transaction (a
slow DNS answer never holds one open), and again at delivery, where the POST goes to
the address that check approved (a name re-pointed to a private address meanwhile, DNS
rebinding, is refused, and is never resolved a second time by the HTTP client)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from bson import ObjectId

import memory_admin.integrations.webhooks as http
from streams.actions.base import Actor
from streams.actions.webhooks import do_webhook_create, do_webhook_update
from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.webhook_delivery import webhook_deliver_due
from streams.store import MemoryStore

AGENT = "a1"
PUBLIC = "93.184.216.34"
ACTOR = Actor(kind="api", name="test")


class Dns:
    """`socket.getaddrinfo` for the webhooks module: answers `address`, and notes whether
    a store transaction was open at the time."""

    def __init__(self, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.address = PUBLIC
        self.calls: list[bool] = []  # for each resolution: inside a transaction?
        self.in_transaction = False
        real = store.in_transaction

        def watched(work: Any, *args: Any, **kwargs: Any) -> Any:
            def inside(session: Any) -> Any:
                self.in_transaction = True
                try:
                    return work(session)
                finally:
                    self.in_transaction = False

            return real(inside, *args, **kwargs)

        monkeypatch.setattr(store, "in_transaction", watched)
        monkeypatch.setattr("streams.records.webhooks.socket.getaddrinfo", self.resolve)

    def resolve(self, host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        self.calls.append(self.in_transaction)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (self.address, port))]


@pytest.fixture
def dns(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dns]:
    yield Dns(store, monkeypatch)


def test_create_and_update_resolve_the_host_outside_the_transaction(
    store: MemoryStore, dns: Dns
) -> None:
    hook = do_webhook_create(
        store=store,
        actor=ACTOR,
        agent_id=AGENT,
        url="https://hooks.example.com/in",
        events=["observation.created"],
        allow_private=False,
    )
    assert dns.calls == [False]
    stored = store.webhooks.get(ObjectId(hook["id"]))
    assert stored is not None
    do_webhook_update(
        store=store,
        actor=ACTOR,
        hook=stored,
        url="https://other.example.com/in",
        allow_private=False,
    )
    assert dns.calls == [False, False]


def test_a_private_answer_is_refused_before_any_transaction(store: MemoryStore, dns: Dns) -> None:
    dns.address = "10.0.0.7"
    with pytest.raises(InvalidInput, match="private"):
        do_webhook_create(
            store=store,
            actor=ACTOR,
            agent_id=AGENT,
            url="https://hooks.example.com/in",
            events=["observation.created"],
            allow_private=False,
        )
    assert dns.calls == [False]
    assert store.webhooks.count_for_agent(AGENT) == 0


def test_delivery_rechecks_and_posts_to_the_checked_address(store: MemoryStore, dns: Dns) -> None:
    do_webhook_create(
        store=store,
        actor=ACTOR,
        agent_id=AGENT,
        url="https://hooks.example.com:8443/in",
        events=["observation.created"],
        allow_private=False,
    )
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    posted: list[tuple[str, str | None]] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float, address=None) -> int:
        posted.append((url, address))
        return 204

    # The name now points at a private address (rebinding): refused, nothing posted.
    dns.address = "127.0.0.1"
    counts = webhook_deliver_due(store=store, post=post, timeout=1, allow_private=False)
    assert counts["retrying"] == 1 and posted == []
    (entry,) = store.webhooks.undelivered(limit=5)
    assert "private" in entry["attempts"][-1]["error"]

    # Public again: posted, to the address that was checked.
    dns.address = PUBLIC
    counts = webhook_deliver_due(
        store=store,
        post=post,
        timeout=1,
        allow_private=False,
        now=utcnow() + timedelta(hours=1),
    )
    assert counts["delivered"] == 1
    assert posted == [("https://hooks.example.com:8443/in", PUBLIC)]


def test_the_http_client_connects_to_the_pinned_address_with_the_name_as_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[Any] = []

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> Client:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

        def post(self, url: str, **kwargs: Any) -> Any:
            sent.append((url, kwargs["headers"]["Host"], kwargs["extensions"]))
            return type("Answer", (), {"status_code": 200})()

    monkeypatch.setattr(http.httpx, "Client", Client)
    assert http.http_post("https://hooks.example.com:8443/in?x=1", b"{}", {}, 1, PUBLIC) == 200
    assert http.http_post("http://hooks.example.com/in", b"{}", {}, 1, "2606:2800::1") == 200
    assert sent == [
        (
            f"https://{PUBLIC}:8443/in?x=1",
            "hooks.example.com:8443",
            {"sni_hostname": "hooks.example.com"},
        ),
        ("http://[2606:2800::1]/in", "hooks.example.com", {}),
    ]
