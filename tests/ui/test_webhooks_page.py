"""The webhooks page of an agent: its hooks (never their secrets) and each one's delivery log."""

from __future__ import annotations

from django.urls import reverse

from memory_admin.integrations.webhooks import deliver_due
from memory_admin.stores import get_store
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.webhooks import webhook_create
from tests.ui.helpers import HTMX

AGENT = "support-bot"


def test_the_page_lists_hooks_and_shows_a_delivery_log_with_its_attempts(client_as, settings):
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 1
    store = get_store()
    hook = webhook_create(
        store=store,
        agent_id=AGENT,
        url="http://127.0.0.1:9/hook",
        events=["observation.created"],
        actor="t",
        allow_private=True,
    )
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    observation_add(store=store, scope=scope, content="Gene likes tea.")
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    deliver_due(store)  # nobody listens on port 9: one attempt with no answer

    viewer = client_as("viewer")
    url = reverse("ui:webhooks", args=[AGENT])
    html = viewer.get(url).content.decode()
    assert f'data-webhook-id="{hook["id"]}"' in html and "http://127.0.0.1:9/hook" in html
    assert hook["secret"] not in html
    log = viewer.get(url, {"hook": hook["id"]}, **HTMX).content.decode()
    assert "<html" not in log and "observation.created" in log
    assert "no answer" in log and "pill-pending" in log
    bad = viewer.get(url, {"hook": "nope"}).content.decode()
    assert "webhook not found" in bad
    other = viewer.get(reverse("ui:webhooks", args=["other-agent"]), {"hook": hook["id"]})
    assert "webhook not found" in other.content.decode()
    assert client_as(None).get(url).status_code == 403
