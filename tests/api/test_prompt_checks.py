"""The prompt checks API: save checks, run them on the prompt in effect and on a draft."""

from __future__ import annotations

import pytest

from streams.memory.scopes import ScopeKey, scope_create
from tests.api.conftest import API, assert_error

pytestmark = pytest.mark.django_db

CONVERSATION = "user: The export button crashes every time on Safari.\nassistant: Sorry!"
BUG_CHECK = {
    "name": "crash reports go to the bugs shard",
    "conversation": CONVERSATION,
    "user_name": "Gene",
    "expectations": [
        {"type": "lands_in", "value": "shard:bugs"},
        {"type": "contains", "value": "export button"},
    ],
}


@pytest.fixture
def bugs_shard(store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    return scope_create(
        store=store,
        key=ScopeKey.collective("a1", "bugs"),
        extraction_prompt="Crashes and bugs users ran into, with the button or screen named.",
    )


def post(client, path, body):
    return client.post(API + path, body, content_type="application/json")


def test_a_saved_check_passes_on_the_prompt_in_effect_and_a_draft_can_regress_it(api, bugs_shard):
    created = post(api, "/agents/a1/prompt-checks", BUG_CHECK)
    assert created.status_code == 201, created.content
    assert api.get(f"{API}/agents/a1/prompt-checks").json()["items"][0]["name"] == BUG_CHECK["name"]

    now = post(api, "/agents/a1/prompt-checks/run", {})
    assert now.status_code == 200
    body = now.json()
    assert body["passed"] is True and body["results"][0]["draft"] is None
    assert "shard:bugs" in {i["scope"] for i in body["results"][0]["in_effect"]["items"]}

    draft = {"scope_id": bugs_shard.id, "text": "Pricing questions and invoices."}
    worse = post(api, "/agents/a1/prompt-checks/run", draft).json()
    assert worse["passed"] is False and worse["regressions"] == 1
    [result] = worse["results"]
    assert result["in_effect"]["passed"] and not result["draft"]["passed"]
    assert "an observation lands in 'shard:bugs'" in result["draft"]["failures"]
    # Nothing was saved by running: the shard's guidance is what it was.
    assert (
        bugs_shard.extraction_prompt
        in api.get(f"{API}/scopes/{bugs_shard.id}").json()["extraction_prompt"]
    )


def test_bad_checks_and_drafts_are_422s(api, bugs_shard):
    no_expectation = {**BUG_CHECK, "expectations": []}
    assert_error(post(api, "/agents/a1/prompt-checks", no_expectation), 422, "validation_error")
    empty_value = {**BUG_CHECK, "expectations": [{"type": "contains", "value": " "}]}
    assert_error(post(api, "/agents/a1/prompt-checks", empty_value), 422, "validation_error")
    template_as_guidance = {"scope_id": bugs_shard.id, "text": "Extract {conversation}"}
    response = post(api, "/agents/a1/prompt-checks/run", template_as_guidance)
    assert_error(response, 422, "validation_error")
    assert "not a template" in response.json()["error"]["message"]


def test_checks_of_another_agent_are_not_found(limited_api, api, bugs_shard):
    post(api, "/agents/a1/prompt-checks", BUG_CHECK)
    assert_error(limited_api.get(f"{API}/agents/a1/prompt-checks"), 404, "not_found")
    check_id = api.get(f"{API}/agents/a1/prompt-checks").json()["items"][0]["id"]
    assert api.delete(f"{API}/agents/a1/prompt-checks/{check_id}").status_code == 204
    assert_error(api.delete(f"{API}/agents/a1/prompt-checks/{check_id}"), 404, "not_found")
