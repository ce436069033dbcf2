"""Corrections that teach (issue 38, item 5), through the API on all four scope types:
every correction source (edit, delete with a reason, private, bulk move, review rejection
with a note) records one correction with the prompt version of the formation that made
the observation; the list shows texts through the visibility rule; one call makes a
check of a correction; forget-user removes them; "suggest" makes one model call."""

from __future__ import annotations

import json

import pytest

from streams.memory.requests import PROMPT_END, PROMPT_START
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory
from tests.fakes.openai_wire import extraction_responder, prompt_text

JSON = "application/json"
AGENT = "agent-1"
LINE = "I moved to Lisbon last month and I work on the Atlas project."
FACT = "Gene lives in Lisbon and works on Atlas."
SHARD = "atlas-notes"
LABELS = {
    "individual": "individual",
    "group": "group:Eden Team",
    "collective": "collective",
    "shard": f"shard:{SHARD}",
}


def _send(api, method, path, body=None):
    return getattr(api, method)(f"{API}{path}", json.dumps(body or {}), content_type=JSON)


def formed(api, store, fake_openai, run_tasks, settings, kind: str, agent: str = AGENT) -> dict:
    """One observation formed from a one-line session into a scope of `kind`, by the real
    formation through the fake model: the observation document."""
    settings.MEMORY_LLM_PROVIDER = "openai"
    if kind == "shard":
        ScopeFactory.create(store=store, agent_id=agent, shard=True, name=SHARD)
    about = ["u1"] if kind == "individual" else []
    fake_openai.set_responder(
        extraction_responder(
            {"content": FACT, "scope": LABELS[kind], "about": about, "cite": "Lisbon"}
        )
    )
    body = {
        "user_id": "u1",
        "user_name": "Gene",
        "groups": [{"id": "eden", "name": "Eden Team"}],
        "messages": [{"id": "m1", "role": "user", "content": LINE}],
    }
    session = f"{API}/agents/{agent}/sessions/s1"
    assert api.post(f"{session}/messages", body, content_type=JSON).status_code in (200, 202)
    with run_tasks():
        assert api.post(f"{session}/form").status_code == 202
    doc = store.observations.collection.find_one({"agent_id": agent, "content": FACT})
    assert doc is not None, "the formation stored nothing"
    return doc


def corrections(api, **params) -> dict:
    answer = api.get(f"{API}/agents/{AGENT}/corrections", params)
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.mark.parametrize("kind", list(LABELS))
def test_an_edit_is_a_correction_that_makes_a_contains_check(
    api, store, fake_openai, run_tasks, settings, kind
):
    doc = formed(api, store, fake_openai, run_tasks, settings, kind)
    oid = str(doc["_id"])
    edited = "Gene lives in Lisbon, Portugal, and works on Atlas."
    answer = _send(api, "patch", f"/observations/{oid}", {"content": edited, "reason": "country"})
    assert answer.status_code == 200, answer.content
    [one] = corrections(api, kind="extraction")["items"]
    assert one["what"] == "edit" and one["reason"] == "country"
    assert one["scope_type"] == kind and one["scope_id"] == str(doc["scope_id"])
    assert one["prompt_kind"] == "extraction" and one["prompt_version"] == 0
    assert one["job_id"] and one["session_id"] == "s1" and one["actor"] == "api:test-key"
    # The old text was edited away: not shown; the new one is memory's own.
    assert one["before"] is None and one["withheld"] == "edited" and one["after"] == edited
    assert [line["text"] for line in one["source_lines"]] == [LINE]
    assert corrections(api, kind="extraction", scope_id=one["scope_id"])["items"]
    assert corrections(api, kind="propagation")["items"] == []

    check = api.post(f"{API}/corrections/{one['id']}/check")
    assert check.status_code == 201, check.content
    made = check.json()
    assert made["kind"] == "extraction" and f"user: {LINE}" in made["conversation"]
    assert made["expectations"] == [{"type": "contains", "value": edited}]
    assert_error(api.post(f"{API}/corrections/{one['id']}/check"), 409, "conflict")


@pytest.mark.parametrize("kind", list(LABELS))
def test_a_delete_with_a_reason_shows_no_deleted_words(
    api, store, fake_openai, run_tasks, settings, kind
):
    doc = formed(api, store, fake_openai, run_tasks, settings, kind)
    oid = str(doc["_id"])
    assert api.delete(f"{API}/observations/{oid}?reason=a+guess").status_code == 204
    assert api.delete(f"{API}/observations/{oid}").status_code == 204  # twice: one correction
    [one] = corrections(api, kind="extraction")["items"]
    assert one["what"] == "delete" and one["reason"] == "a guess"
    assert one["before"] is None and one["after"] is None and one["withheld"] == "deleted"
    assert one["source_lines"] == []
    assert "Lisbon" not in json.dumps(one)
    check = api.post(f"{API}/corrections/{one['id']}/check").json()
    assert check["expectations"] == [{"type": "not_contains", "value": FACT}]


