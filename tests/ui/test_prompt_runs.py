"""Guidance as versioned prompts, dry runs of every kind, and prompt checks before a save."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory_admin.jobs.tasks import formation_settings
from streams.drafts.prompt_checks import check_create, check_list
from streams.memory.consolidation import consolidation_commit
from streams.memory.formation import IncomingMessage, messages_ingest
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_create, scope_get, scope_get_or_create
from streams.prompts import prompt_current, prompt_history
from tests.factories import ObservationFactory
from tests.ui.helpers import HTMX

pytestmark = pytest.mark.django_db

BUGS = "Crashes and bugs users ran into, with the button or screen named."
CRASH = "user: The export button crashes every time on Safari.\nassistant: Sorry about that!"


@pytest.fixture
def shard(store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    return scope_create(
        store=store, key=ScopeKey.collective("a1", "bugs"), extraction_prompt=BUGS, author="op"
    )


def edit_url(kind: str, scope=None, **query) -> str:
    url = reverse("ui:prompt_edit", args=["a1", kind])
    params = {**({"scope": scope.id} if scope else {}), **query}
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_shard_guidance_has_history_a_diff_against_v0_revert_and_audit(client_as, store, shard):
    client = client_as("operator")
    page = client.get(edit_url("extraction", shard)).content.decode()
    assert "Guidance, not a template" in page and "{shards}" in page
    assert "scope guidance v1" in page  # the guidance given at creation is version 1

    save = reverse("ui:prompt_save", args=["a1", "extraction"])
    response = client.post(
        save, {"scope": shard.id, "text": "Pricing questions.", "expected_version": 1}
    )
    assert response.status_code == 302
    assert scope_get(store=store, scope_id=shard.id).extraction_prompt == "Pricing questions."
    assert scope_get(store=store, scope_id=shard.id).guidance_version == 2

    diff = client.get(edit_url("extraction", shard, a=0, b=2)).content.decode()
    assert "v0 (code default)" in diff and "<ins>Pricing questions.</ins>" in diff

    revert = reverse("ui:prompt_revert", args=["a1", "extraction", 1])
    assert client.post(revert, {"scope": shard.id}).status_code == 302
    fresh = scope_get(store=store, scope_id=shard.id)
    assert (fresh.extraction_prompt, fresh.guidance_version) == (BUGS, 3)
    history = prompt_history(store=store, agent_id="a1", kind="extraction", scope_id=shard.id)
    assert [(v.version, v.reverted_from) for v in history.items] == [(3, 1), (2, None), (1, None)]
    log = client_as("admin").get(reverse("ui:audit_log")).content.decode()
    assert "prompt.save" in log and "prompt.revert" in log


def test_group_guidance_refuses_a_template_at_the_field(client_as, store):
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    response = client_as("operator").post(
        reverse("ui:prompt_save", args=["a1", "extraction"]),
        {"scope": group.id, "text": "Extract {conversation} as JSON", "expected_version": 0},
    )
    assert response.status_code == 422
    assert "not a template" in response.content.decode()
    assert prompt_current(store=store, agent_id="a1", kind="extraction", scope_id=group.id) is None


def test_shard_guidance_dry_run_shows_the_routing_change_and_stores_nothing(
    client_as, store, shard
):
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "extraction"]),
        {"scope": shard.id, "text": "Pricing questions.", "conversation": CRASH},
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-scope="shard:bugs" data-current="1" data-edited="0"' in page
    assert "offline provider ignores the wording" in page
    assert "## Shard: bugs\nPricing questions." in page.replace("&#x27;", "'")
    assert scope_get(store=store, scope_id=shard.id).extraction_prompt == BUGS
    assert observation_list(store=store, scope=shard).items == []


def test_propagation_dry_run_on_what_the_scope_last_absorbed(client_as, store, fake_openai):
    individual, _ = scope_get_or_create(
        store=store,
        key=ScopeKey.individual("a1", "u1"),
        defaults={"groups": [{"id": "g1", "name": "Eden Team"}]},
    )
    observation = ObservationFactory.create(
        store=store, scope=individual, content="The Eden team deploys on Fridays."
    )
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=individual.id),
        expected_version=0,
        text="Gene's team deploys on Fridays.",
        absorbed_ids=[observation.id],
        trigger="manual",
        actor=None,
    )
    shared = {"content": "The Eden team deploys on Fridays.", "scope": "group:Eden Team"}
    fake_openai.reply_json({"observations": [shared]}).reply_json({"observations": []})
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "propagation"]),
        {
            "scope": individual.id,
            "text": "Share {observations} with {targets}? Only team facts. JSON please.",
        },
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    assert 'data-scope="group:Eden Team" data-current="0" data-edited="1"' in page
    drafted, current = (r.body["messages"][-1]["content"] for r in fake_openai.chat_requests)
    assert "Only team facts" in drafted and "Only team facts" not in current
    group = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))[0]
    assert observation_list(store=store, scope=group).items == []


def test_a_draft_that_fails_a_check_the_current_prompt_passes_needs_a_confirmation(
    client_as, store, shard
):
    client = client_as("operator")
    created = client.post(
        reverse("ui:prompt_check_create", args=["a1", "extraction"]),
        {
            "scope": shard.id,
            "check_name": "crashes land in bugs",
            "conversation": CRASH,
            "user_name": "Gene",
            "expect_1": "lands_in",
            "value_1": "shard:bugs",
            "expect_2": "",
        },
        **HTMX,
    )
    assert created.status_code == 200 and "crashes land in bugs" in created.content.decode()

    run = client.post(
        reverse("ui:prompt_checks_run", args=["a1", "extraction"]),
        {"scope": shard.id, "text": "Pricing questions."},
        **HTMX,
    )
    assert 'data-current="pass" data-draft="fail"' in run.content.decode()

    save = reverse("ui:prompt_save", args=["a1", "extraction"])
    draft = {"scope": shard.id, "text": "Pricing questions.", "expected_version": 1}
    refused = client.post(save, draft)
    assert refused.status_code == 422
    assert "Save anyway" in refused.content.decode()
    assert scope_get(store=store, scope_id=shard.id).extraction_prompt == BUGS
    assert client.post(save, {**draft, "confirm": "1"}).status_code == 302
    assert scope_get(store=store, scope_id=shard.id).extraction_prompt == "Pricing questions."


def test_a_draft_that_keeps_the_checks_passing_saves_at_once(client_as, store, shard):
    check_create(
        store=store,
        agent_id="a1",
        name="crashes land in bugs",
        conversation=CRASH,
        user_name="Gene",
        expectations=[{"type": "lands_in", "value": "shard:bugs"}],
        author="op",
    )
    response = client_as("operator").post(
        reverse("ui:prompt_save", args=["a1", "extraction"]),
        {"scope": shard.id, "text": BUGS + " Also crashes on export.", "expected_version": 1},
    )
    assert response.status_code == 302


def test_extraction_dry_run_on_a_recent_real_session(client_as, store, shard):
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id="s-real",
        user_id="u1",
        user_name="Gene",
        groups=[],
        messages=[
            IncomingMessage(id="m1", role="user", content="The export button crashes on Safari.")
        ],
        settings=formation_settings(),
    )
    client = client_as("operator")
    editor = client.get(edit_url("extraction", shard)).content.decode()
    assert '<option value="s-real">s-real · Gene' in editor
    response = client.post(
        reverse("ui:prompt_dry_run", args=["a1", "extraction"]),
        {"scope": shard.id, "text": "Pricing questions.", "session": "s-real"},
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    assert "[m1] Gene (u1): The export button crashes on Safari." in page
    assert 'data-scope="shard:bugs" data-current="1" data-edited="0"' in page


def test_save_as_a_check_uses_the_session_picked(client_as, store, shard):
    """Issue 40: the save ignored the session picked and answered 422 (no conversation)."""
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id="s-real",
        user_id="u1",
        user_name="Gene",
        groups=[],
        messages=[
            IncomingMessage(id="m1", role="user", content="The export button crashes on Safari.")
        ],
        settings=formation_settings(),
    )
    client = client_as("operator")
    created = client.post(
        reverse("ui:prompt_check_create", args=["a1", "extraction"]),
        {
            "scope": shard.id,
            "session": "s-real",
            "conversation": "",
            "check_name": "safari crash",
            "expect_1": "lands_in",
            "value_1": "shard:bugs",
            "expect_2": "",
        },
        **HTMX,
    )
    assert created.status_code == 200, created.content.decode()
    [check] = [c for c in check_list(store=store, agent_id="a1") if c.name == "safari crash"]
    assert check.conversation == "user: The export button crashes on Safari."
    assert check.user_name == "Gene"
    missing = client.post(
        reverse("ui:prompt_check_create", args=["a1", "extraction"]),
        {
            "scope": shard.id,
            "session": "nope",
            "check_name": "x",
            "expect_1": "lands_in",
            "value_1": "shard:bugs",
            "expect_2": "",
        },
        **HTMX,
    )
    assert missing.status_code == 422 and "that session has no messages" in missing.content.decode()


def test_a_dry_run_that_would_store_nothing_says_why(client_as, shard):
    client = client_as("operator")
    response = client.post(
        reverse("ui:prompt_dry_run", args=["a1", "extraction"]),
        {"scope": shard.id, "text": BUGS, "conversation": "user: hi\nassistant: hello!"},
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    assert "Neither would store anything:" in page
    assert "the model found no candidate facts in this conversation" in page
    assert "a real formation also waits for 4 messages (this has 2)" in page


def test_an_invalid_draft_is_a_field_error_even_with_checks_saved(client_as, store, shard):
    check_create(
        store=store,
        agent_id="a1",
        name="crashes land in bugs",
        conversation=CRASH,
        user_name="Gene",
        expectations=[{"type": "lands_in", "value": "shard:bugs"}],
        author="op",
    )
    client = client_as("operator")
    broken = client.post(
        reverse("ui:prompt_save", args=["a1", "extraction"]),
        {"text": "No conversation placeholder here", "expected_version": 0},
    )
    assert broken.status_code == 422 and "it lacks {conversation}" in broken.content.decode()
    run = client.post(
        reverse("ui:prompt_checks_run", args=["a1", "extraction"]),
        {"scope": shard.id, "text": "Extract {conversation}"},
        **HTMX,
    )
    assert run.status_code == 422 and "not a template" in run.content.decode()


def test_the_consolidation_dry_run_shows_each_call_it_would_make(client_as, store, fake_openai):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    ObservationFactory.create(store=store, scope=scope, content="Gene prefers tea.")
    scope = scope_get(store=store, scope_id=scope.id)
    long = "Gene likes tea. " * 200  # over the word limit: the run's retry is shown too
    fake_openai.reply(long).reply("Gene prefers tea.").reply("Gene prefers tea.")
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "consolidation"]),
        {
            "scope": scope.id,
            "text": "Fold {observations} into {consolidation} ({max_words} words).",
        },
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    assert f"[{scope.pending_observation_ids[0]}] Gene prefers tea." in page  # the ids sent
    assert "2 calls ask for" in page and "temperature 0.0" in page and "a prose answer" in page
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 0
