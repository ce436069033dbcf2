"""UI fixtures: a user per role, and a fast password hasher (the suite logs in often)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.ui.people import create_user


@pytest.fixture(autouse=True)
def fast_password_hasher(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db, django_user_model) -> Callable[..., Any]:
    """`make_user("operator")` → a saved user in that group; `make_user(None)` has no role."""

    def make(role: str | None, *, username: str | None = None) -> Any:
        return create_user(
            django_user_model, username=username or f"{role or 'norole'}-user", role=role
        )

    return make


@pytest.fixture
def client_as(client: Client, make_user) -> Callable[[str | None], Client]:
    """`client_as("viewer")` → the test client signed in as a fresh user with that role."""

    def sign_in(role: str | None) -> Client:
        client.force_login(make_user(role))
        return client

    return sign_in