def test_private_move_and_rejection_are_corrections(api, store, fake_openai, run_tasks, settings):
    doc = formed(api, store, fake_openai, run_tasks, settings, "group")
    oid = str(doc["_id"])
    assert _send(api, "patch", f"/observations/{oid}", {"private": True}).status_code == 200
    target = ScopeFactory.create(store=store, agent_id=AGENT, collective=True)
    bulk = {
        "filter": {"scope_id": str(doc["scope_id"])},
        "action": "move",
        "target_scope_id": target.id,
        "dry_run": False,
    }
    with run_tasks():
        moved = _send(api, "post", f"/agents/{AGENT}/observations/bulk", bulk)
    assert moved.status_code in (200, 202), moved.content
    items = corrections(api, kind="extraction")["items"]
    assert [c["what"] for c in items] == ["move", "private"]
    move, private = items
    assert move["target_label"] == "collective" and move["target_scope_id"] == target.id
    assert private["private"] is True and private["before"] == FACT
    check = api.post(f"{API}/corrections/{move['id']}/check").json()
    assert check["expectations"] == [{"type": "lands_in", "value": "collective"}]
    answer = api.post(f"{API}/corrections/{private['id']}/check")
    assert_error(answer, 422, "validation_error")


def test_a_rejection_with_a_note_is_a_correction(api, store, fake_openai, run_tasks, settings):
    group = ScopeFactory.create(
        store=store,
        agent_id=AGENT,
        group=True,
        group_id="eden",
        display_name="Eden Team",
        review_mode="all",
    )
    assert group.review_mode == "all"
    doc = formed(api, store, fake_openai, run_tasks, settings, "group")
    assert doc["review_status"] == "in_review"
    body = {"decision": "reject", "note": "not a team fact"}
    answer = _send(api, "post", f"/observations/{doc['_id']}/review", body)
    assert answer.status_code == 200, answer.content
    [one] = corrections(api, kind="extraction")["items"]
    assert one["what"] == "reject" and one["reason"] == "not a team fact"
    assert one["before"] == FACT  # staff see what was rejected, as the review page does


def test_forget_user_removes_their_corrections_and_the_checks_made_of_them(
    api, store, fake_openai, run_tasks, settings
):
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual")
    assert api.delete(f"{API}/observations/{doc['_id']}?reason=wrong").status_code == 204
    [one] = corrections(api, kind="extraction")["items"]
    assert api.post(f"{API}/corrections/{one['id']}/check").status_code == 201
    with run_tasks():
        forget = api.delete(f"{API}/agents/{AGENT}/users/u1")
    assert forget.status_code == 202, forget.content
    assert corrections(api, kind="extraction")["items"] == []
    assert api.get(f"{API}/agents/{AGENT}/prompt-checks").json()["items"] == []
    assert store.corrections.collection.count_documents({"agent_id": AGENT}) == 0


def test_the_list_pages_and_refuses_bad_input(api, store, fake_openai, run_tasks, settings):
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual")
    oid = str(doc["_id"])
    for n in range(3):
        text = f"Gene lives in Lisbon (edit {n})."
        assert _send(api, "patch", f"/observations/{oid}", {"content": text}).status_code == 200
    first = corrections(api, kind="extraction", limit=2)
    assert len(first["items"]) == 2 and first["next_cursor"]
    rest = corrections(api, kind="extraction", limit=2, cursor=first["next_cursor"])
    assert len(rest["items"]) == 1 and rest["next_cursor"] is None
    assert len({c["id"] for c in first["items"] + rest["items"]}) == 3
    base = f"{API}/agents/{AGENT}/corrections"
    assert_error(api.get(base, {"kind": "summary"}), 422, "validation_error")
    assert_error(api.get(base, {"cursor": "not-ours"}), 422, "validation_error")
    assert_error(api.get(base, {"limit": 0}), 422, "validation_error")
    assert api.get(base, {"scope_id": "nope"}).status_code == 404
    assert_error(api.post(f"{API}/corrections/nope/check"), 404, "not_found")
    assert_error(api.post(f"{API}/corrections/{'0' * 24}/check"), 404, "not_found")
    long = "x" * 501
    assert_error(api.delete(f"{API}/observations/{oid}?reason={long}"), 422, "validation_error")


