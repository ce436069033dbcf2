"""The context log on the Users page and the session page: each call, newest first, paged."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory_admin.stores import get_store
from streams.context.assemble import context_assemble
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore, write_behind
from tests.ui.helpers import HTMX

AGENT = "support-bot"


@pytest.fixture(autouse=True)
def log_on(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CONTEXT_LOG_DAYS = 7


@pytest.fixture
def calls() -> list[str]:
    store = get_store()
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    observation_add(store=store, scope=individual, content="Gene likes green tea.")
    ids = []
    for n in range(23):
        result = context_assemble(
            store=store,
            agent_id=AGENT,
            user_id="u-gene",
            message=f"hello number {n}",
            session_id="s-1" if n % 2 else "s-2",
            caller="api:bot",
        )
        ids.append(result.call_id)
    write_behind.flush()
    return ids


def _user_url(**extra: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"agent": AGENT, "user": "u-gene", **extra}.items())
    return f"{reverse('ui:user_audit')}?{query}"


def test_the_users_page_lists_the_users_context_calls_newest_first_in_pages(client_as, calls):
    client = client_as("viewer")
    html = client.get(_user_url()).content.decode()
    assert "Context calls" in html
    assert html.index(f'data-context-call-id="{calls[-1]}"') < html.index(
        f'data-context-call-id="{calls[-2]}"'
    )
    assert f'data-context-call-id="{calls[0]}"' not in html  # on the next page
    assert "hello number 22" in html and "api:bot" in html
    assert "Gene likes green tea." in html  # the XML the agent was given
    assert "calls_cursor=" in html

    start = html.index("calls_cursor=") + len("calls_cursor=")
    cursor = html[start : html.index('"', start)]
    older = client.get(_user_url(part="context_calls", calls_cursor=cursor), **HTMX)
    part = older.content.decode()
    assert "<html" not in part and 'id="context-calls"' in part
    assert f'data-context-call-id="{calls[0]}"' in part


def test_the_session_page_lists_that_sessions_calls_only(client_as, calls):
    html = client_as("viewer").get(reverse("ui:session_detail", args=[AGENT, "s-1"]))
    text = html.content.decode()
    assert f'data-context-call-id="{calls[1]}"' in text
    assert f'data-context-call-id="{calls[0]}"' not in text  # session s-2


def test_a_forged_cursor_is_a_message_not_an_error(client_as, calls):
    response = client_as("viewer").get(_user_url(calls_cursor="bogus!!"))
    assert response.status_code == 200
    assert "malformed cursor" in response.content.decode()


def test_with_the_log_off_the_page_says_so(client_as, settings):
    settings.MEMORY_CONTEXT_LOG_DAYS = 0
    store = get_store()
    individual, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u-gene"))
    observation_add(store=store, scope=individual, content="Gene likes green tea.")
    html = client_as("viewer").get(_user_url()).content.decode()
    assert "the context log is off" in html


def test_the_replay_page_shows_the_call_as_it_was_and_a_diff_against_now(client_as, store) -> None:
    from django.urls import reverse

    from streams.memory.consolidation import consolidation_edit
    from tests.factories import ScopeFactory

    user = ScopeFactory.create(store=store, agent_id="agent-1", user_id="u1")
    consolidation_edit(
        store=store, scope=user, text="Gene likes tea.", expected_version=0, actor="t"
    )
    logged = MemoryStore(store.client, store.db.name, context_log_days=7)
    from streams.context.assemble import context_assemble

    call_id = context_assemble(
        store=logged, agent_id="agent-1", user_id="u1", message="hello"
    ).call_id
    write_behind.flush()
    consolidation_edit(
        store=store, scope=user, text="Gene likes coffee.", expected_version=1, actor="t"
    )

    viewer = client_as("viewer")
    html = viewer.get(reverse("ui:context_call_replay", args=["agent-1", call_id])).content
    text = html.decode()
    assert "As it was at" in text
    assert "<del>tea.</del>" in text and "<ins>coffee.</ins>" in text
    assert (
        viewer.get(reverse("ui:context_call_replay", args=["agent-1", "nope"])).status_code == 404
    )
    other = reverse("ui:context_call_replay", args=["agent-2", call_id])
    assert viewer.get(other).status_code == 404


def test_retrieval_health_is_on_the_dashboard_and_the_usage_page(client_as, calls) -> None:
    store = get_store()
    context_assemble(
        store=store, agent_id=AGENT, user_id="u-gene", message="Do you remember the volcano?"
    )
    write_behind.flush()
    viewer = client_as("viewer")
    dashboard = viewer.get(reverse("ui:dashboard")).content.decode()
    assert 'id="retrieval-health"' in dashboard and f"Retrieval health of {AGENT}" in dashboard
    assert 'data-flag="ok"' in dashboard
    assert "recall phrase: do you remember (1)" in dashboard
    usage = viewer.get(reverse("ui:usage"), {"agent": AGENT, "days": "30"}).content.decode()
    assert 'id="retrieval-health"' in usage and "last 30 days" in usage
    assert 'data-signal="observations_per_scope"' in usage
