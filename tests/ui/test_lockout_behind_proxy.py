"""The sign-in lockout behind the proxy (issue 44): failures count per account and client
address together, the client's address as the shipped nginx hands it on (the last
X-Forwarded-For entry, trusted only from `MEMORY_TRUSTED_PROXIES`), so a stranger's
wrong passwords lock the account out for the stranger only; an admin can lift it."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.ui.people import PASSWORD

LOGIN = "/login/"
PROXY = "127.0.0.1"  # nginx on the same host, as shipped
STRANGER = "203.0.113.9"
ADMIN_HOME = "198.51.100.4"


def via_proxy(client: Client, username: str, password: str, forwarded_for: str):
    """A sign-in as nginx passes it on: `$proxy_add_x_forwarded_for` appends the peer."""
    return client.post(
        LOGIN,
        {"username": username, "password": password},
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR=forwarded_for,
    )


def signed_in(response) -> bool:
    return response.status_code == 302 and not response["Location"].startswith(LOGIN)


@pytest.fixture
def ada(make_user):
    return make_user("admin", username="ada")


def test_a_stranger_behind_the_proxy_cannot_lock_the_admin_out(ada):
    for _ in range(5):
        via_proxy(Client(), "ada", "guess", STRANGER)
    assert via_proxy(Client(), "ada", PASSWORD, STRANGER).status_code == 429
    assert signed_in(via_proxy(Client(), "ada", PASSWORD, ADMIN_HOME))


def test_a_stranger_cannot_borrow_the_admins_address(ada):
    """What the client itself sends in X-Forwarded-For comes first; nginx appends the
    real peer last, and that is the one counted."""
    for _ in range(5):
        via_proxy(Client(), "ada", "guess", f"{ADMIN_HOME}, {STRANGER}")
    assert signed_in(via_proxy(Client(), "ada", PASSWORD, ADMIN_HOME))
    assert via_proxy(Client(), "ada", PASSWORD, f"{ADMIN_HOME}, {STRANGER}").status_code == 429


def test_x_forwarded_for_from_a_client_facing_gunicorn_is_ignored(ada):
    """Not from a trusted proxy: a rotating header does not escape the count."""
    for n in range(5):
        Client().post(
            LOGIN,
            {"username": "ada", "password": "guess"},
            REMOTE_ADDR=STRANGER,
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}",
        )
    locked = Client().post(LOGIN, {"username": "ada", "password": PASSWORD}, REMOTE_ADDR=STRANGER)
    assert locked.status_code == 429


def test_an_admin_lifts_a_lockout_from_the_people_page(ada, make_user, client_as):
    otto = make_user("operator", username="otto")
    for _ in range(5):
        via_proxy(Client(), "otto", "guess", STRANGER)
    assert via_proxy(Client(), "otto", PASSWORD, STRANGER).status_code == 429
    admin = client_as("admin")
    page = admin.get("/people/")
    assert b"locked out" in page.content
    answer = admin.post(f"/people/{otto.pk}/unlock/")
    assert answer.status_code == 302
    assert signed_in(via_proxy(Client(), "otto", PASSWORD, STRANGER))
    audit = admin.get("/audit/?action=user.unlock")
    assert b"otto" in audit.content


def test_only_admins_unlock(make_user, client_as):
    otto = make_user("operator", username="otto")
    operator = client_as("operator")
    assert operator.post(f"/people/{otto.pk}/unlock/").status_code == 403
