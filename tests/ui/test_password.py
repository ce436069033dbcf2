"""Password change for people signed in, and the one-time password an admin sets, which
must be changed before anything else (issue 30, item 6)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.urls import reverse

from memory_admin.accounts.actions import user_create
from memory_admin.models import PasswordChangeRequired
from streams.actions import Actor
from streams.records.audit import audit_page
from tests.ui.people import PASSWORD

NEW = "a far better passphrase 42"


@pytest.fixture
def newcomer(db, client):
    """A person an admin just created, signed in with the one-time password."""
    user, password = user_create(actor=Actor.cli(), username="otto", role="operator")
    assert client.login(username="otto", password=password)
    return user, password


def test_a_one_time_password_must_be_changed_before_anything_else(client, newcomer):
    for url in (reverse("ui:dashboard"), reverse("ui:scopes"), reverse("ui:people")):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"] == reverse("password_change")
    htmx = client.get(reverse("ui:scopes"), headers={"HX-Request": "true"})
    assert htmx["HX-Redirect"] == reverse("password_change")
    page = client.get(reverse("password_change"))
    assert page.status_code == 200
    assert 'id="password-change-required"' in page.content.decode()


def test_changing_it_lifts_the_redirect_and_is_audited(client, newcomer, store):
    user, password = newcomer
    response = client.post(
        reverse("password_change"),
        {"old_password": password, "new_password1": NEW, "new_password2": NEW},
    )
    assert response.status_code == 302 and response["Location"] == reverse("ui:dashboard")
    assert not PasswordChangeRequired.objects.filter(user=user).exists()
    assert client.get(reverse("ui:dashboard")).status_code == 200  # still signed in
    assert authenticate(username="otto", password=NEW) is not None
    assert authenticate(username="otto", password=password) is None
    [entry] = audit_page(store=store, action="user.password", limit=5).items
    assert entry.actor == "ui:otto" and entry.summary == {"was_one_time": True}


def test_a_wrong_old_password_or_a_weak_new_one_changes_nothing(client, newcomer):
    user, password = newcomer
    wrong = client.post(
        reverse("password_change"),
        {"old_password": "nope", "new_password1": NEW, "new_password2": NEW},
    )
    weak = client.post(
        reverse("password_change"),
        {"old_password": password, "new_password1": "123", "new_password2": "123"},
    )
    for response in (wrong, weak):
        assert response.status_code == 200 and 'class="field-error"' in response.content.decode()
    assert PasswordChangeRequired.objects.filter(user=user).exists()
    assert client.get(reverse("ui:dashboard")).status_code == 302


def test_the_api_and_sign_out_are_not_redirected(client, newcomer):
    assert client.get("/api/v1/health").status_code == 200
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("ui:dashboard"))["Location"].startswith(reverse("login"))


def test_anyone_signed_in_can_change_their_password(client_as, store):
    client = client_as("viewer")
    page = client.get(reverse("password_change")).content.decode()
    assert "Change your password" in page and "password-change-required" not in page
    assert reverse("password_change") in client.get(reverse("ui:dashboard")).content.decode()
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW},
    )
    assert response.status_code == 302
    assert authenticate(username="viewer-user", password=NEW) is not None


def test_people_created_by_the_command_and_the_people_page_are_flagged(db, client_as):
    call_command("create_user", "carl", "--role", "viewer", stdout=StringIO())
    client_as("admin").post(reverse("ui:person_create"), {"username": "dora", "role": "viewer"})
    flagged = set(PasswordChangeRequired.objects.values_list("user__username", flat=True))
    assert flagged == {"carl", "dora"}


def test_the_login_page_suggests_the_readme_command(client, db):
    page = client.get(reverse("login")).content.decode()
    assert "manage.py create_user" in page and "createsuperuser" not in page
