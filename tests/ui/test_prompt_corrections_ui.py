"""The corrections panel of the prompt editor (issue 38, item 5), on all four scope types:
it lists what support corrected (deleted words withheld), "Make a check" is one click,
"Suggest a change" opens the draft in the editor (saved only when it passes every check,
or with "Save anyway"), a model failure says so and changes nothing; and the check form
of consolidation and propagation prompts saves checks of their kind (item 3)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memory_admin.models import ApiKey
from streams.drafts.prompt_checks import check_list
from streams.prompts import DEFAULT_TEMPLATES
from tests.api.conftest import bearer_client
from tests.api.test_corrections_api import FACT, LABELS, LINE, formed, suggestion_responder

AGENT = "agent-1"


@pytest.fixture
def api(db):
    _, raw = ApiKey.generate(name="test-key", agent_ids=[])
    return bearer_client(raw)


def deleted_one(api, store, fake_openai, run_tasks, settings, kind: str) -> dict:
    doc = formed(api, store, fake_openai, run_tasks, settings, kind)
    assert api.delete(f"/api/v1/observations/{doc['_id']}?reason=a guess").status_code == 204
    return doc


@pytest.mark.parametrize("kind", list(LABELS))
def test_the_panel_lists_a_delete_without_its_words_and_makes_a_check(
    api, client_as, store, fake_openai, run_tasks, settings, kind
):
    deleted_one(api, store, fake_openai, run_tasks, settings, kind)
    client = client_as("operator")
    edit = reverse("ui:prompt_edit", args=[AGENT, "extraction"])
    page = client.get(edit).content.decode()
    assert 'id="corrections"' in page and 'data-what="delete"' in page
    assert "Reason: a guess" in page and f"type-{kind}" in page
    panel = page.split('id="corrections"', 1)[1].split("</section>", 1)[0]
    assert FACT not in panel and "Lisbon" not in panel  # its words and lines withheld
    [correction] = store.corrections.page(
        agent_id=AGENT, prompt_kind="extraction", scope_id=None, before=None, limit=5
    ).docs
    make = reverse("ui:prompt_correction_check", args=[AGENT, "extraction", correction["_id"]])
    answer = client.post(make)
    assert answer.status_code == 302
    [check] = check_list(store=store, agent_id=AGENT)
    assert check.correction_id == str(correction["_id"]) and LINE in check.conversation
    assert client.post(make).status_code == 302  # twice: refused, said on the page
    assert len(check_list(store=store, agent_id=AGENT)) == 1
    assert "already" in client.get(edit).content.decode()
    viewer = client_as("viewer").get(edit).content.decode()
    assert "make-check" not in viewer and 'id="suggest"' not in viewer  # operators only


def test_a_suggested_draft_opens_in_the_editor_and_saves_only_passing_every_check(
    api, client_as, store, fake_openai, run_tasks, settings
):
    deleted_one(api, store, fake_openai, run_tasks, settings, "individual")
    client = client_as("operator")
    [correction] = store.corrections.page(
        agent_id=AGENT, prompt_kind="extraction", scope_id=None, before=None, limit=5
    ).docs
    make = reverse("ui:prompt_correction_check", args=[AGENT, "extraction", correction["_id"]])
    assert client.post(make).status_code == 302  # a check: "no observation contains" FACT
    fake_openai.set_responder(suggestion_responder)
    answer = client.post(reverse("ui:prompt_suggest", args=[AGENT, "extraction"]))
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'id="suggestion"' in page and 'id="experiment-slot"' in page
    assert "Learnt from 1 correction(s): skip guesses." in page  # the draft, in the editor
    assert 'name="suggested" value="1"' in page and 'form="dry-run-form"' in page
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 0
    # The fake still files FACT, so the draft fails the check made of the correction: a
    # suggestion is not saved over a failing check without "Save anyway".
    fake_openai.set_responder(
        lambda request: (
            suggestion_responder(request)
            if request.task == "prompt_suggestion"
            else json.dumps(
                {
                    "observations": [
                        {"content": FACT, "scope": "individual", "about": [], "sources": []}
                    ]
                }
            )
        )
    )
    draft = {
        "text": DEFAULT_TEMPLATES["extraction"] + "\nLearnt: skip guesses.",
        "expected_version": 0,
        "suggested": "1",
    }
    save = reverse("ui:prompt_save", args=[AGENT, "extraction"])
    refused = client.post(save, draft)
    assert refused.status_code == 422
    assert "a suggestion is saved only when it passes every check" in refused.content.decode()
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 0
    assert client.post(save, {**draft, "confirm": "1"}).status_code == 302
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 1


def test_a_suggestion_the_model_fails_says_so_and_changes_nothing(
    api, client_as, store, fake_openai, run_tasks, settings
):
    client = client_as("operator")
    suggest = reverse("ui:prompt_suggest", args=[AGENT, "extraction"])
    none_yet = client.post(suggest)
    assert none_yet.status_code == 422 and "nothing to learn from" in none_yet.content.decode()
    deleted_one(api, store, fake_openai, run_tasks, settings, "group")
    fake_openai.fail(500, times=5)
    failed = client.post(suggest)
    assert failed.status_code == 503
    assert "could not suggest a change" in failed.content.decode()
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 0


def test_the_panel_pages(api, client_as, store, fake_openai, run_tasks, settings):
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual")
    for n in range(12):
        body = {"content": f"Gene lives in Lisbon (edit {n})."}
        answer = api.patch(
            f"/api/v1/observations/{doc['_id']}", body, content_type="application/json"
        )
        assert answer.status_code == 200
    client = client_as("viewer")
    page = client.get(reverse("ui:prompt_edit", args=[AGENT, "extraction"])).content.decode()
    assert page.count('data-what="edit"') == 10 and 'id="older-corrections"' in page
    older = page.split('id="older-corrections" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    rest = client.get(older, headers={"HX-Request": "true"}).content.decode()
    assert rest.count('data-what="edit"') == 2 and "older-corrections" not in rest
    assert rest.startswith('<section id="corrections"')
    bad = client.get(older.split("?")[0] + "?cursor=bogus").content.decode()
    assert bad.count('data-what="edit"') == 10  # a cursor not handed out: the first page


@pytest.mark.parametrize(
    ("prompt_kind", "scope_kind", "expect", "value"),
    [
        ("consolidation", "individual", "keeps", "Pro plan"),
        ("consolidation", "group", "within_words", "50"),
        ("consolidation", "collective", "answers", "What plan is the account on?"),
        ("consolidation", "shard", "not_contains", "password"),
        ("propagation", "individual", "nothing_personal", "Gene"),
        ("propagation", "group", "lands_in", "collective"),
    ],
)
def test_consolidation_and_propagation_checks_are_made_from_their_prompt_pages(
    client_as, store, prompt_kind, scope_kind, expect, value
):
    from tests.api.test_prompt_check_kinds import TRAITS
    from tests.factories import ScopeFactory

    scope = ScopeFactory.create(store=store, agent_id=AGENT, **TRAITS[scope_kind])
    client = client_as("operator")
    edit = reverse("ui:prompt_edit", args=[AGENT, prompt_kind]) + f"?scope={scope.id}"
    page = client.get(edit).content.decode()
    assert 'id="kind-check-form"' in page and f'value="{expect}"' in page
    create = reverse("ui:prompt_check_create", args=[AGENT, prompt_kind])
    body = {
        "scope": scope.id,
        "check_name": f"{prompt_kind} {expect}",
        "conversation": "The account is on the Pro plan.\nThe team deploys on Fridays.",
        "expect_1": expect,
        "value_1": value,
    }
    answer = client.post(create, body, headers={"HX-Request": "true"})
    assert answer.status_code == 200, answer.content
    [check] = check_list(store=store, agent_id=AGENT)
    assert check.kind == prompt_kind and check.expectations[0].type == expect
    assert f"{prompt_kind} {expect}" in client.get(edit).content.decode()
    # Bad input: an expectation of another kind, and no observations.
    wrong = client.post(create, {**body, "expect_1": "contains"}, headers={"HX-Request": "true"})
    assert wrong.status_code == 422
    empty = client.post(create, {**body, "conversation": " "}, headers={"HX-Request": "true"})
    assert empty.status_code == 422 and "one per line" in empty.content.decode()