def test_another_agents_corrections_are_not_found(
    api, limited_api, store, fake_openai, run_tasks, settings
):
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual", agent="agent-2")
    assert api.delete(f"{API}/observations/{doc['_id']}").status_code == 204
    listed = api.get(f"{API}/agents/agent-2/corrections").json()["items"]
    assert_error(limited_api.post(f"{API}/corrections/{listed[0]['id']}/check"), 404, "not_found")
    assert limited_api.get(f"{API}/agents/agent-2/corrections").status_code == 404


def suggestion_responder(request):
    """The strict fake's answer to a suggestion: exactly the JSON the prompt asks for,
    the prompt it shows with one rule more."""
    assert request.task == "prompt_suggestion"
    text = prompt_text(request)
    assert '{"prompt": "<the whole revised prompt>"' in text
    shown = text.split(PROMPT_START + "\n", 1)[1].split("\n" + PROMPT_END, 1)[0]
    count = text.count("## Correction ")
    rule = f"Learnt from {count} correction(s): skip guesses."
    return json.dumps({"prompt": f"{shown}\n{rule}", "why": "support deleted guesses"})


@pytest.mark.parametrize("provider", ["fake", "offline"])
def test_suggest_proposes_a_draft_and_saves_nothing(
    api, store, fake_openai, run_tasks, settings, provider
):
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual")
    assert api.delete(f"{API}/observations/{doc['_id']}?reason=a guess").status_code == 204
    if provider == "offline":
        settings.MEMORY_LLM_PROVIDER = "offline"
    fake_openai.set_responder(suggestion_responder)
    answer = _send(api, "post", f"/agents/{AGENT}/prompts/extraction/suggest", {})
    assert answer.status_code == 200, answer.content
    draft = answer.json()
    if provider == "fake":
        assert draft["draft"].endswith("Learnt from 1 correction(s): skip guesses.")
        [call] = [r for r in fake_openai.chat_requests if r.task == "prompt_suggestion"]
        assert "Reason: a guess" in prompt_text(call) and LINE in prompt_text(call)
    else:
        assert "support said: a guess" in draft["draft"] and draft["model"] == "offline-rules"
        assert FACT not in draft["draft"]
    assert len(draft["correction_ids"]) == 1
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 0  # nothing saved


def test_suggest_refuses_without_corrections_and_reports_a_model_failure(
    api, store, fake_openai, run_tasks, settings
):
    path = f"/agents/{AGENT}/prompts/extraction/suggest"
    assert_error(_send(api, "post", path, {}), 422, "validation_error")
    assert_error(
        _send(api, "post", f"/agents/{AGENT}/prompts/summary/suggest", {}), 422, "validation_error"
    )
    assert_error(_send(api, "post", path, {"bogus": 1}), 422, "validation_error")
    assert _send(api, "post", path, {"scope_id": "0" * 24}).status_code == 404
    doc = formed(api, store, fake_openai, run_tasks, settings, "individual")
    assert api.delete(f"{API}/observations/{doc['_id']}").status_code == 204
    # The strict fake refuses an answer that does not follow the schema asked for ...
    fake_openai.set_responder(lambda request: '{"observations": []}')
    refused = assert_error(_send(api, "post", path, {}), 503, "unavailable")
    assert "could not suggest a change" in refused["message"]
    # ... and an empty prompt is no suggestion.
    fake_openai.set_responder(lambda request: '{"prompt": " ", "why": "none"}')
    answer = assert_error(_send(api, "post", path, {}), 503, "unavailable")
    assert "held no prompt" in answer["message"]
    fake_openai.fail(500, times=5)
    failed = assert_error(_send(api, "post", path, {}), 503, "unavailable")
    assert failed["message"].startswith("the model could not suggest a change")
    assert store.prompts.collection.count_documents({"agent_id": AGENT}) == 0


def test_forgetting_a_speaker_removes_a_check_holding_their_lines(
    api, store, fake_openai, run_tasks, settings
):
    """A group observation is not about its speaker, but a check made of its correction
    holds what they said: forgetting them removes the check."""
    doc = formed(api, store, fake_openai, run_tasks, settings, "group")
    assert api.delete(f"{API}/observations/{doc['_id']}?reason=wrong").status_code == 204
    [one] = corrections(api, kind="extraction")["items"]
    made = api.post(f"{API}/corrections/{one['id']}/check")
    assert made.status_code == 201 and LINE in made.json()["conversation"]
    with run_tasks():
        assert api.delete(f"{API}/agents/{AGENT}/users/u1").status_code == 202
    assert api.get(f"{API}/agents/{AGENT}/prompt-checks").json()["items"] == []
