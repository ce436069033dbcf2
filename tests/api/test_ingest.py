"""Conversation ingest and "form now": counting, limits, validation, and the formation job."""

from __future__ import annotations

import pytest

from tests.api.conftest import API, assert_error

SESSION = f"{API}/agents/agent-1/sessions/s1"


def message(n: int | str, role: str = "user", content: str = "hello there") -> dict[str, str]:
    return {"id": f"m{n}", "role": role, "content": content}


def ingest(client, messages: list[dict], *, path: str = SESSION, **extra):
    body = {"user_id": "u1", "user_name": "Gene", "messages": messages, **extra}
    return client.post(f"{path}/messages", body, content_type="application/json")


def form(client, path: str = SESSION):
    return client.post(f"{path}/form")


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def test_ingest_accepts_and_counts(api):
    response = ingest(
        api,
        [message(1), message(2, "assistant"), message(3, "tool")],
        groups=[{"id": "g1", "name": "Eden Team"}],
    )
    assert response.status_code == 202
    assert response.json() == {
        "session_id": "s1",
        "accepted": 3,
        "duplicates": 0,
        "unformed_messages": 3,
        "formation_job_id": None,
        "refused": [],
        "forget_request": None,
    }


def test_resent_ids_are_duplicates(api):
    ingest(api, [message(1), message(2)])
    body = ingest(api, [message(2), message(3), message(1)]).json()
    assert (body["accepted"], body["duplicates"], body["unformed_messages"]) == (1, 2, 3)


def test_the_same_id_twice_in_one_request_counts_once(api):
    body = ingest(api, [message(1), message(1, content="again")]).json()
    assert (body["accepted"], body["duplicates"], body["unformed_messages"]) == (1, 1, 1)


def test_optional_fields(api):
    stamped = {**message(1), "created_at": "2024-05-01T10:00:00+02:00"}
    response = api.post(
        f"{SESSION}/messages",
        {"user_id": "u1", "messages": [stamped, message(2, "system")]},
        content_type="application/json",
    )
    assert response.status_code == 202
    assert response.json()["accepted"] == 2


def test_500_messages_are_accepted_501_are_not(api):
    error = assert_error(ingest(api, [message(n) for n in range(501)]), 422, "validation_error")
    assert [d["field"] for d in error["details"]] == ["messages"]
    response = ingest(api, [message(n) for n in range(500)])
    assert response.status_code == 202
    assert response.json()["accepted"] == 500


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": [message(1)]}, "user_id"),
        ({"user_id": "u1"}, "messages"),
        ({"user_id": "u1", "messages": []}, "messages"),
        ({"user_id": "u1", "messages": [message(1, role="robot")]}, "messages.0.role"),
        ({"user_id": "u1", "messages": [{"id": "x" * 129, "role": "user", "content": "hi"}]},
         "messages.0.id"),
        ({"user_id": "u1", "messages": [{"id": "", "role": "user", "content": "hi"}]},
         "messages.0.id"),
        ({"user_id": "u1", "messages": [{"id": "m1", "role": "user"}]}, "messages.0.content"),
        ({"user_id": "u1", "messages": [{"id": "m1", "role": "user", "content": 5}]},
         "messages.0.content"),
        ({"user_id": "u1", "messages": [{**message(1), "created_at": "2024-05-01T10:00:00"}]},
         "messages.0.created_at"),
        ({"user_id": "u1", "messages": [{**message(1), "colour": "red"}]}, "messages.0.colour"),
        ({"user_id": "u1", "groups": [{"name": "Eden"}], "messages": [message(1)]},
         "groups.0.id"),
        ({"user_id": "x" * 129, "messages": [message(1)]}, "user_id"),
    ],
    ids=[
        "no-user", "no-messages", "empty-messages", "bad-role", "long-id", "empty-id",
        "no-content", "content-not-string", "naive-time", "unknown-field", "group-without-id",
        "long-user-id",
    ],
)  # fmt: skip
def test_invalid_ingest_is_422_naming_the_field(api, body, field):
    response = api.post(f"{SESSION}/messages", body, content_type="application/json")
    error = assert_error(response, 422, "validation_error")
    assert field in [d["field"] for d in error["details"]], error["details"]


def test_message_id_of_128_characters_is_fine(api):
    response = ingest(api, [{"id": "x" * 128, "role": "user", "content": "hi"}])
    assert response.status_code == 202


def test_long_session_id_is_422(api):
    error = assert_error(
        ingest(api, [message(1)], path=f"{API}/agents/agent-1/sessions/{'s' * 129}"),
        422,
        "validation_error",
    )
    assert error["details"][0]["field"] == "session_id"


def test_other_agents_sessions_are_404_for_a_limited_key(limited_api):
    path = f"{API}/agents/agent-2/sessions/s1"
    assert_error(ingest(limited_api, [message(1)], path=path), 404, "not_found")
    assert_error(form(limited_api, path), 404, "not_found")
    assert ingest(limited_api, [message(1)]).status_code == 202


def test_form_with_nothing_unformed_is_409(api):
    assert_error(form(api), 409, "conflict")


def test_form_runs_a_formation_job(api, run_tasks):
    ingest(api, [message(1, content="I prefer Rust over Go for backend services.")])
    with run_tasks():
        response = form(api)
    assert response.status_code == 202
    job_id = response.json()["job_id"]
    job = api.get(f"{API}/jobs/{job_id}").json()
    assert (job["kind"], job["session_id"]) == ("formation", "s1")
    assert job["status"] == "succeeded", job
    assert job["llm_calls"] == 1
    assert_error(form(api), 409, "conflict")


def test_reaching_the_threshold_starts_a_formation(api, settings, run_tasks):
    settings.MEMORY_FORMATION_MAX_MESSAGES = 4
    ingest(api, [message(n) for n in range(3)])
    with run_tasks():
        body = ingest(api, [message(3, content="I moved to Lisbon last spring.")]).json()
    assert body["formation_job_id"] is not None
    job = api.get(f"{API}/jobs/{body['formation_job_id']}").json()
    assert job["status"] == "succeeded", job
