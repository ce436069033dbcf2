"""The audit log page, the user audit page, its JSON export, and forget user (admins only)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.audit import audit_page, audit_record
from tests.ui.helpers import HTMX

AGENT = "support-bot"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@pytest.fixture
def gene(store):
    """User u-gene: an individual memory (one private note) and one group observation."""
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    observation_add(
        store=store,
        scope=individual,
        content="Gene likes green tea.",
        source_session_id="s-42",
        source_message_ids=["m-1", "m-2"],
    )
    observation_add(store=store, scope=individual, content="Gene is pregnant.", private=True)
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden Team"
    )
    observation_add(
        store=store, scope=group, content="Gene runs the Friday demo.", related_user_ids=["u-gene"]
    )
    return individual


def user_url(name: str = "ui:user_audit", **extra: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"agent": AGENT, "user": "u-gene", **extra}.items())
    return f"{reverse(name)}?{query}"


# -- audit log ----------------------------------------------------------------------------


def test_the_audit_log_page_filters_and_pages(client_as, store):
    for i in range(30):
        audit_record(
            store=store,
            actor="ui:alice" if i % 3 == 0 else "api:bot",
            action="scope.update",
            object_type="scope",
            object_id=f"{i:024x}",
            summary={"consolidation_threshold": {"before": 10, "after": 5}},
        )
    client = client_as("viewer")
    page = client.get(reverse("ui:audit_log"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="audit-table"' in html and "<html" in html
    assert html.count("data-audit-id") == 25 and "Older" in html
    assert "consolidation_threshold: 10 → 5" in html
    partial = client.get(reverse("ui:audit_log"), {"actor": "ui:alice"}, **HTMX)
    body = partial.content.decode()
    assert "<html" not in body and body.count("data-audit-id") == 10
    assert "api:bot" not in body
    cursor = page.context["page"].next_cursor
    older = client.get(reverse("ui:audit_log"), {"cursor": cursor}, **HTMX).content.decode()
    assert older.count("data-audit-id") == 5


def test_a_forged_cursor_is_a_message_not_an_error(client_as):
    response = client_as("viewer").get(reverse("ui:audit_log"), {"cursor": "%%%"})
    assert response.status_code == 200
    assert "malformed cursor" in response.content.decode()


def test_the_audit_pages_need_a_role(client_as):
    client = client_as(None)
    assert client.get(reverse("ui:audit_log")).status_code == 403
    assert client.get(reverse("ui:user_audit")).status_code == 403


# -- user audit ---------------------------------------------------------------------------


def test_the_user_audit_shows_memory_with_provenance(client_as, gene):
    response = client_as("viewer").get(user_url())
    assert response.status_code == 200
    html = response.content.decode()
    session = reverse("ui:session_detail", args=["support-bot", "s-42"])
    assert "Gene likes green tea." in html
    assert f'session <a href="{session}"><code>s-42</code></a>' in html
    assert "<code>m-1</code>" in html
    assert "Gene is pregnant." in html and "pill-private" in html
    assert "Gene runs the Friday demo." in html and "Eden Team" in html
    assert "Export JSON" in html
    assert "Forget this user" not in html  # viewers do not see it (and may not use it)


def test_the_parts_swap_as_partials(client_as, gene):
    client = client_as("viewer")
    observations = client.get(user_url(part="observations"), **HTMX).content.decode()
    assert 'id="user-observations"' in observations
    assert "<html" not in observations and "Gene likes green tea." in observations
    related = client.get(user_url(part="related"), **HTMX).content.decode()
    assert "<html" not in related and "Gene runs the Friday demo." in related


def test_an_unknown_user_and_bad_ids(client_as):
    client = client_as("viewer")
    html = client.get(user_url()).content.decode()
    # Nothing is remembered: the page says so and offers nothing to export or forget.
    assert "remembers nothing" in html and "Export JSON" not in html
    long = client.get(reverse("ui:user_audit"), {"agent": AGENT, "user": "x" * 200})
    assert long.status_code == 200 and "form-error" in long.content.decode()
    assert client.get(reverse("ui:user_audit")).status_code == 200


def test_the_export_downloads_json_and_is_audited(client_as, gene, store):
    response = client_as("viewer").get(user_url("ui:user_export"))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    data = json.loads(response.content)  # the API's export document (tests/ui/test_import_page.py)
    own, group = data["scopes"]
    assert [o["content"] for o in own["observations"]] == [
        "Gene likes green tea.",
        "Gene is pregnant.",
    ]
    assert own["observations"][1]["private"] is True
    assert [o["content"] for o in group["observations"]] == ["Gene runs the Friday demo."]
    [entry] = audit_page(store=store, action="user.export").items
    assert entry.actor == "ui:viewer-user" and entry.object_id == "u-gene"


# -- forget user --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_admins_may_forget(client_as, gene, store, role):
    client = client_as(role)
    assert client.get(user_url("ui:user_forget")).status_code == 403
    response = client.post(
        reverse("ui:user_forget"), {"agent": AGENT, "user": "u-gene", "confirm": "u-gene"}
    )
    assert response.status_code == 403
    assert audit_page(store=store, action="user.forget").items == []
    assert store.scopes.get(_oid(gene.id)) is not None


def _oid(value: str):
    from bson import ObjectId

    return ObjectId(value)


def test_a_wrong_confirmation_forgets_nothing(client_as, gene, store):
    client = client_as("admin")
    page = client.get(user_url("ui:user_forget"))
    assert page.status_code == 200 and "Type <code>u-gene</code>" in page.content.decode()
    response = client.post(
        reverse("ui:user_forget"), {"agent": AGENT, "user": "u-gene", "confirm": "u-gen"}
    )
    assert response.status_code == 422
    assert "nothing was forgotten" in response.content.decode()
    assert store.scopes.get(_oid(gene.id)) is not None
    assert audit_page(store=store, action="user.forget").items == []


def test_an_admin_forgets_and_sees_the_receipt(
    client_as, gene, store, django_capture_on_commit_callbacks
):
    client = client_as("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("ui:user_forget"), {"agent": AGENT, "user": "u-gene", "confirm": "u-gene"}
        )
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("ui:user_audit"))
    page = client.get(response["Location"])
    html = page.content.decode()
    assert "Deletion receipt" in html and "succeeded" in html
    assert "Forgetting user u-gene" in html  # the message after the redirect
    assert "Gene likes green tea." not in html and "Gene runs the Friday demo." not in html
    assert store.scopes.get(_oid(gene.id)) is None
    [entry] = audit_page(store=store, action="user.forget").items
    assert entry.actor == "ui:admin-user" and entry.agent_id == AGENT
    receipt = page.context["receipt_job"].result
    assert receipt["deleted"]["memory_observations"] == 3
    assert receipt["actor"] == "ui:admin-user"
