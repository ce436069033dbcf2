"""The rules around a scope's consolidation: threshold checks, pending counts after a
delete, honest restore, word limits, pause, and the settings new scopes start with."""

from __future__ import annotations

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
from streams.context.assemble import context_assemble
from streams.core.documents import Job
from streams.core.exceptions import Conflict, InvalidInput
from streams.memory.consolidation import consolidation_edit, consolidation_restore, restore_returns
from streams.memory.consolidation_jobs import consolidation_due, consolidation_request
from streams.memory.consolidation_runs import consolidation_run, within_words
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_add
from streams.memory.rebuild import rebuild_run
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create, scope_update
from streams.memory.source_change import source_change_run
from streams.search.index import search_observations
from streams.store import MemoryStore
from tests.task_mode import run_job

AGENT = "a1"


def group(store: MemoryStore, **defaults) -> str:
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"), defaults=defaults)
    return scope.id


def add(store: MemoryStore, scope_id: str, content: str, jobs: list[Job] | None = None):
    scope = scope_get(store=store, scope_id=scope_id)
    return observation_add(store=store, scope=scope, content=content, follow_ups=jobs)


def consolidate(store: MemoryStore, scope_id: str):
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    return run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))


# -- threshold ---------------------------------------------------------------------------


def test_a_manual_add_that_reaches_the_threshold_queues_a_consolidation(store):
    scope_id = group(store, consolidation_threshold=3)
    jobs: list[Job] = []
    add(store, scope_id, "one", jobs)
    add(store, scope_id, "two", jobs)
    assert jobs == []
    add(store, scope_id, "three", jobs)
    assert [(j.kind, j.scope_id, j.trigger) for j in jobs] == [
        ("consolidation", scope_id, "threshold")
    ]
    add(store, scope_id, "four", jobs)
    assert len(jobs) == 1, "one queued run per scope, not one per observation"


def test_lowering_the_threshold_below_the_pending_count_queues_a_consolidation(store):
    scope_id = group(store, consolidation_threshold=10)
    for i in range(5):
        add(store, scope_id, f"note {i}")
    jobs: list[Job] = []
    scope = scope_get(store=store, scope_id=scope_id)
    scope_update(
        store=store, scope=scope, changes={"consolidation_threshold": 5}, actor="t", follow_ups=jobs
    )
    assert [j.kind for j in jobs] == ["consolidation"]


# -- a deleted pending observation leaves every count ----------------------------------


def test_a_deleted_pending_observation_leaves_pending_counts_and_the_run(store, fake_openai):
    scope_id = group(store)
    kept = add(store, scope_id, "The team ships on Fridays.")
    gone = add(store, scope_id, "A typo nobody meant.")
    assert store.agents.get(AGENT).pending_count == 2
    observation_delete(store=store, observation=gone)
    scope = scope_get(store=store, scope_id=scope_id)
    assert scope.pending_observation_ids == [kept.id] and scope.pending_count == 1
    assert store.agents.get(AGENT).pending_count == 1
    fake_openai.reply("The team ships on Fridays.")
    run = consolidate(store, scope_id)
    assert run.result["absorbed"] == 1
    assert "typo" not in fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert store.agents.get(AGENT).pending_count == 0


# -- restore -------------------------------------------------------------------------------


def test_restore_puts_what_later_versions_absorbed_back_to_pending(store, fake_openai):
    scope_id = group(store)
    add(store, scope_id, "First fact.")
    fake_openai.reply("v1 text: First fact.")
    consolidate(store, scope_id)
    later = [add(store, scope_id, f"Later fact {i}.") for i in range(3)]
    fake_openai.reply("v2 text: Later facts 0, 1 and 2.")
    consolidate(store, scope_id)
    scope = scope_get(store=store, scope_id=scope_id)
    assert sorted(restore_returns(store=store, scope=scope, version=1)) == sorted(
        o.id for o in later
    )
    jobs: list[Job] = []
    entry = consolidation_restore(store=store, scope=scope, version=1, actor="t", follow_ups=jobs)
    scope = scope_get(store=store, scope_id=scope_id)
    assert (entry.version, scope.consolidation) == (3, "v1 text: First fact.")
    assert sorted(scope.pending_observation_ids) == sorted(o.id for o in later)
    assert all(
        not o.consolidated for o in store.observations.get_many([ObjectId(o.id) for o in later])
    )
    assert store.agents.get(AGENT).pending_count == 3
    assert jobs == []  # 3 pending is below the default threshold of 10


