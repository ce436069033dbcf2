"""Formation against the real store and the fake OpenAI server: triggers, one call, no loss."""

from __future__ import annotations

import pytest

from memory_admin.jobs.tasks import formation_settings
from streams.actions import Actor
from streams.actions import tx as action_tx
from streams.actions.sessions import do_messages_ingest
from streams.jobs import job_get
from streams.llm.port import LLMError
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_create, scope_get_or_create
from streams.records.audit import audit_page
from tests.task_mode import run_job

GROUPS = [{"id": "g1", "name": "Eden Team"}, {"id": "g2", "name": "Platform Guild"}]


def ingest(
    store, n: int, *, start: int = 0, session: str = "s1", content: str = "hello there", act=False
):
    """Buffer messages through the service (or, with `act`, through the ingest action,
    which audits it and keeps its job in a list)."""
    extra = {"actor": Actor.cli(), "follow_ups": []} if act else {}
    return (do_messages_ingest if act else messages_ingest)(
        store=store,
        agent_id="a1",
        session_id=session,
        user_id="u1",
        user_name="Gene",
        groups=GROUPS,
        messages=[
            IncomingMessage(id=f"m{i}", role="user", content=content)
            for i in range(start, start + n)
        ],
        settings=formation_settings(),
        **extra,
    )


def run_formation(store, job_id):
    return run_job(
        store=store,
        job_id=job_id,
        work=lambda run: formation_run(store=store, run=run, settings=formation_settings()),
    )


def scope_observations(store, key):
    scope, _ = scope_get_or_create(store=store, key=key)
    return [o.content for o in observation_list(store=store, scope=scope).items]


def test_44_messages_do_not_form_and_the_45th_does(store, fake_openai):
    first = ingest(store, 44)
    assert first.formation_job is None and first.unformed_messages == 44
    assert fake_openai.chat_requests == []
    second = ingest(store, 1, start=44)
    assert second.formation_job is not None and second.unformed_messages == 45

    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Gene prefers short answers.", "scope": "individual"},
                {"content": "The Eden Team ships on Fridays.", "scope": "group:Eden Team"},
                {"content": "Everyone wants dark mode.", "scope": "collective"},
                {"content": "Made up scope.", "scope": "group:Nobody"},
            ]
        },
        strict=False,  # a server that does not enforce the schema: the parser drops it
    )
    run = run_formation(store, second.formation_job.id)
    assert len(fake_openai.chat_requests) == 1
    assert fake_openai.chat_requests[0].task == "extraction"
    assert run.result["observations"] == 3 and run.result["dropped"] == 1
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == [
        "Gene prefers short answers."
    ]
    assert scope_observations(store, ScopeKey.group("a1", "g1")) == [
        "The Eden Team ships on Fridays."
    ]
    assert scope_observations(store, ScopeKey.collective("a1")) == ["Everyone wants dark mode."]
    job = job_get(store=store, job_id=second.formation_job.id)
    assert job.status == "succeeded" and job.llm_calls == 1
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 0


def test_resent_message_ids_are_duplicates(store):
    ingest(store, 3)
    again = ingest(store, 5)
    assert again.accepted == 2 and again.duplicates == 3 and again.unformed_messages == 5


def test_one_formation_with_two_groups_and_three_shards_makes_one_call(store, fake_openai):
    for name in ("feedback", "bugs", "ideas"):
        scope_create(
            store=store, key=ScopeKey.collective("a1", name), extraction_prompt=f"{name} only"
        )
    ingest(store, 4)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    fake_openai.reply_json(
        {"observations": [{"content": "Dark mode please.", "scope": "shard:ideas"}]}
    )
    run_formation(store, job.id)
    assert len(fake_openai.chat_requests) == 1
    prompt = fake_openai.chat_requests[0].body["messages"][-1]["content"]
    for expected in (
        "feedback only",
        "bugs only",
        "ideas only",
        "Eden Team",
        "Platform Guild",
        "Gene",
    ):
        assert expected in prompt
    assert scope_observations(store, ScopeKey.collective("a1", "ideas")) == ["Dark mode please."]


@pytest.mark.parametrize("failure", ["http_500", "timeout", "malformed_json", "not_an_object"])
def test_a_failed_extraction_keeps_messages_unformed_and_a_retry_never_duplicates(
    store, fake_openai, settings, failure
):
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 0.3
    ingest(store, 5)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    if failure == "http_500":
        fake_openai.fail(500, times=3)
    elif failure == "timeout":
        fake_openai.delay(2, times=3)
    elif failure == "malformed_json":
        fake_openai.reply("{not json")
    else:
        fake_openai.reply_json(["a list"])
    with pytest.raises(LLMError):
        run_formation(store, job.id)
    failed = job_get(store=store, job_id=job.id)
    assert failed.status == "failed" and failed.error and failed.llm_calls == 1
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 5
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == []

    fake_openai.reset()
    fake_openai.reply_json(
        {"observations": [{"content": "Gene likes tea.", "scope": "individual"}]}
    )
    run_formation(store, job.id)  # the retry of the same job
    assert job_get(store=store, job_id=job.id).status == "succeeded"
    run_formation(store, job.id)  # a duplicate delivery does nothing
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == ["Gene likes tea."]
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 0


