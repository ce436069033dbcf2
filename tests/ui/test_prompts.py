"""Prompt editor: agent defaults and scope overrides, history, diff, revert, dry runs."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.prompts import prompt_history, prompt_save
from tests.factories import ScopeFactory
from tests.ui.helpers import HTMX, scope_with_history

pytestmark = pytest.mark.django_db

TEMPLATE = (
    "Fold these into the memory of {scope} in at most {max_words} words.\n"
    "Current: {consolidation}\nNew:\n{observations}"
)
EXTRACTION = "Extract from this conversation as JSON:\n{conversation}"


def _edit_url(agent_id: str, kind: str, scope=None) -> str:
    url = reverse("ui:prompt_edit", args=[agent_id, kind])
    return f"{url}?scope={scope.id}" if scope else url


def test_index_lists_each_kind_and_the_shards(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1", shard=True, name="feedback")
    html = client_as("viewer").get(reverse("ui:prompts")).content.decode()
    for kind in ("extraction", "consolidation", "propagation"):
        assert f'data-kind="{kind}"' in html
    assert "code default" in html and "feedback" in html


def test_editor_shows_the_code_default_until_an_agent_default_is_saved(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    client = client_as("operator")
    html = client.get(_edit_url("a1", "consolidation")).content.decode()
    assert "the code default" in html and "{observations}" in html
    response = client.post(
        reverse("ui:prompt_save", args=["a1", "consolidation"]),
        {"text": TEMPLATE, "expected_version": 0},
        follow=True,
    )
    html = response.content.decode()
    assert "Saved the consolidation prompt as version 1." in html
    assert "the agent default v1" in html


def test_saving_a_template_without_a_required_placeholder_is_refused_at_the_field(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("operator").post(
        reverse("ui:prompt_save", args=["a1", "consolidation"]),
        {"text": "Summarise {observations}.", "expected_version": 0},
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert 'class="field-error"' in html and "consolidation" in html and "max_words" in html


def test_saving_over_a_newer_version_keeps_the_text_and_says_so(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    prompt_save(store=store, agent_id="a1", kind="consolidation", text=TEMPLATE, author="other")
    response = client_as("operator").post(
        reverse("ui:prompt_save", args=["a1", "consolidation"]),
        {"text": TEMPLATE + "\nMine.", "expected_version": 0},
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert "someone saved a newer version" in html and "Mine." in html
    assert 'name="expected_version" value="1"' in html


def test_scope_override_history_diff_and_revert(client_as, store):
    scope = scope_with_history(store)
    client = client_as("operator")
    save = reverse("ui:prompt_save", args=["support-bot", "consolidation"])
    client.post(save, {"text": TEMPLATE, "expected_version": 0, "scope": scope.id})
    client.post(save, {"text": TEMPLATE + "\nBe brief.", "expected_version": 1, "scope": scope.id})
    page = client.get(_edit_url("support-bot", "consolidation", scope) + "&a=1&b=2")
    html = page.content.decode()
    assert "this scope&#x27;s override v2" in html or "this scope's override v2" in html
    assert "<ins>" in html and "brief." in html
    partial = client.get(
        _edit_url("support-bot", "consolidation", scope) + "&a=1&b=2", **HTMX
    ).content.decode()
    assert partial.lstrip().startswith('<section id="diff"')
    reverted = client.post(
        reverse("ui:prompt_revert", args=["support-bot", "consolidation", 1]),
        {"scope": scope.id},
        follow=True,
    )
    assert "Reverted the consolidation prompt to version 1 (saved as 3)." in (
        reverted.content.decode()
    )
    history = prompt_history(
        store=store, agent_id="support-bot", kind="consolidation", scope_id=scope.id
    ).items
    assert [v.version for v in history] == [3, 2, 1] and history[0].text == TEMPLATE
    assert history[0].author == "ui:operator-user"


def test_revert_of_a_missing_version_is_a_message(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("operator").post(
        reverse("ui:prompt_revert", args=["a1", "consolidation", 7]), follow=True
    )
    assert "Consolidation prompt version 7 not found." in response.content.decode()


def test_unknown_kind_or_foreign_scope_is_a_404(client_as, store):
    scope = scope_with_history(store)
    client = client_as("viewer")
    assert client.get(_edit_url("a1", "summary")).status_code == 404
    assert client.get(_edit_url("other-agent", "consolidation", scope)).status_code == 404


def test_consolidation_dry_run_saves_nothing_and_shows_both_results(client_as, store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = scope_with_history(store)
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["support-bot", "consolidation"]),
        {"text": TEMPLATE, "scope": scope.id},
        **HTMX,
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="dry-run"')
    assert "With the prompt in effect" in html and "With your edit" in html
    assert "nothing saved" in html
    fresh = store.scopes.get(ObjectId(scope.id))
    assert fresh.consolidation_version == scope.consolidation_version
    assert fresh.pending_count == 3
    assert store.jobs.page(status=None, agent_id="support-bot", before=None, limit=5) == []


def test_consolidation_dry_run_needs_a_scope_with_pending_observations(client_as, store):
    empty = ScopeFactory.create(store=store, agent_id="a1")
    client = client_as("operator")
    url = reverse("ui:prompt_dry_run", args=["a1", "consolidation"])
    no_scope = client.post(url, {"text": TEMPLATE}, **HTMX)
    assert no_scope.status_code == 422 and "pick a scope" in no_scope.content.decode()
    nothing = client.post(url, {"text": TEMPLATE, "scope": empty.id}, **HTMX)
    assert "no pending observations" in nothing.content.decode()


def test_extraction_dry_run_on_a_pasted_conversation(client_as, store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "extraction"]),
        {
            "text": EXTRACTION,
            "user_name": "Gene",
            "conversation": "user: I prefer answers in French from now on.\nassistant: D'accord!",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html  # without htmx: the whole page
    assert "With your edit" in html and "I prefer answers in French" in html


def test_extraction_dry_run_with_a_broken_template_shows_the_error(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "extraction"]),
        {"text": "No placeholders here", "conversation": "user: hi"},
        **HTMX,
    )
    assert response.status_code == 422
    assert "conversation" in response.content.decode()
