"""People and API keys pages: admin only, every change audited once, keys shown once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from memory_admin.accounts.actions import role_of, user_create, user_set_role
from memory_admin.models import ApiKey, hash_api_key
from streams.actions import Actor
from streams.core.exceptions import Conflict, InvalidInput
from streams.records.audit import audit_page
from tests.factories import ScopeFactory


@pytest.fixture
def audit_entries(store):
    """The entries of one action, oldest first, as dicts of what the log shows."""

    def entries(action: str) -> list[dict]:
        page = audit_page(store=store, action=action, limit=50).items
        return [
            {"actor": e.actor, "object_id": e.object_id, "summary": e.summary}
            for e in reversed(page)
        ]

    return entries


@pytest.mark.parametrize("role", ["viewer", "operator"])
@pytest.mark.parametrize("name", ["ui:people", "ui:api_keys"])
def test_people_and_keys_pages_are_for_admins_only(client_as, role, name):
    assert client_as(role).get(reverse(name)).status_code == 403


def test_admin_creates_a_person_with_a_one_time_password(client_as, audit_entries):
    client = client_as("admin")
    response = client.post(
        reverse("ui:person_create"), {"username": "otto", "role": "operator", "email": ""}
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="created-password"' in html
    assert "no-store" in response["Cache-Control"]
    otto = get_user_model().objects.get(username="otto")
    assert role_of(otto) == "operator"
    password = html.split('id="created-password">')[1].split("<")[0]
    assert authenticate(username="otto", password=password) == otto
    [entry] = audit_entries("user.create")
    assert (entry["actor"], entry["object_id"], entry["summary"]) == (
        "ui:admin-user",
        "otto",
        {"role": "operator"},
    )
    again = client.post(reverse("ui:person_create"), {"username": "otto", "role": "viewer"})
    assert again.status_code == 422 and "exists already" in again.content.decode()


def test_admin_changes_a_role_and_deactivates(client_as, make_user, audit_entries):
    client = client_as("admin")
    vera = make_user("viewer", username="vera")
    client.post(reverse("ui:person_role", args=[vera.pk]), {"role": "operator"})
    vera.refresh_from_db()
    assert role_of(vera) == "operator"
    [entry] = audit_entries("user.role")
    assert entry["summary"] == {"before": "viewer", "after": "operator"}

    confirm = client.get(reverse("ui:person_active", args=[vera.pk]))
    assert "Deactivate vera?" in confirm.content.decode()
    client.post(reverse("ui:person_active", args=[vera.pk]), {"active": "false"})
    vera.refresh_from_db()
    assert not vera.is_active and len(audit_entries("user.deactivate")) == 1
    client.post(reverse("ui:person_active", args=[vera.pk]), {"active": "true"})
    vera.refresh_from_db()
    assert vera.is_active and len(audit_entries("user.reactivate")) == 1


def test_the_last_admin_cannot_be_demoted_or_deactivated(make_user):
    admin = make_user("admin", username="solo")
    with pytest.raises(Conflict):
        user_set_role(actor=Actor.cli(), user=admin, role="viewer")
    make_user("admin", username="second")
    user_set_role(actor=Actor.cli(), user=admin, role="viewer")
    assert role_of(admin) == "viewer"


def test_admin_creates_a_key_bound_to_an_agent_shown_once(client_as, store, audit_entries):
    ScopeFactory.create(store=store, agent_id="support-bot")
    ScopeFactory.create(store=store, agent_id="other-bot")
    client = client_as("admin")
    page = client.get(reverse("ui:api_keys")).content.decode()
    assert 'value="support-bot"' in page and 'value="other-bot"' in page
    response = client.post(
        reverse("ui:api_key_create"),
        {"name": "bot key", "reach": "agents", "agents": ["support-bot"], "permissions": ["read"]},
    )
    html = response.content.decode()
    raw = html.split('id="created-key-value">')[1].split("<")[0]
    key = ApiKey.objects.get(name="bot key")
    assert key.key_hash == hash_api_key(raw) and key.agent_ids == ["support-bot"]
    assert key.granted == ("read",)
    assert 'data-copy-from="created-key-value"' in html
    assert raw not in client.get(reverse("ui:api_keys")).content.decode()  # shown once
    [entry] = audit_entries("apikey.create")
    assert entry["summary"] == {"agent_ids": ["support-bot"], "permissions": ["read"]}
    assert entry["actor"] == "ui:admin-user"
    bad = client.post(
        reverse("ui:api_key_create"), {"name": "x", "reach": "agents", "agents": ["nobody"]}
    )
    assert bad.status_code == 422


def test_no_agent_ticked_is_not_silently_an_admin_key(client_as, store):
    """Issue 30: an all-agent admin key is an explicit choice, never "nothing ticked"."""
    ScopeFactory.create(store=store, agent_id="support-bot")
    client = client_as("admin")
    page = client.get(reverse("ui:api_keys")).content.decode()
    assert 'name="reach" value="all"' in page and "All agents" in page
    url = reverse("ui:api_key_create")
    for data in (
        {"name": "k1", "reach": "agents", "permissions": ["read"]},
        {"name": "k2", "permissions": ["read"]},  # no choice made at all
        {"name": "k3", "reach": "all", "agents": ["support-bot"]},
        {"name": "k4", "reach": "agents", "agents": ["support-bot"]},  # no permission
    ):
        response = client.post(url, data)
        assert response.status_code == 422, data
        assert 'class="field-error"' in response.content.decode()
    assert not ApiKey.objects.exists()
    assert (
        "Tick at least one agent"
        in client.post(url, {"name": "k1", "reach": "agents"}).content.decode()
    )
    created = client.post(url, {"name": "admin key", "reach": "all", "permissions": ["read"]})
    assert "every agent (admin key)" in created.content.decode()
    key = ApiKey.objects.get(name="admin key")
    assert key.is_admin and key.granted == ("read", "write", "forget", "review")


def test_an_agent_key_can_be_given_review_by_name(client_as, store):
    ScopeFactory.create(store=store, agent_id="support-bot")
    client = client_as("admin")
    page = client.get(reverse("ui:api_keys")).content.decode()
    assert 'name="permissions" value="read" checked' in page
    assert 'name="permissions" value="review">' in page  # not ticked by default
    client.post(
        reverse("ui:api_key_create"),
        {
            "name": "rev",
            "reach": "agents",
            "agents": ["support-bot"],
            "permissions": ["read", "review"],
        },
    )
    assert ApiKey.objects.get(name="rev").granted == ("read", "review")
    listing = client.get(reverse("ui:api_keys")).content.decode()
    assert "read, review" in listing


def test_revoke_needs_a_confirmation_and_is_audited(client_as, audit_entries):
    key, _ = ApiKey.generate(name="old", agent_ids=[])
    client = client_as("admin")
    assert (
        "Revoke the key old?"
        in client.get(reverse("ui:api_key_revoke", args=[key.pk])).content.decode()
    )
    assert ApiKey.objects.get(pk=key.pk).is_active
    client.post(reverse("ui:api_key_revoke", args=[key.pk]))
    assert not ApiKey.objects.get(pk=key.pk).is_active
    client.post(reverse("ui:api_key_revoke", args=[key.pk]))  # twice: recorded once
    assert len(audit_entries("apikey.revoke")) == 1


def test_create_user_command_prints_the_password_last(db, audit_entries):
    out = StringIO()
    call_command("create_user", "carl", "--role", "operator", stdout=out)
    password = out.getvalue().strip().splitlines()[-1]
    carl = authenticate(username="carl", password=password)
    assert carl is not None and role_of(carl) == "operator"
    assert audit_entries("user.create")[0]["actor"] == "cli"
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_user", "carl", "--role", "viewer", stdout=StringIO())


def test_user_create_refuses_an_unknown_role(db):
    with pytest.raises(InvalidInput):
        user_create(actor=Actor.cli(), username="x", role="root")


def test_a_superusers_role_cannot_be_lowered_by_groups(db, django_user_model):
    root = django_user_model.objects.create_superuser(username="root", password="x")
    with pytest.raises(Conflict, match="superuser"):
        user_set_role(actor=Actor.cli(), user=root, role="viewer")
