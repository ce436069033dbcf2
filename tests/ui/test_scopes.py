"""Scope browser and scope detail: full pages, htmx partials, actions and their failures."""

from __future__ import annotations

import html

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_list
from streams.prompts import DEFAULT_TEMPLATES
from tests.factories import ScopeFactory
from tests.ui.helpers import HTMX, scope_with_history

pytestmark = pytest.mark.django_db


def test_scope_browser_full_page_lists_the_first_agents_scopes(client_as, store):
    scope = scope_with_history(store)
    ScopeFactory.create(store=store, agent_id="support-bot", group=True, display_name="Eden Team")
    response = client_as("viewer").get(reverse("ui:scopes"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html and 'id="scope-table"' in html
    assert f'data-scope-id="{scope.id}"' in html
    assert "Eden Team" in html and "Gene" in html


def test_scope_browser_partial_filters_by_type_and_text(client_as, store):
    scope_with_history(store)
    ScopeFactory.create(store=store, agent_id="support-bot", group=True, display_name="Eden Team")
    client = client_as("viewer")
    response = client.get(reverse("ui:scopes"), {"agent": "support-bot", "type": "group"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and html.lstrip().startswith('<div id="scope-table"')
    assert "Eden Team" in html and "Gene" not in html
    by_name = client.get(reverse("ui:scopes"), {"agent": "support-bot", "q": "gene"}, **HTMX)
    assert "Gene" in by_name.content.decode() and "Eden" not in by_name.content.decode()


def test_scope_browser_text_can_search_consolidations(client_as, store):
    scope_with_history(store)
    client = client_as("viewer")
    hit = client.get(
        reverse("ui:scopes"), {"agent": "support-bot", "q": "LISBON", "within": "consolidation"}
    )
    miss = client.get(reverse("ui:scopes"), {"agent": "support-bot", "q": "Lisbon"})
    assert "Gene" in hit.content.decode()
    assert "No scopes match" in miss.content.decode()


def test_scope_browser_shard_filter_and_sorting(client_as, store):
    first = ScopeFactory.create(store=store, agent_id="a1", shard=True, name="feedback")
    second = ScopeFactory.create(store=store, agent_id="a1", group=True)
    client = client_as("viewer")
    shard = client.get(reverse("ui:scopes"), {"agent": "a1", "shard": "feedback"})
    assert f'data-scope-id="{first.id}"' in shard.content.decode()
    assert f'data-scope-id="{second.id}"' not in shard.content.decode()
    oldest = client.get(reverse("ui:scopes"), {"agent": "a1", "sort": "oldest"}).content.decode()
    newest = client.get(reverse("ui:scopes"), {"agent": "a1"}).content.decode()
    assert oldest.index(first.id) < oldest.index(second.id)
    assert newest.index(second.id) < newest.index(first.id)


def test_scope_browser_type_filter_has_a_shard_option(client_as, store):
    shard = ScopeFactory.create(store=store, agent_id="a1", shard=True, name="feedback")
    collective = ScopeFactory.create(store=store, agent_id="a1", collective=True)
    group = ScopeFactory.create(store=store, agent_id="a1", group=True)
    client = client_as("viewer")
    page = client.get(reverse("ui:scopes"), {"agent": "a1"}).content.decode()
    assert '<option value="shard">Shard</option>' in page
    shards = client.get(reverse("ui:scopes"), {"agent": "a1", "type": "shard"}, **HTMX)
    html = shards.content.decode()
    assert shards.status_code == 200 and f'data-scope-id="{shard.id}"' in html
    assert collective.id not in html and group.id not in html


def test_scope_browser_pages_with_a_cursor(client_as, store, monkeypatch):
    from memory_admin.ui import scopes

    monkeypatch.setattr(scopes, "PAGE_SIZE", 2)
    made = [ScopeFactory.create(store=store, agent_id="a1") for _ in range(3)]
    client = client_as("viewer")
    first = client.get(reverse("ui:scopes"), {"agent": "a1"}).content.decode()
    assert made[2].id in first and made[0].id not in first and "Next page" in first
    cursor = first.split("cursor=")[1].split('"')[0]
    second = client.get(reverse("ui:scopes") + f"?agent=a1&cursor={cursor}", **HTMX)
    assert made[0].id in second.content.decode()


def test_scope_browser_with_a_forged_cursor_says_so(client_as, store):
    ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("viewer").get(reverse("ui:scopes"), {"agent": "a1", "cursor": "%%%"})
    assert response.status_code == 200
    assert "malformed cursor" in response.content.decode()


def test_scope_detail_full_page_shows_everything(client_as, store):
    scope = scope_with_history(store)
    response = client_as("operator").get(reverse("ui:scope_detail", args=[scope.id]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Gene likes green tea and works in Lisbon." in html
    assert "by ui:seed" in html  # who made the version
    assert 'data-version="2"' in html and 'data-version="1"' in html
    assert "Gene moved to Porto." in html  # pending
    assert 'id="observation-log"' in html
    assert "Prompts in effect" in html and "default" in html
    assert "Consolidate now" in html and "Edit by hand" in html


def test_scope_detail_prompts_in_effect_show_their_text(client_as, store):
    """README: the prompts in effect, exactly as the model gets them: the text, not only
    where it comes from."""
    scope = scope_with_history(store)
    shard = ScopeFactory.create(
        store=store,
        agent_id="support-bot",
        shard=True,
        name="feedback",
        extraction_prompt="Feature requests & complaints, with the <feature> named.",
    )
    client = client_as("viewer")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    for kind, template in DEFAULT_TEMPLATES.items():
        assert f'<tr class="prompt-text-row" data-kind="{kind}">' in page
        assert html.escape(template.splitlines()[0]) in page
    shard_page = client.get(reverse("ui:scope_detail", args=[shard.id])).content.decode()
    assert "Feature requests &amp; complaints, with the &lt;feature&gt; named." in shard_page


def test_scope_detail_log_partial_filters(client_as, store):
    scope = scope_with_history(store)
    response = client_as("viewer").get(
        reverse("ui:scope_detail", args=[scope.id]), {"text": "porto"}, **HTMX
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="observation-log"')
    assert "Gene moved to Porto." in html and "Rust" not in html
    assert "Mark private" not in html  # a viewer's partial has no edit controls either


def test_the_log_partial_keeps_the_edit_controls_for_an_operator(client_as, store):
    scope = scope_with_history(store)
    html = (
        client_as("operator")
        .get(reverse("ui:scope_detail", args=[scope.id]), {"status": "pending"}, **HTMX)
        .content.decode()
    )
    assert html.count(">Mark private</button>") == 3  # one per row (the bulk bar has its own)


def test_scope_detail_for_a_viewer_has_no_edit_controls(client_as, store):
    scope = scope_with_history(store)
    html = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "Consolidate now" not in html and "Edit by hand" not in html
    assert "Mark private" not in html


@pytest.mark.parametrize("scope_id", ["nope", "0" * 24, "zz" * 12])
def test_unknown_or_malformed_scope_is_the_404_page(client_as, scope_id):
    response = client_as("viewer").get(reverse("ui:scope_detail", args=[scope_id]))
    assert response.status_code == 404


def test_hand_edit_saves_a_new_version(client_as, store):
    scope = scope_with_history(store)
    client = client_as("operator")
    form = client.get(reverse("ui:consolidation_edit", args=[scope.id])).content.decode()
    assert "Gene likes green tea" in form and 'name="expected_version"' in form
    response = client.post(
        reverse("ui:consolidation_edit", args=[scope.id]),
        {"text": "Gene drinks coffee now.", "expected_version": 2},
        follow=True,
    )
    html = response.content.decode()
    assert "Saved the consolidation as version 3." in html
    assert "Gene drinks coffee now." in html
    assert store.scopes.get(ObjectId(scope.id)).consolidation_version == 3


def test_hand_edit_over_a_newer_version_is_a_conflict_that_keeps_the_text(client_as, store):
    scope = scope_with_history(store)
    consolidation_edit(
        store=store, scope=scope, text="Someone else.", expected_version=2, actor="x"
    )
    response = client_as("operator").post(
        reverse("ui:consolidation_edit", args=[scope.id]),
        {"text": "My edit.", "expected_version": 2},
    )
    html = response.content.decode()
    assert response.status_code == 409
    assert "moved on to version 3" in html
    assert "My edit." in html and "Someone else." in html
    assert 'name="expected_version" value="3"' in html


def test_compare_shows_both_versions_side_by_side(client_as, store):
    scope = scope_with_history(store)
    client = client_as("viewer")
    page = client.get(reverse("ui:consolidation_compare", args=[scope.id]), {"a": 1, "b": 2})
    html = page.content.decode()
    assert "<del>" in html and "<ins>" in html
    assert "Lisbon" in html
    partial = client.get(
        reverse("ui:consolidation_compare", args=[scope.id]), {"a": 1, "b": 2}, **HTMX
    ).content.decode()
    assert partial.lstrip().startswith('<section id="diff"')
    missing = client.get(reverse("ui:consolidation_compare", args=[scope.id]), {"a": 9, "b": 2})
    assert "No version 9" in missing.content.decode()


def test_restore_makes_a_new_version_with_the_old_text(client_as, store):
    scope = scope_with_history(store)
    response = client_as("operator").post(
        reverse("ui:consolidation_restore", args=[scope.id, 1]), follow=True
    )
    assert "Restored version 1 as version 3." in response.content.decode()
    fresh = store.scopes.get(ObjectId(scope.id))
    assert fresh.consolidation == "Gene likes tea."


def test_restore_of_a_missing_version_is_a_message(client_as, store):
    scope = scope_with_history(store)
    response = client_as("operator").post(
        reverse("ui:consolidation_restore", args=[scope.id, 42]), follow=True
    )
    assert "There is no version 42 to restore." in response.content.decode()


def test_consolidate_now_runs_the_job_and_the_page_shows_it(
    client_as, store, settings, django_capture_on_commit_callbacks
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = scope_with_history(store)
    client = client_as("operator")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ui:consolidate", args=[scope.id]))
    assert response.status_code == 302 and "?job=" in response["Location"]
    page = client.get(response["Location"]).content.decode()
    assert "Consolidation queued" in page
    assert 'data-status="succeeded"' in page
    assert "new version v3" in page


def test_consolidate_now_as_htmx_returns_the_polling_status(client_as, store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = scope_with_history(store)
    client = client_as("operator")
    response = client.post(reverse("ui:consolidate", args=[scope.id]), follow=True, **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="job-status"')
    assert 'data-status="queued"' in html and 'hx-trigger="every 1s"' in html
    assert "HX-Trigger" not in response  # still going: no refresh yet


def test_job_status_of_a_finished_job_stops_polling_and_refreshes_the_page(
    client_as, store, settings, django_capture_on_commit_callbacks
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = scope_with_history(store)
    client = client_as("operator")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("ui:consolidate", args=[scope.id]), **HTMX)
    job = store.jobs.page(status="succeeded", agent_id=None, before=None, limit=1)[0]
    response = client.get(reverse("ui:job_status", args=[job.id]), **HTMX)
    html = response.content.decode()
    assert 'data-status="succeeded"' in html and "every 1s" not in html
    assert response["HX-Trigger"] == "scope-changed"


def test_consolidate_now_with_nothing_pending_says_why(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    response = client_as("operator").post(reverse("ui:consolidate", args=[scope.id]), follow=True)
    assert "Nothing to consolidate" in response.content.decode()


def test_consolidation_panel_partial(client_as, store):
    scope = scope_with_history(store)
    client = client_as("viewer")
    html = client.get(reverse("ui:scope_consolidation", args=[scope.id]), **HTMX).content.decode()
    assert html.lstrip().startswith('<section id="consolidation-panel"')
    full = client.get(reverse("ui:scope_consolidation", args=[scope.id]))
    assert full.status_code == 302


def test_settings_save_and_refuse_out_of_range(client_as, store):
    scope = scope_with_history(store)
    client = client_as("operator")
    ok = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 4, "consolidation_max_words": 300},
        follow=True,
    )
    assert "Settings saved." in ok.content.decode()
    fresh = store.scopes.get(ObjectId(scope.id))
    assert (fresh.consolidation_threshold, fresh.consolidation_max_words) == (4, 300)
    bad = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"consolidation_threshold": 0, "consolidation_max_words": 300},
    )
    assert bad.status_code == 422
    assert "greater than or equal to 1" in bad.content.decode()


def test_shard_guidance_is_edited_in_the_prompt_editor_not_the_settings(client_as, store):
    shard = ScopeFactory.create(store=store, agent_id="a1", shard=True, name="feedback")
    page = client_as("operator").get(reverse("ui:scope_detail", args=[shard.id])).content.decode()
    assert 'name="extraction_prompt"' not in page
    editor = reverse("ui:prompt_edit", args=["a1", "extraction"]) + f"?scope={shard.id}"
    assert editor in page


def test_observation_list_helper_counts_pending(store):
    scope = scope_with_history(store)
    assert len(observation_list(store=store, scope=scope, status="pending").items) == 3
