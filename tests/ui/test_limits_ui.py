"""Limits and models on the settings pages (issue 42 item 5): the scope form's own block and
the agent's page show the value in effect and its level, save, and refuse bad input."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from streams.core.documents import utcnow
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import default_responder, prompt_text

FORM = {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500}
TRAITS = {"individual": {"user_id": "u1"}, "group": {"group": True}}
TRAITS |= {"collective": {"collective": True}, "shard": {"shard": True}}
AGENT = "agent-1"
TALK = "user: I moved to Lisbon last month.\nassistant: Noted!"
ANSWER = (
    '{"observations": [{"content": "Gene moved to Lisbon.", "scope": "individual", "about": []}]}'
)
CODE_WORDS = {"individual": 25, "group": 30, "collective": 35, "shard": 35}


@pytest.mark.parametrize("kind", list(TRAITS))
def test_the_scope_form_shows_sets_and_clears_limits_and_models(client_as, store, kind):
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    client = client_as("operator")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'id="limits-fields"' in page and 'name="item_words"' in page
    assert f"In effect: {CODE_WORDS[kind]} (code default)." in page
    assert ('name="propagation_model"' in page) == (kind in ("individual", "group"))
    url = reverse("ui:scope_settings", args=[scope.id])
    saved = client.post(
        url, {**FORM, "item_words": 12, "item_cap": 4, "consolidation_model": "gpt-4.1"}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    fresh = store.scopes.get(ObjectId(scope.id))
    assert (fresh.item_words, fresh.item_cap, fresh.consolidation_model) == (12, 4, "gpt-4.1")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "In effect: 12 (scope override)." in page
    assert f"Empty: {CODE_WORDS[kind]} (code default)." in page
    client.post(url, {**FORM, "item_words": "", "item_cap": "4", "consolidation_model": "gpt-4.1"})
    assert store.scopes.get(ObjectId(scope.id)).item_words is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("item_words", 0), ("item_words", 999), ("item_cap", -3), ("consolidation_model", "gpt-9")],
)
def test_bad_limits_in_the_scope_form_are_422_beside_the_field(client_as, store, field, value):
    scope = ScopeFactory.create(store=store, agent_id="a1", user_id="u1")
    response = client_as("operator").post(
        reverse("ui:scope_settings", args=[scope.id]), {**FORM, field: value}
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert f'field-invalid" data-setting="{field}"' in page
    assert store.scopes.get(ObjectId(scope.id)).item_words is None


def test_the_agent_page_sets_defaults_by_scope_type(client_as, store):
    store.agents.ensure("a1", now=utcnow())
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    client = client_as("admin")
    listing = client.get(reverse("ui:agents")).content.decode()
    assert reverse("ui:agent_limits", args=["a1"]) in listing
    url = reverse("ui:agent_limits", args=["a1"])
    page = client.get(url).content.decode()
    assert 'name="group__item_words"' in page and "In effect: gpt-4o-mini (code default)." in page
    saved = client.post(url, {"extraction_model": "gpt-4.1-mini", "group__item_words": 40})
    assert saved.status_code == 200 and 'id="limits-saved"' in saved.content.decode()
    agent = store.agents.get("a1")
    assert agent.extraction_model == "gpt-4.1-mini"
    assert agent.scope_defaults == {"group": {"item_words": 40}}
    scope_page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "In effect: 40 (agent default)." in scope_page
    bad = client.post(url, {"group__item_cap": 0})
    assert bad.status_code == 422 and "field-error" in bad.content.decode()
    unknown = client.post(url, {"extraction_model": "gpt-9-imaginary"})
    assert unknown.status_code == 422
    assert store.agents.get("a1").extraction_model == "gpt-4.1-mini"
    assert client.get(reverse("ui:agent_limits", args=["nobody"])).status_code == 404


def test_only_admins_reach_the_agent_page(client_as, store):
    store.agents.ensure("a1", now=utcnow())
    response = client_as("operator").get(reverse("ui:agent_limits", args=["a1"]))
    assert response.status_code in (302, 403)


def test_the_editor_compares_two_models_side_by_side(client_as, store, fake_openai: FakeOpenAI):
    fake_openai.set_responder(lambda r: ANSWER if r.task == "extraction" else default_responder(r))
    url = reverse("ui:prompt_dry_run", args=[AGENT, "extraction"])
    client = client_as("operator")
    editor = client.get(reverse("ui:prompt_edit", args=[AGENT, "extraction"])).content.decode()
    assert 'name="compare_model"' in editor and "your edit with gpt-4.1" in editor
    draft = "Remember facts from {conversation} as JSON."
    response = client.post(
        url,
        {"text": draft, "conversation": TALK, "compare_model": "gpt-4.1"},
        HTTP_HX_REQUEST="true",
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    assert "Your edit, gpt-4.1" in page and 'data-model="gpt-4.1"' in page
    assert 'data-model="gpt-4o-mini"' in page  # the model in effect: MEMORY_LLM_MODEL_FAST
    sent = fake_openai.chat_requests
    assert [r.body["model"] for r in sent] == ["gpt-4.1", "gpt-4o-mini"]
    assert all("Remember facts from" in prompt_text(r) for r in sent)  # the draft on both
    bad = client.post(
        url, {"text": draft, "conversation": TALK, "compare_model": "gpt-9"}, HTTP_HX_REQUEST="true"
    )
    assert bad.status_code == 422 and "not in the price table" in bad.content.decode()
