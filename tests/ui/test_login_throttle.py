"""Sign-in throttling (probe finding F12): django-axes, counted in the database.

Five failed sign-ins for one name from one address lock that name out there for
MEMORY_LOGIN_LOCKOUT_MINUTES (even with the right password), with a page saying so
(429, Retry-After); once the window has passed, the right password signs in again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import authenticate
from django.db.models import F
from django.test import Client

from tests.ui.people import PASSWORD

LOGIN = "/login/"


def sign_in(client: Client, username: str, password: str, ip: str = "10.0.0.7"):
    return client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip, follow=False
    )


def signed_in(response) -> bool:
    return response.status_code == 302 and not response["Location"].startswith(LOGIN)


@pytest.fixture
def otto(make_user):
    return make_user("operator", username="otto")


def test_five_bad_sign_ins_lock_the_name_out_until_the_window_passes(client, otto, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        answer = sign_in(client, "otto", "wrong password")
        assert answer.status_code == 200  # the form again, with its error
        assert b"Please enter a correct username and password" in answer.content
    locked = sign_in(client, "otto", "wrong password")  # the fifth
    assert locked.status_code == 429
    assert b"Too many sign-in attempts" in locked.content
    assert b"Try again in 15 minutes" in locked.content
    assert locked["Retry-After"] == "900"
    # Locked out: the right password does not sign in either, nor count as a success.
    refused = sign_in(client, "otto", PASSWORD)
    assert refused.status_code == 429 and not signed_in(refused)
    assert "_auth_user_id" not in client.session

    # The window passes (the failures become older than the lockout).
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    welcome = sign_in(client, "otto", PASSWORD)
    assert signed_in(welcome), welcome.status_code
    assert client.session["_auth_user_id"] == str(otto.pk)


def test_a_good_sign_in_resets_the_count(client, otto):
    for _ in range(4):
        sign_in(client, "otto", "wrong password")
    assert signed_in(sign_in(client, "otto", PASSWORD))
    client.logout()
    for _ in range(4):
        assert sign_in(client, "otto", "wrong password").status_code == 200


def test_the_lockout_is_per_name_and_address(client, otto, make_user):
    make_user("viewer", username="vera")
    for _ in range(5):
        sign_in(client, "otto", "wrong password")
    assert sign_in(client, "otto", PASSWORD).status_code == 429
    assert signed_in(sign_in(Client(), "vera", PASSWORD))  # another name
    assert signed_in(sign_in(Client(), "otto", PASSWORD, ip="10.0.0.8"))  # another address


def test_the_limit_and_the_window_are_settings(client, otto, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(minutes=1)
    sign_in(client, "otto", "wrong password")
    locked = sign_in(client, "otto", "wrong password")
    assert locked.status_code == 429 and b"Try again in 1 minute," in locked.content


def test_password_checks_without_a_request_still_work(otto):
    """Management commands and shells authenticate without a request: not throttled."""
    assert authenticate(username="otto", password=PASSWORD) == otto
    assert authenticate(username="otto", password="wrong") is None