def test_deleting_what_a_restore_put_back_to_pending_rebuilds_the_history(store, fake_openai):
    scope_id = group(store)
    add(store, scope_id, "First fact.")
    fake_openai.reply("v1 text: First fact.")
    consolidate(store, scope_id)
    secret = add(store, scope_id, "Gene kiteboards in Zanzibar.")
    fake_openai.reply("v2 text: Gene kiteboards in Zanzibar.")
    consolidate(store, scope_id)
    scope = scope_get(store=store, scope_id=scope_id)
    consolidation_restore(store=store, scope=scope, version=1, actor="t")
    jobs: list[Job] = []
    observation_delete(
        store=store, observation=store.observations.get(ObjectId(secret.id)), follow_ups=jobs
    )
    # The delete's follow-up is its `source_change` job (the outbox); it sends the rebuild.
    assert [j.kind for j in jobs] == ["source_change"]
    rebuilds = jobs[0].payload["rebuild_job_ids"]
    run_job(store=store, job_id=jobs[0].id, work=lambda r: source_change_run(store=store, run=r))
    assert len(rebuilds) == 1
    calls = len(fake_openai.chat_requests)
    run_job(store=store, job_id=rebuilds[0], work=lambda r: rebuild_run(store=store, run=r))
    scope = scope_get(store=store, scope_id=scope_id)
    # v1 plus nothing else left to fold: v1's text again as v4, without a model call.
    assert (scope.consolidation_version, scope.consolidation) == (4, "v1 text: First fact.")
    assert not scope.needs_rebuild and len(fake_openai.chat_requests) == calls
    assert "Zanzibar" not in store.consolidations.get(ObjectId(scope_id), 2).text
    assert scope.pending_observation_ids == []


# -- word limits -----------------------------------------------------------------------------


def test_a_hand_edit_must_not_be_empty_nor_over_the_word_limit(store):
    scope_id = group(store, consolidation_max_words=50)
    scope = scope_get(store=store, scope_id=scope_id)
    with pytest.raises(InvalidInput, match="must not be empty"):
        consolidation_edit(store=store, scope=scope, text="   ", expected_version=0, actor="t")
    with pytest.raises(InvalidInput, match="has 51 words; this scope allows 50") as refused:
        consolidation_edit(
            store=store, scope=scope, text="word " * 51, expected_version=0, actor="t"
        )
    assert refused.value.details[0]["words"] == 51
    entry = consolidation_edit(
        store=store, scope=scope, text="word " * 50, expected_version=0, actor="t"
    )
    assert entry.version == 1


def test_a_model_answer_over_the_limit_is_retried_once_then_cut_at_a_sentence(store, fake_openai):
    scope_id = group(store, consolidation_max_words=50)
    add(store, scope_id, "This sentence has six words.")
    long = "This sentence has exactly six words. " * 10  # 60 words
    fake_openai.reply(long).reply(long)
    run = consolidate(store, scope_id)
    prompts = [r.body["messages"][-1]["content"] for r in fake_openai.chat_requests]
    assert len(prompts) == 2
    assert "Your previous answer had 60 words; the limit is 50." in prompts[1]
    scope = scope_get(store=store, scope_id=scope_id)
    assert scope.consolidation == ("This sentence has exactly six words. " * 8).strip()
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version.warning == "the model answered 60 words twice (limit 50); stored cut to 48 words"
    assert run.result["version"] == 1


def test_a_model_answer_that_fits_on_the_retry_is_stored_without_warning(store, fake_openai):
    scope_id = group(store, consolidation_max_words=50)
    add(store, scope_id, "Short and fine.")
    fake_openai.reply("word " * 60).reply("Short and fine.")
    consolidate(store, scope_id)
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert (version.text, version.warning) == ("Short and fine.", None)


def test_within_words_cuts_at_the_limit_when_no_sentence_ends_in_time():
    assert within_words("one two three", 5) == ("one two three", None)
    text, warning = within_words("a b c d e f g", 4)
    assert text == "a b c d" and warning is not None


# -- pause -----------------------------------------------------------------------------------


