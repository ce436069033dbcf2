"""The forget-user receipt (issue 30, item 5): no "remembers nothing… check the id"
warning above it, it refreshes itself while the job runs and stops when it is done, its
counts say what they counted, and its time reads like every other time in the UI."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memory_admin.templatetags.labelled import labelled
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create

AGENT = "support-bot"
USER = "u-gene"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@pytest.fixture
def gene(store):
    """An individual memory with 4 consolidation versions, and a group consolidation that
    absorbed one observation of Gene's (its version gets redacted)."""
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, USER), display_name="Gene"
    )
    for version in range(4):
        note = observation_add(store=store, scope=individual, content=f"Gene note {version}.")
        consolidation_commit(
            store=store,
            scope=scope_get(store=store, scope_id=individual.id),
            expected_version=version,
            text=f"Gene, version {version + 1}.",
            absorbed_ids=[note.id],
            trigger="threshold",
            actor=None,
        )
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden"
    )
    said = observation_add(
        store=store, scope=group, content="Gene runs the Friday demo.", related_user_ids=[USER]
    )
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=group.id),
        expected_version=0,
        text="Gene runs the Friday demo.",
        absorbed_ids=[said.id],
        trigger="threshold",
        actor=None,
    )
    return individual


def _forget(client, capture, *, execute: bool):
    with capture(execute=execute) as callbacks:
        response = client.post(
            reverse("ui:user_forget"), {"agent": AGENT, "user": USER, "confirm": USER}
        )
    assert response.status_code == 302
    return response["Location"], callbacks


def test_the_receipt_has_no_unknown_user_warning_and_true_counts(
    client_as, gene, django_capture_on_commit_callbacks
):
    client = client_as("admin")
    location, _ = _forget(client, django_capture_on_commit_callbacks, execute=True)
    page = client.get(location)
    html = page.content.decode()
    assert 'id="forget-receipt"' in html and 'data-status="succeeded"' in html
    assert 'id="unknown-user"' not in html and "remembers nothing" not in html
    assert 'id="find-results"' not in html  # no "did you mean" suggestions either
    assert "Forget this user…" not in html and "Export JSON" not in html
    rows = {row["key"]: row for row in page.context["receipt_rows"]}
    assert rows["memory_consolidations"]["count"] == 4
    assert "consolidation versions deleted" in rows["memory_consolidations"]["label"]
    assert rows["redacted_versions"]["count"] == 1
    assert "group and collective" in rows["redacted_versions"]["label"]
    # Every count of the job's result reads as words, never as a collection's name.
    assert all(row["label"] != key for key, row in rows.items()), rows
    counts = re.findall(r'data-count="memory_consolidations">.*?class="num">(\d+)<', html)
    assert counts == ["4"]


def test_the_receipt_time_is_human_readable(client_as, gene, django_capture_on_commit_callbacks):
    client = client_as("admin")
    location, _ = _forget(client, django_capture_on_commit_callbacks, execute=True)
    receipt = client.get(location).content.decode().split('id="forget-receipt"')[1]
    receipt = receipt.split("</section>")[0]
    shown = re.sub(r"<[^>]+>", "", receipt)  # the text, not the attributes
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", shown)  # no raw ISO time
    assert re.search(r"finished \d{4}-\d\d-\d\d \d\d:\d\d UTC", shown)


def test_the_receipt_refreshes_itself_until_the_job_is_done(
    client_as, gene, django_capture_on_commit_callbacks
):
    client = client_as("admin")
    location, callbacks = _forget(client, django_capture_on_commit_callbacks, execute=False)
    page = client.get(location).content.decode()
    assert 'data-status="queued"' in page
    poll = re.search(r'id="user-main" hx-get="([^"]+)" hx-trigger="every 1s"', page)
    assert poll is not None and "part=main" in poll.group(1)
    url = poll.group(1).replace("&amp;", "&")
    partial = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert partial.startswith('<div id="user-main" hx-get=') and "<html" not in partial
    for callback in callbacks:  # the worker picks the job up
        callback()
    done = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'data-status="succeeded"' in done
    assert "hx-trigger" not in done.split(">")[0]  # polling stops


def test_the_job_page_labels_the_receipt_truthfully_with_readable_times():
    rows = dict(
        labelled(
            {
                "finished_at": "2026-11-26T21:36:47.123456+00:00",
                "redacted_versions": 0,
                "note": "2026-11-26T21:36 is not a time field",
            }
        )
    )
    assert rows["Finished at"] == "2026-11-26 21:36:47 UTC"
    assert rows["Group and collective versions redacted"] == "0"
    assert rows["Note"] == "2026-11-26T21:36 is not a time field"
