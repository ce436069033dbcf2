"""Store commands per page render do not grow with the data: counted at two sizes.

(Speed is measured by `python -m benchmarks ui_pages`, not here.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from benchmarks.seed import seed
from memory_admin.ui import observations as observation_views
from memory_admin.ui import scopes as scope_views
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.store import MemoryStore, search_pending
from streams.store.query_guard import QueryGuard
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db

AGENT = "bench-agent"


@pytest.fixture
def command_count(query_guard: QueryGuard, memory_db: str, monkeypatch) -> Iterator[list[int]]:
    """A one-item list holding how many commands this test's thread (the pages it
    renders) sent to its database; background threads (the search fold) not counted."""
    counted = [0]
    original = query_guard.started
    mine = threading.get_ident()

    def started(event: Any) -> None:
        if (
            event.database_name == memory_db
            and event.command_name not in ("endSessions",)
            and threading.get_ident() == mine
        ):
            counted[0] += 1
        original(event)

    monkeypatch.setattr(query_guard, "started", started)
    yield counted


def _world(store: MemoryStore, *, scopes: int, observations: int) -> str:
    seed(store, agent_id=AGENT, scopes=scopes, observations=observations, search_index=False)
    doc = store.scopes.collection.find_one({"agent_id": AGENT, "seq": scopes // 2})
    scope = store.scopes.get(doc["_id"])
    consolidation_edit(store=store, scope=scope, text="Likes tea.", expected_version=0, actor="t")
    scope = store.scopes.get(doc["_id"])
    consolidation_edit(
        store=store, scope=scope, text="Likes green tea.", expected_version=1, actor="t"
    )
    scope = store.scopes.get(doc["_id"])
    for i in range(3):
        observation_add(store=store, scope=scope, content=f"Pending {i} about tea.")
    # The adds' search postings are folded by a background thread within 2 s: fold them
    # now, so no fold's commands land inside a page's count.
    search_pending.flush()
    return scope.id


def _pages(scope_id: str) -> dict[str, tuple[str, dict[str, str]]]:
    browse = reverse("ui:scopes") + f"?agent={AGENT}"
    detail = reverse("ui:scope_detail", args=[scope_id])
    return {
        "browser": (browse, {}),
        "browser type": (browse + "&type=individual", {}),
        "browser page 2": (browse + "&cursor=eyJiZWZvcmUiOjEwfQ", HTMX),
        "browser oldest": (browse + "&sort=oldest", HTMX),
        "detail": (detail, {}),
        "detail log pending": (detail + "?status=pending", HTMX),
        "compare": (reverse("ui:consolidation_compare", args=[scope_id]), {}),
        "dashboard": (reverse("ui:dashboard"), {}),
        "jobs": (reverse("ui:jobs"), {}),
        "usage": (reverse("ui:usage") + f"?agent={AGENT}&days=30", {}),
        "prompts": (
            reverse("ui:prompt_edit", args=[AGENT, "consolidation"]) + f"?scope={scope_id}",
            {},
        ),
    }


def _counts(client: Any, scope_id: str, counted: list[int]) -> dict[str, int]:
    result = {}
    for label, (url, headers) in _pages(scope_id).items():
        counted[0] = 0
        response = client.get(url, **headers)
        assert response.status_code == 200, (label, response.status_code)
        result[label] = counted[0]
    return result


def test_store_commands_per_page_are_the_same_at_two_sizes(
    client_as, store, command_count, monkeypatch
):
    # Small pages, so the smaller world already fills them and needs more than one.
    monkeypatch.setattr(scope_views, "PAGE_SIZE", 5)
    monkeypatch.setattr(observation_views, "LOG_PAGE_SIZE", 5)
    client = client_as("viewer")

    small_scope = _world(store, scopes=20, observations=100)
    small = _counts(client, small_scope, command_count)
    store.client.drop_database(store.db.name)
    store.ensure_indexes()
    large_scope = _world(store, scopes=400, observations=2_000)
    large = _counts(client, large_scope, command_count)

    assert large == small
    # And few: no per-row queries anywhere (the scope page's cost-and-health panel reads
    # its 30 day counters and its oldest pending observation: 13; the review counts: 14;
    # a refused consolidation job and why: 15; the questions in effect: 16; what the log's
    # current facts superseded, in one read for the page: 17; the dashboard reads the
    # agents' and days' counter shards beside their documents, `streams.store.counter_shards`:
    # 18; the scope page's ranking switches and its limits and models each read the agent's
    # settings document: 19).
    assert max(large.values()) <= 19, large
    assert min(large.values()) >= 1, large  # counted at all: each page reads the store