def test_items_over_the_word_limit_or_empty_are_dropped_and_counted(store, fake_openai):
    ingest(store, 4)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "word " * 51, "scope": "individual"},
                {"content": "   ", "scope": "individual"},
                {"content": "fine", "scope": "individual"},
                "not a dict",
            ]
        },
        strict=False,  # a server that does not enforce the schema
    )
    run = run_formation(store, job.id)
    assert run.result["observations"] == 1 and run.result["dropped"] == 3


def test_form_with_nothing_unformed_is_a_conflict(store):
    from streams.core.exceptions import Conflict

    with pytest.raises(Conflict):
        formation_request(store=store, agent_id="a1", session_id="nope", trigger="api")


def test_formation_commit_crashed_mid_batch_then_retried_stores_each_observation_once(store):
    """A formation's commit goes through the batch path, keyed by its source messages: a
    commit that fails after appending to one scope stores nothing, its retry stores each
    observation once, and a re-delivered commit (acknowledged too late) stores nothing."""
    from bson import ObjectId

    from streams.core.documents import Observation, utcnow
    from streams.memory.formation import formation_client_ids, formation_commit
    from streams.store.client_ids import client_key

    ingest(store, 5)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    buffer = store.sessions.get_buffer("a1", "s1")
    messages = store.sessions.unformed("a1", "s1", limit=100)
    individual, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective("a1"))
    now = utcnow()

    def observation(scope, content):
        return Observation(
            scope_id=scope.id,
            agent_id="a1",
            content=content,
            observed_at=now,
            created_at=now,
            source_session_id="s1",
            source_message_ids=[m.message_id for m in messages],
        )

    def commit(by_scope):
        return formation_commit(
            store=store,
            job=job,
            buffer=buffer,
            messages=messages,
            by_scope=by_scope,
            settings=formation_settings(),
            now=now,
        )

    gone = str(ObjectId())  # a scope forgotten between extraction and commit
    crashing = {
        individual.id: (individual, [observation(individual, "Gene likes tea.")]),
        gone: (individual, [observation(individual, "Lost with the crash.")]),
    }
    with pytest.raises(Exception, match="scope not found"):
        commit(crashing)
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == []
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 5

    def retry():
        return {
            individual.id: (individual, [observation(individual, "Gene likes tea.")]),
            collective.id: (collective, [observation(collective, "Everyone likes tea.")]),
        }

    assert commit(retry()) is True
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == ["Gene likes tea."]
    assert scope_observations(store, ScopeKey.collective("a1")) == ["Everyone likes tea."]
    keys = formation_client_ids(messages, 2)
    assert store.client_ids.find(ObjectId(individual.id), keys[:1]) != {}
    assert store.client_ids.collection.find_one(
        {"_id": client_key(ObjectId(collective.id), keys[1])}
    )

    assert commit(retry()) is False  # the same messages again: nothing written
    assert scope_observations(store, ScopeKey.individual("a1", "u1")) == ["Gene likes tea."]
    assert scope_observations(store, ScopeKey.collective("a1")) == ["Everyone likes tea."]
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 0


def test_an_ingest_that_fails_before_commit_leaves_no_message_claim_job_or_audit(
    store, monkeypatch
):
    """The messages, the counters, the formation's claim and job and the audit entry are one
    transaction: a failure just before its commit (after the job was created) takes
    everything back."""
    ingest(store, 44)

    def fail(point: str) -> None:
        if point == "action.before_commit":
            raise RuntimeError("the store went away")

    with monkeypatch.context() as patched:
        patched.setattr(action_tx, "fault_point", fail)
        with pytest.raises(RuntimeError):
            ingest(store, 1, start=44, act=True)
    buffer = store.sessions.get_buffer("a1", "s1")
    assert buffer["unformed_count"] == 44 and buffer["formation_job_id"] is None
    assert store.jobs.collection.count_documents({"agent_id": "a1"}) == 0
    assert store.sessions.messages.count_documents({"agent_id": "a1", "session_id": "s1"}) == 44
    assert audit_page(store=store, agent_id="a1").items == []

    done = ingest(store, 1, start=44, act=True)
    (entry,) = audit_page(store=store, agent_id="a1").items
    assert done.accepted == 1 and entry.summary["formation_job_id"] == done.formation_job.id
    assert store.sessions.get_buffer("a1", "s1")["formation_job_id"] is not None