def test_a_paused_scope_is_not_routed_to_consolidated_searched_nor_in_the_context(
    store, fake_openai
):
    individual, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    group_id = group(store, consolidation_threshold=1)
    add(store, group_id, "The Eden team deploys on Fridays.")
    fake_openai.reply("The Eden team deploys on Fridays.")
    consolidate(store, group_id)
    scope = scope_get(store=store, scope_id=group_id)
    paused = scope_update(store=store, scope=scope, changes={"is_active": False}, actor="t")
    assert paused.is_active is False
    jobs: list[Job] = []
    add(store, group_id, "Added by hand while paused.", jobs)
    assert jobs == [], "a paused scope is not consolidated, even at its threshold"

    assert consolidation_due(store=store, scope_id=group_id, trigger="threshold") is None
    with pytest.raises(Conflict, match="paused"):
        consolidation_request(
            store=store, scope=scope_get(store=store, scope_id=group_id), trigger="m", actor="t"
        )
    context = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", groups=[("g1", "Eden")], message="Fridays?"
    )
    assert "fridays" not in context.xml.lower()
    hits = search_observations(
        store=store, agent_id=AGENT, query="Fridays deploys", user_id="u1", group_ids=["g1"]
    )
    assert hits == []

    # Extraction routes an item to the paused group: dropped and counted.
    result = messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id="s1",
        user_id="u1",
        user_name=None,
        groups=[{"id": "g1", "name": "Eden"}],
        messages=[IncomingMessage(id="m1", role="user", content="We deploy on Fridays.")],
        settings=formation_settings(),
    )
    job = result.formation_job or formation_request(
        store=store, agent_id=AGENT, session_id="s1", trigger="end"
    )
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Gene deploys too.", "scope": "group:Eden"},
                {"content": "Gene likes Fridays.", "scope": "individual"},
            ]
        }
    )
    run = run_job(
        store=store,
        job_id=job.id,
        work=lambda r: formation_run(store=store, run=r, settings=formation_settings()),
    )
    assert run.result["dropped_paused"] == 1 and run.result["observations"] == 1
    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "- Eden (paused: record nothing for it)" in prompt  # the model is told
    assert scope_get(store=store, scope_id=group_id).observation_count == 2
    assert scope_get(store=store, scope_id=individual.id).observation_count == 1

    # Resumed: everything is back, and the threshold is checked at once.
    resumed = scope_update(
        store=store, scope=paused, changes={"is_active": True}, actor="t", follow_ups=jobs
    )
    assert resumed.pending_count == 1 and [j.kind for j in jobs] == ["consolidation"]
    context = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", groups=[("g1", "Eden")], message="Fridays?"
    )
    assert "fridays" in context.xml.lower()


# -- settings ----------------------------------------------------------------------------------


def test_the_extraction_call_is_told_which_speakers_memory_is_paused(store, fake_openai):
    bob, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "bob"))
    scope_update(store=store, scope=bob, changes={"is_active": False}, actor="t", follow_ups=[])
    messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id="s-pair",
        user_id="alice",
        user_name="Alice",
        groups=[],
        messages=[
            IncomingMessage(id="m1", role="user", content="I sail.", user_id="alice"),
            IncomingMessage(id="m2", role="user", content="I row.", user_id="bob"),
        ],
        settings=formation_settings(),
    )
    job = formation_request(store=store, agent_id=AGENT, session_id="s-pair", trigger="end")
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Alice sails.", "scope": "individual:alice"},
                {"content": "Bob rows.", "scope": "individual:bob"},
            ]
        }
    )
    run = run_job(
        store=store,
        job_id=job.id,
        work=lambda r: formation_run(store=store, run=r, settings=formation_settings()),
    )
    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "Paused memory (record nothing about them): bob" in prompt
    assert "alice" not in prompt.split("Paused memory", 1)[1].splitlines()[0]
    assert run.result["dropped_paused"] == 1 and run.result["observations"] == 1


def test_new_scopes_start_with_the_configured_threshold_and_word_limit(store):
    configured = MemoryStore(
        store.client,
        store.db.name,
        scope_defaults={"consolidation_threshold": 4, "consolidation_max_words": 120},
    )
    scope, _ = scope_get_or_create(store=configured, key=ScopeKey.collective(AGENT))
    assert (scope.consolidation_threshold, scope.consolidation_max_words) == (4, 120)
    explicit, _ = scope_get_or_create(
        store=configured, key=ScopeKey.group(AGENT, "g9"), defaults={"consolidation_threshold": 7}
    )
    assert explicit.consolidation_threshold == 7
