"""Bulk actions from the observation log: the filter bar's "N match", the confirmation page
with a sample, the POST that queues the job; roles and failures."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.task_mode import settle
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db
AGENT = "support-bot"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@pytest.fixture
def scopes(store):
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g-eden"))
    gene, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "gene"))
    for i in range(4):
        observation_add(
            store=store, scope=group, content=f"Gene's card ends in {i}",
            source_session_id="s-bad", related_user_ids=["gene"],
        )  # fmt: skip
    observation_add(
        store=store, scope=group, content="The team ships on Fridays",
        source_session_id="s-ok", related_user_ids=["mel"],
    )  # fmt: skip
    return group, gene


def _url(scope) -> str:
    return reverse("ui:observation_bulk", args=[scope.id])


def test_the_log_holds_the_filter_bar_for_operators_only(client_as, scopes):
    group, _ = scopes
    detail = reverse("ui:scope_detail", args=[group.id])
    assert "Bulk actions by filter" in client_as("operator").get(detail).content.decode()
    viewer = client_as("viewer")
    assert "Bulk actions by filter" not in viewer.get(detail).content.decode()
    assert viewer.get(_url(group) + "?action=delete").status_code == 403


def test_the_bar_previews_n_match_and_links_to_the_confirmation(client_as, scopes):
    group, _ = scopes
    client = client_as("operator")
    response = client.get(_url(group) + "?session_id=s-bad&action=delete", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="bulk-preview"')
    assert "4 matches" in html and "apply" in html
    move = client.get(_url(group) + "?q=card&action=move", **HTMX).content.decode()
    assert "4 matches" in move and "choose where to move them" in move


def test_the_page_shows_the_sample_and_posts_the_job(client_as, store, scopes, run_tasks):
    group, gene = scopes
    client = client_as("operator")
    page = client.get(_url(group) + f"?q=card&action=move&target_scope_id={gene.id}")
    html = page.content.decode()
    assert page.status_code == 200 and "4 observations match" in html
    assert html.count("Gene&#x27;s card ends in") == 4 and "The team ships" not in html
    with run_tasks():
        done = client.post(
            _url(group), {"q": "card", "action": "move", "target_scope_id": gene.id}, follow=True
        )
    settle(store)
    assert "Bulk move of 4 observations started" in done.content.decode()
    moved = store.observations.collection.count_documents({"scope_id": ObjectId(gene.id)})
    assert moved == 4
    [entry] = list(store.audit.collection.find({"action": "observation.bulk_move"}).limit(2))
    assert entry["actor"].startswith("ui:") and entry["summary"]["count"] == 4


def test_failures_show_in_place(client_as, store, scopes):
    group, gene = scopes
    client = client_as("operator")
    bad_date = client.get(_url(group) + "?observed_after=someday&action=delete", **HTMX)
    assert bad_date.status_code == 422 and "form-error" in bad_date.content.decode()
    other, _ = scope_get_or_create(store=store, key=ScopeKey.group("other-bot", "g-1"))
    foreign = client.post(_url(group), {"q": "card", "action": "move", "target_scope_id": other.id})
    assert foreign.status_code == 422
    assert store.observations.collection.count_documents({"scope_id": ObjectId(gene.id)}) == 0
    assert client.get(reverse("ui:observation_bulk", args=["nope"])).status_code == 404


def test_the_users_page_exports_markdown_too(client_as, store, scopes):
    client = client_as("viewer")
    page = client.get(reverse("ui:user_audit"), {"agent": AGENT, "user": "gene"})
    assert "Export Markdown" in page.content.decode()
    response = client.get(
        reverse("ui:user_export"), {"agent": AGENT, "user": "gene", "format": "markdown"}
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    assert response["Content-Disposition"].endswith('.md"')
    text = response.content.decode()
    assert text.startswith("# Memory of user `gene` (agent `support-bot`)")
    assert "Gene's card ends in 3" in text and "## group g-eden" in text
