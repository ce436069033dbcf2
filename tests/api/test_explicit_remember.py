"""Explicit remember (issue 42 item 4): a message that asks to remember forms at once, below
the minimum message count, through the ingest API and through the chat proxy."""

from __future__ import annotations

import pytest

from memory_admin.jobs.tasks import formation_settings
from streams.jobs import job_get
from streams.memory.formation import IncomingMessage, messages_ingest
from tests.api.conftest import API
from tests.fakes.openai_wire import one_fact_responder

SESSION = f"{API}/agents/agent-1/sessions/s1"
SCRUM = "Please remember that my scrum meeting is on 10 September."


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def ingest(client, messages: list[dict]):
    body = {"user_id": "u1", "user_name": "Gene", "messages": messages}
    return client.post(f"{SESSION}/messages", body, content_type="application/json")


def user_observations(client) -> list[str]:
    scopes = client.get(f"{API}/agents/agent-1/scopes", {"user_id": "u1"}).json()["items"]
    texts = []
    for scope in scopes:
        page = client.get(f"{API}/scopes/{scope['id']}/observations").json()
        texts += [o["content"] for o in page["items"]]
    return texts


def test_a_request_to_remember_in_a_three_message_session_forms_at_once(api, store, run_tasks):
    with run_tasks():
        response = ingest(
            api,
            [
                {"id": "m1", "role": "user", "content": "Hi there."},
                {"id": "m2", "role": "assistant", "content": "Hello! How can I help?"},
                {"id": "m3", "role": "user", "content": SCRUM},
            ],
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["accepted"] == 3
    assert body["formation_job_id"] is not None  # below the minimum of 4 all the same
    job = job_get(store=store, job_id=body["formation_job_id"])
    assert (job.trigger, job.status) == ("remember", "succeeded")
    assert any("10 September" in text for text in user_observations(api))
    assert store.sessions.get_buffer("agent-1", "s1")["unformed_count"] == 0


@pytest.mark.parametrize(
    "content",
    [
        "Do you remember that I said I like tea?",  # a recall question
        "Remember when we planned the offsite?",
        "I forgot my keys.",
    ],
)
def test_a_recall_question_is_no_request_and_waits_for_the_minimum(api, content):
    body = ingest(api, [{"id": "m1", "role": "user", "content": content}]).json()
    assert body["formation_job_id"] is None


def test_only_a_users_message_asks(api):
    body = ingest(api, [{"id": "m1", "role": "assistant", "content": SCRUM}]).json()
    assert body["formation_job_id"] is None


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (SCRUM, {"kind": "remember", "topic": None}),
        (
            "Forget what I said about the blue theme.",
            {"kind": "forget", "topic": "the blue theme"},
        ),
        ("Do you remember my birthday?", None),
    ],
)
def test_the_context_call_says_what_the_message_asks_of_the_memory(api, message, expected):
    response = api.post(
        f"{API}/agents/agent-1/context",
        {"user_id": "u1", "message": message},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["memory_request"] == expected


def test_a_request_that_arrives_while_a_formation_runs_is_formed_right_after_it(
    api, store, run_tasks, fake_openai, settings
):
    """The running formation holds the session (the ingest makes no job) and read its
    messages before this one came: the formation's end starts the next one at once."""
    settings.MEMORY_LLM_PROVIDER = "openai"
    sent = []
    # The second formation (the request to remember) answers its fact: an empty answer to
    # a conversation that holds one fails as `empty` and keeps the message unformed.
    remembered = one_fact_responder("Gene's scrum meeting is on 10 September.")

    def respond(request):
        if sent:
            return remembered(request)
        if not sent:  # during the first formation's model call (the server's thread)
            sent.append(
                messages_ingest(
                    store=store,
                    agent_id="agent-1",
                    session_id="s1",
                    user_id="u1",
                    user_name="Gene",
                    groups=[],
                    messages=[IncomingMessage(id="m9", role="user", content=SCRUM)],
                    settings=formation_settings(),
                )
            )
        return '{"observations": []}'

    fake_openai.set_responder(respond)
    ingest(api, [{"id": "m1", "role": "user", "content": "hello"}])
    with run_tasks():
        formed = api.post(f"{SESSION}/form")
    assert formed.status_code == 202, formed.content
    assert sent and sent[0].formation_job is None  # the session was held
    assert store.sessions.get_buffer("agent-1", "s1")["unformed_count"] == 0
    jobs = store.jobs.collection.find({"kind": "formation"}, limit=10)
    assert sorted(j["trigger"] for j in jobs) == ["api", "remember"]
