"""Precise memory through the API: sentence-level provenance and no duplicates in a scope.

Several speakers with real ObjectIds (user ids and message ids), every scope type
(individual, group, collective, shard), the fake OpenAI server answering only with the
message ids its prompt shows.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_create, scope_get_or_create
from tests.api.conftest import API, assert_error
from tests.fakes.openai_server import FakeOpenAI, extraction_responder, prompt_lines

AGENT = "agent-1"
SESSION = "s-provenance"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SCOPE_TYPES = ["individual", "group", "collective", "shard"]


def oid() -> str:
    return str(ObjectId())


class People:
    """Alice and Bob, ids and message ids real ObjectIds, in the Eden group."""

    def __init__(self) -> None:
        self.alice, self.bob, self.eden = oid(), oid(), oid()
        self.m_alice, self.m_reply, self.m_bob, self.m_reply2 = oid(), oid(), oid(), oid()


def ingest_two_people(api: Any, p: People) -> None:
    """Alice speaks, the assistant answers, Bob speaks, the assistant answers."""
    groups = [{"id": p.eden, "name": "Eden"}]
    lines = [
        (p.alice, "Alice", p.m_alice, "user", "I am allergic to peanuts.", 0),
        (p.alice, "Alice", p.m_reply, "assistant", "Noted, no peanuts for you.", 1),
        (p.bob, "Bob", p.m_bob, "user", "Everyone should know the coffee machine is broken.", 2),
        (p.bob, "Bob", p.m_reply2, "assistant", "Thanks, Bob.", 3),
    ]
    for user, name, mid, role, text, minute in lines:
        body = {
            "user_id": user,
            "user_name": name,
            "groups": groups,
            "messages": [
                {
                    "id": mid,
                    "role": role,
                    "content": text,
                    "user_id": user,
                    "user_name": name,
                    "created_at": (T0 + timedelta(minutes=minute)).isoformat(),
                }
            ],
        }
        response = api.post(
            f"{API}/agents/{AGENT}/sessions/{SESSION}/messages",
            body,
            content_type="application/json",
        )
        assert response.status_code == 202, response.content


def form(api: Any, run_tasks: Any) -> dict[str, Any]:
    with run_tasks():
        response = api.post(f"{API}/agents/{AGENT}/sessions/{SESSION}/form")
    assert response.status_code == 202, response.content
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "succeeded", job
    return job


def listed(api: Any, scope_id: str) -> list[dict[str, Any]]:
    response = api.get(f"{API}/scopes/{scope_id}/observations")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def scope_of(store: Any, key: ScopeKey) -> str:
    return scope_get_or_create(store=store, key=key)[0].id


@pytest.fixture
def bugs_shard(store: Any) -> Any:
    return scope_create(store=store, key=ScopeKey.collective(AGENT, "bugs"), author="op")


# -- provenance ---------------------------------------------------------------------------


def test_each_observation_of_a_two_person_session_cites_only_its_speakers_line(
    api, store, fake_openai: FakeOpenAI, run_tasks, bugs_shard
):
    p = People()
    ingest_two_people(api, p)
    fake_openai.set_responder(
        extraction_responder(
            {
                "content": "Alice is allergic to peanuts.",
                "scope": f"individual:{p.alice}",
                "cite": "allergic",
            },
            {
                "content": "Bob reported the coffee machine is broken.",
                "scope": f"individual:{p.bob}",
                "cite": "coffee machine",
            },
            {
                "content": "Eden orders no peanuts for Alice.",
                "scope": "group:Eden",
                "about": [p.alice],
                "cite": "peanuts.",
            },
            {
                "content": "The office coffee machine is broken.",
                "scope": "collective",
                "about": [p.bob],
                "cite": "coffee machine",
            },
            {
                "content": "Peanut allergies must be flagged in orders.",
                "scope": "shard:bugs",
                "about": [p.alice],
                "cite": "allergic",
            },
        )  # fmt: skip
    )
    job = form(api, run_tasks)
    assert job["result"]["observations"] == 5 and job["result"]["duplicates"] == 0

    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    shown = {line.message_id: line.speaker for line in prompt_lines(fake_openai.chat_requests[-1])}
    assert shown == {
        p.m_alice: f"Alice ({p.alice})",
        p.m_reply: "assistant",
        p.m_bob: f"Bob ({p.bob})",
        p.m_reply2: "assistant",
    }
    assert f"[{p.m_alice}] Alice ({p.alice}): I am allergic to peanuts." in prompt

    alice_time, bob_time = T0, T0 + timedelta(minutes=2)
    expected = {
        ScopeKey.individual(AGENT, p.alice): ([p.m_alice], alice_time, [p.alice]),
        ScopeKey.individual(AGENT, p.bob): ([p.m_bob], bob_time, [p.bob]),
        ScopeKey.group(AGENT, p.eden): ([p.m_alice], alice_time, [p.alice]),
        ScopeKey.collective(AGENT): ([p.m_bob], bob_time, [p.bob]),
        ScopeKey.collective(AGENT, "bugs"): ([p.m_alice], alice_time, [p.alice]),
    }
    for key, (sources, observed_at, related) in expected.items():
        (item,) = listed(api, scope_of(store, key))
        assert item["source_message_ids"] == sources, key
        assert item["source_session_id"] == SESSION
        assert datetime.fromisoformat(item["observed_at"]) == observed_at, key
        assert item["related_user_ids"] == related, key


def test_ids_not_in_the_batch_are_dropped_and_none_left_cites_the_speakers_lines(
    api, store, fake_openai: FakeOpenAI, run_tasks
):
    p = People()
    ingest_two_people(api, p)
    stranger = oid()
    fake_openai.reply_json(
        {
            "observations": [
                # one real id and one made up: the made-up one is dropped
                {
                    "content": "Alice is allergic to peanuts.",
                    "scope": f"individual:{p.alice}",
                    "sources": [stranger, p.m_alice],
                },
                # only a made-up id: the item cites its speaker's (Bob's) lines
                {
                    "content": "Bob reported a broken coffee machine.",
                    "scope": f"individual:{p.bob}",
                    "sources": [stranger],
                },
                # no sources at all, about Alice: Alice's lines
                {"content": "Eden avoids peanuts.", "scope": "group:Eden", "about": [p.alice]},
            ]
        },  # fmt: skip
        strict=False,
    )
    job = form(api, run_tasks)
    assert job["result"]["observations"] == 3

    def sources(key: ScopeKey) -> tuple[list[str], datetime]:
        (item,) = listed(api, scope_of(store, key))
        return item["source_message_ids"], datetime.fromisoformat(item["observed_at"])

    assert sources(ScopeKey.individual(AGENT, p.alice)) == ([p.m_alice], T0)
    assert sources(ScopeKey.individual(AGENT, p.bob)) == ([p.m_bob], T0 + timedelta(minutes=2))
    assert sources(ScopeKey.group(AGENT, p.eden)) == ([p.m_alice], T0)


def test_the_fake_refuses_an_answer_citing_ids_its_prompt_does_not_show(
    api, fake_openai: FakeOpenAI, run_tasks
):
    p = People()
    ingest_two_people(api, p)
    fake_openai.reply_json(
        {"observations": [{"content": "x y z", "scope": "collective", "sources": [oid()]}]}
    )
    with run_tasks():
        response = api.post(f"{API}/agents/{AGENT}/sessions/{SESSION}/form")
    job = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "failed", job


def test_the_offline_provider_cites_the_line_it_took_the_fact_from(api, store, settings, run_tasks):
    settings.MEMORY_LLM_PROVIDER = "offline"
    p = People()
    ingest_two_people(api, p)
    form(api, run_tasks)
    (alice,) = listed(api, scope_of(store, ScopeKey.individual(AGENT, p.alice)))
    assert "peanuts" in alice["content"]
    assert alice["source_message_ids"] == [p.m_alice]
    assert datetime.fromisoformat(alice["observed_at"]) == T0


# -- no duplicates ------------------------------------------------------------------------


def scope_for(store: Any, kind: str, p: People) -> tuple[ScopeKey, dict[str, Any]]:
    """The scope key of `kind` and the extraction item that files the fact there."""
    fact = "Deploys freeze on Fridays."
    if kind == "individual":
        key, label = ScopeKey.individual(AGENT, p.alice), f"individual:{p.alice}"
    elif kind == "group":
        key, label = ScopeKey.group(AGENT, p.eden), "group:Eden"
    elif kind == "collective":
        key, label = ScopeKey.collective(AGENT), "collective"
    else:
        key, label = ScopeKey.collective(AGENT, "bugs"), "shard:bugs"
    return key, {"content": fact, "scope": label, "about": [p.alice], "cite": "allergic"}


@pytest.mark.parametrize("kind", SCOPE_TYPES)
def test_the_same_fact_posted_three_ways_is_stored_once(
    api, store, fake_openai: FakeOpenAI, run_tasks, bugs_shard, kind
):
    p = People()
    key, item = scope_for(store, kind, p)
    scope_id = scope_of(store, key)
    first = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": "Deploys freeze on Fridays."},
        content_type="application/json",
    )
    assert first.status_code == 201
    kept = first.json()["id"]

    # single: case, spacing, punctuation and Unicode width differ; same fact
    again = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": "  deploys   FREEZE on ｆｒｉｄａｙｓ! "},
        content_type="application/json",
    )
    assert again.status_code == 200, again.content
    assert again.json()["id"] == kept and again.json()["content"] == "Deploys freeze on Fridays."

    # batch: the repeat is that observation, with duplicate_of; a new fact beside it is stored
    batch = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {
            "items": [
                {"client_id": "a", "content": "Deploys freeze on Fridays"},
                {"client_id": "b", "content": "Releases go out on Tuesdays."},
                {"client_id": "c", "content": "releases go out on tuesdays"},
            ]
        },
        content_type="application/json",
    )
    assert batch.status_code == 201, batch.content
    a, b, c = batch.json()["items"]
    assert (a["id"], a["duplicate_of"], a["created"]) == (kept, kept, False)
    assert (b["duplicate_of"], b["created"]) == (None, True)
    assert (c["id"], c["duplicate_of"], c["created"]) == (b["id"], b["id"], False)
    assert batch.json()["created"] == 1

    # formation: the model files it once more; the job counts it as a duplicate
    ingest_two_people(api, p)
    fake_openai.set_responder(extraction_responder(item))
    job = form(api, run_tasks)
    assert job["result"]["observations"] == 0 and job["result"]["duplicates"] == 1
    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "Noted, not yet merged" in prompt and "- Deploys freeze on Fridays." in prompt

    items = listed(api, scope_id)
    assert sorted(i["content"] for i in items) == [
        "Deploys freeze on Fridays.",
        "Releases go out on Tuesdays.",
    ]
    scope = api.get(f"{API}/scopes/{scope_id}").json()
    assert scope["pending_count"] == 2


def test_private_on_a_duplicate_marks_the_kept_one_private(api, store):
    scope_id = scope_of(store, ScopeKey.individual(AGENT, oid()))
    kept = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": "Owns a cat named Miso."},
        content_type="application/json",
    ).json()
    assert kept["private"] is False
    again = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": "owns a cat named miso", "private": True},
        content_type="application/json",
    )
    assert again.status_code == 200
    assert (again.json()["id"], again.json()["private"]) == (kept["id"], True)
    assert api.get(f"{API}/observations/{kept['id']}").json()["private"] is True


def test_a_deleted_fact_can_be_added_again_and_an_edit_onto_another_is_a_conflict(api, store):
    scope_id = scope_of(store, ScopeKey.group(AGENT, oid()))

    def add(text: str) -> Any:
        return api.post(
            f"{API}/scopes/{scope_id}/observations", {"content": text},
            content_type="application/json",
        )  # fmt: skip

    first = add("The team uses Jira.").json()
    assert api.delete(f"{API}/observations/{first['id']}").status_code == 204
    second = add("The team uses Jira.")
    assert second.status_code == 201 and second.json()["id"] != first["id"]

    other = add("The team uses Linear.").json()
    clash = api.patch(
        f"{API}/observations/{other['id']}",
        {"content": "the team uses JIRA"},
        content_type="application/json",
    )
    assert_error(clash, 409, "conflict")
    assert api.get(f"{API}/observations/{other['id']}").json()["content"] == "The team uses Linear."


@pytest.mark.parametrize("kind", SCOPE_TYPES)
def test_concurrent_writers_of_the_same_fact_store_it_once(store, bugs_shard, kind):
    p = People()
    key, _ = scope_for(store, kind, p)
    scope, _ = scope_get_or_create(store=store, key=key)
    writers = 6
    start = threading.Barrier(writers)
    results: list[str] = []
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            start.wait()
            text = "The VPN needs a restart on Mondays." + (" " * n)
            results.append(observation_add(store=store, scope=scope, content=text).id)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(set(results)) == 1  # every writer got the one stored observation
    fresh = scope_get_or_create(store=store, key=key)[0]
    assert fresh.observation_seq == 1  # one observation was appended to the log
    assert fresh.pending_observation_ids == results[:1]


@pytest.mark.parametrize("kind", SCOPE_TYPES)
def test_a_near_duplicate_is_stored_with_similar_to(api, store, bugs_shard, kind):
    key, _ = scope_for(store, kind, People())
    scope_id = scope_of(store, key)

    def add(text: str) -> dict[str, Any]:
        response = api.post(
            f"{API}/scopes/{scope_id}/observations", {"content": text},
            content_type="application/json",
        )  # fmt: skip
        assert response.status_code == 201, response.content
        return response.json()

    first = add("Alice keeps two cats and one dog in her Lisbon flat.")
    near = add("Alice keeps two cats and one dog in her Lisbon flat today.")  # 11 of 12 words
    far = add("Alice keeps one cat in her Porto flat.")
    assert first["similar_to"] is None
    assert near["similar_to"] == first["id"]
    assert far["similar_to"] is None
