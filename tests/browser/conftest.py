"""Playwright driving Debian's Chromium (never a downloaded browser) against the live server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import CHROMIUM_PATH
from tests.ui.people import create_user

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests
# make beside it are still synchronous, so Django's async guard must stand down.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS_DIR = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the run; each test gets its own context and page."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) at a laptop's viewport.

    `bypass_csp`: Playwright's `wait_for_function` evaluates strings, which the app's
    Content-Security-Policy (no eval) refuses; test_csp.py drives the app with the CSP on.
    """
    context = browser.new_context(viewport={"width": 1366, "height": 800}, bypass_csp=True)
    context.set_default_timeout(10_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS_DIR


@pytest.fixture
def make_user(transactional_db, django_user_model, settings) -> Callable[..., Any]:
    """Users with a role, saved where the live server's thread can see them."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    def make(role: str | None, *, username: str) -> Any:
        return create_user(django_user_model, username=username, role=role)

    return make
