"""`GET /health`: no key needed, the configured modes, 503 naming the store when it is down."""

from __future__ import annotations

from django.test import Client

from streams.core.exceptions import Unavailable
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error


def test_health_answers_without_a_key(db):
    response = Client().get(f"{API}/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "store": "ok",
        "llm": "offline",
        "queue": "eager",
        "store_mode": "mongodb",
        "llm_output": None,
        "warnings": [],
        "rate_limit": "off",
    }


def test_health_reports_configured_provider_and_broker(db, settings):
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    body = Client().get(f"{API}/health").json()
    assert (body["llm"], body["queue"]) == ("openai", "broker")


def test_health_reports_embedded_store_mode(db, settings, monkeypatch):
    monkeypatch.setattr("memory_admin.api.v1.health.store_mode", lambda: "embedded")
    assert Client().get(f"{API}/health").json()["store_mode"] == "embedded"


def test_health_is_503_naming_the_store_when_it_is_unreachable(db, monkeypatch):
    def down(self: MemoryStore) -> None:
        raise Unavailable("the memory store is unreachable: 10.0.0.7:27017 timed out")

    monkeypatch.setattr(MemoryStore, "ping", down)
    error = assert_error(Client().get(f"{API}/health"), 503, "unavailable")
    assert error["details"]["store"] == "unavailable"
    assert error["details"]["llm"] == "offline"
    assert "10.0.0.7" not in error["message"]
