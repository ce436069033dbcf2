"""Forget user: nothing of theirs stays anywhere; the scopes they shared are rebuilt without them.

The fake model echoes its whole prompt as the consolidation text, so anything that
reaches a consolidation call ends up in the text: if the user's words are absent
after the rebuild, they were never sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
from streams.actions.jobs import do_propagation_run
from streams.context.assemble import context_assemble
from streams.jobs import job_get
from streams.memory.consolidation import consolidation_history
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import IncomingMessage, messages_ingest
from streams.memory.observations import observation_add, observation_list
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.people.privacy import REDACTED, forget_user_request, forget_user_run
from streams.people.user_audit import user_audit, user_export
from streams.search.index import search_observations
from streams.store import MemoryStore
from tests.fakes.openai_wire import DEFAULT_JSON_TEXT, faithful_memory
from tests.task_mode import run_job, settle

AGENT = "a1"
ROOMY = {"consolidation_max_words": 5000}  # echoed prompts grow past the default 500 words
SECRET = "zanzibar"  # only ever in what user u1 said (any case)


def echo(request: Any) -> str:
    """Every text the prompt holds reaches what the model answers: the consolidation's
    observations as a faithful memory (an echo of the prompt is refused, issue 39)."""
    if request.task == "consolidation":
        return faithful_memory(request)
    return DEFAULT_JSON_TEXT if request.wants_json else request.body["messages"][-1]["content"]


def consolidate(store: MemoryStore, scope_id: str) -> None:
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    run_job(store=store, job_id=job.id, work=lambda run: consolidation_run(store=store, run=run))
    settle(store)


def add(store: MemoryStore, scope_id: str, content: str, user: str, **kw: Any):
    scope = scope_get(store=store, scope_id=scope_id)
    return observation_add(
        store=store,
        scope=scope,
        content=content,
        related_user_ids=[user],
        source_session_id=f"s-{user}",
        source_message_ids=["m1", "m2"],
        **kw,
    )


def forget(store: MemoryStore, user_id: str = "u1") -> dict[str, Any]:
    job = forget_user_request(store=store, agent_id=AGENT, user_id=user_id, actor="api:test")
    run_job(store=store, job_id=job.id, work=lambda run: forget_user_run(store=store, run=run))
    settle(store)
    done = job_get(store=store, job_id=job.id)
    assert done.status == "succeeded", done.error
    return done.result


def every_memory_document(store: MemoryStore) -> str:
    """Every document of every memory collection, as one lower-cased text."""
    dumped: list[str] = []
    for name in store.db.list_collection_names():
        if not name.startswith("memory_"):
            continue
        for bounds in (
            {"$gte": ObjectId("0" * 24), "$lte": ObjectId("f" * 24)},
            {"$gte": "", "$lte": "\uffff"},
        ):
            docs = store.db[name].find({"_id": bounds}).limit(100_000)
            dumped += [json.dumps(d, default=str) for d in docs]
    return "\n".join(dumped).lower()


@pytest.fixture
def world(store: MemoryStore, fake_openai) -> dict[str, str]:
    """u1 and u2 of agent a1, with memories in every kind of scope."""
    fake_openai.set_responder(echo)
    individual, _ = scope_get_or_create(
        store=store,
        key=ScopeKey.individual(AGENT, "u1"),
        display_name="Gene",
        defaults={"groups": [{"id": "g1", "name": "Eden Team"}], **ROOMY},
    )
    other, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u2"), defaults=ROOMY
    )
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden Team", defaults=ROOMY
    )
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective(AGENT), defaults=ROOMY)
    shard, _ = scope_get_or_create(
        store=store, key=ScopeKey.collective(AGENT, "feedback"), defaults=ROOMY
    )

    # The group's v1 comes before anything of u1's: it stays as it is.
    add(store, group.id, "The team deploys on Fridays.", "u2")
    consolidate(store, group.id)

    # The individual scope: consolidated, a private note, and one propagated copy.
    add(store, individual.id, "Gene kiteboards in Zanzibar every spring.", "u1")
    add(store, individual.id, "Gene has a Zanzibar allergy.", "u1", private=True)
    add(store, other.id, "Ada prefers terse answers.", "u2")
    fake_openai.reply("Gene kiteboards in Zanzibar every spring.")
    consolidate(store, individual.id)
    [propagation] = [
        j
        for j in store.jobs.page(status=None, agent_id=AGENT, before=None, limit=20)
        if j.kind == "propagation" and j.scope_id == individual.id
    ]
    fake_openai.reply_json(
        {
            "observations": [
                {
                    "content": "Gene kiteboards in Zanzibar every spring.",
                    "scope": "group:Eden Team",
                },
                {"content": "Gene has a Zanzibar allergy.", "scope": "group:Eden Team"},
            ]
        }
    )
    run_job(
        store=store,
        job_id=propagation.id,
        work=lambda r: do_propagation_run(store=store, run=r),
    )
    consolidate(store, other.id)
    copies = scope_get(store=store, scope_id=group.id).pending_observation_ids
    assert len(copies) == 1, "the private note must not have propagated"

    # v2 absorbs the copy and u1's own group observation; v3 comes after them.
    add(store, group.id, "Gene wants Zanzibar photos in the standup.", "u1")
    consolidate(store, group.id)
    add(store, group.id, "Standups start at nine.", "u2")
    consolidate(store, group.id)

    # The collective scope: one version that absorbed u1's and u2's lessons together.
    add(store, collective.id, "Users from Zanzibar ask for offline maps.", "u1")
    add(store, collective.id, "Exports need a progress bar.", "u2")
    consolidate(store, collective.id)
    # A shard: u1's observation still pending, u2's consolidated.
    add(store, shard.id, "Ada finds exports slow.", "u2")
    consolidate(store, shard.id)
    add(store, shard.id, "Gene says the Zanzibar export crashed.", "u1")

    # Buffered, not yet formed messages of u1 (and of u2, which stay).
    for user, text in (("u1", "I leave for Zanzibar tomorrow."), ("u2", "Ship it on Friday.")):
        messages_ingest(
            store=store,
            agent_id=AGENT,
            session_id=f"live-{user}",
            user_id=user,
            user_name=None,
            groups=[{"id": "g1", "name": "Eden Team"}],
            messages=[IncomingMessage(id="m1", role="user", content=text)],
            settings=formation_settings(),
        )
    return {
        "individual": individual.id,
        "other": other.id,
        "group": group.id,
        "collective": collective.id,
        "shard": shard.id,
    }


def test_the_world_holds_the_users_content_before(store, world):
    assert SECRET in every_memory_document(store)
    audit = user_audit(store=store, agent_id=AGENT, user_id="u1")
    assert audit.individual is not None and audit.individual.id == world["individual"]
    assert audit.versions.items and audit.versions.items[0].version == 1
    related = {o.content for o in audit.related.items}
    assert "Gene wants Zanzibar photos in the standup." in related
    assert any(o.propagated_from for o in audit.related.items)
    assert {o.scope_id for o in audit.related.items} <= set(audit.scopes)
    exported = user_export(store=store, agent_id=AGENT, user_id="u1")
    assert len(exported["individual_scope"]["observations"]) == 2
    assert [o["private"] for o in exported["individual_scope"]["observations"]] == [False, True]
    assert len(exported["related_observations"]) == 4  # the copy, group, collective, shard


def test_forgetting_leaves_nothing_of_the_user(store, world, fake_openai):
    before_requests = len(fake_openai.chat_requests)
    receipt = forget(store)

    # Nothing of u1 in any document of any memory collection.
    assert SECRET not in every_memory_document(store)
    # ... and none of the read paths finds anything.
    hits = search_observations(
        store=store, agent_id=AGENT, query="Zanzibar kiteboards", user_id="u1", group_ids=["g1"]
    )
    assert hits == []
    context = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        groups=[("g1", "Eden Team")],
        message="What about Zanzibar?",
    )
    assert "kiteboard" not in context.xml.lower() and "allergy" not in context.xml.lower()
    exported = user_export(store=store, agent_id=AGENT, user_id="u1")
    assert exported["individual_scope"] is None and exported["related_observations"] == []
    audit = user_audit(store=store, agent_id=AGENT, user_id="u1")
    assert audit.individual is None and audit.related.items == []

    # The group was rebuilt without u1: v1 stands, v2 and v3 are redacted, v4 is new.
    group = scope_get(store=store, scope_id=world["group"])
    history = consolidation_history(store=store, scope=group).items
    assert [v.version for v in history] == [4, 3, 2, 1]
    assert [v.text for v in history[1:3]] == [REDACTED, REDACTED]
    assert history[0].trigger == "forget_user" and history[0].actor == "api:test"
    assert "fridays" in history[0].text.lower() and "nine" in history[0].text.lower()
    assert "fridays" in history[3].text.lower()
    assert group.consolidation == history[0].text
    assert {o.content for o in observation_list(store=store, scope=group).items} == {
        "The team deploys on Fridays.",
        "Standups start at nine.",
    }
    # The rebuild started from v1 and sent only the remaining observations.
    rebuild_prompts = [
        r.body["messages"][-1]["content"] for r in fake_openai.chat_requests[before_requests:]
    ]
    assert len(rebuild_prompts) == 2  # the group and the collective scope; not the shard
    assert all(SECRET not in p.lower() for p in rebuild_prompts)

    # The collective scope had one tainted version (v1): redacted, rebuilt from scratch.
    collective = scope_get(store=store, scope_id=world["collective"])
    assert collective.consolidation_version == 2
    assert "progress bar" in (collective.consolidation or "")
    # The shard only had u1's observation pending: it left the pending list, no rebuild.
    shard = scope_get(store=store, scope_id=world["shard"])
    assert shard.consolidation_version == 1 and shard.pending_observation_ids == []
    # u2 is untouched.
    other = scope_get(store=store, scope_id=world["other"])
    assert other.consolidation and "terse" in other.consolidation.lower()
    assert store.sessions.get_buffer(AGENT, "live-u2") is not None
    assert store.sessions.get_buffer(AGENT, "live-u1") is None

    assert receipt["deleted"] == {
        "memory_scopes": 1,
        "memory_observations": 2 + 4,  # individual; group (own + copy), collective, shard
        "memory_consolidations": 1,
        "memory_questions": 0,
        "memory_messages": 1,
        "memory_session_buffers": 1,
        "memory_chat_calls": 0,
        "memory_context_calls": 0,
        "memory_webhook_deliveries": 0,
        "memory_user_names": 1,
        "memory_corrections": 0,
        "memory_jobs": 0,
        "memory_prompt_experiments": 0,
    }
    assert receipt["redacted_versions"] == 3
    assert {s["scope_id"] for s in receipt["reconsolidated_scopes"]} == {
        world["group"],
        world["collective"],
    }
    assert receipt["actor"] == "api:test" and receipt["user_id"] == "u1"
    assert SECRET not in json.dumps(receipt).lower()


def test_counters_follow_the_deletion(store, world):
    agent_before = store.agents.get(AGENT)
    group_before = scope_get(store=store, scope_id=world["group"])
    forget(store)
    agent = store.agents.get(AGENT)
    assert agent.scope_count == agent_before.scope_count - 1
    assert agent.observation_count == agent_before.observation_count - 6
    assert agent.pending_count == agent_before.pending_count - 1  # the shard's pending one
    group = scope_get(store=store, scope_id=world["group"])
    assert group.observation_count == group_before.observation_count - 2


def test_forgetting_twice_and_forgetting_a_stranger(store, world):
    forget(store)
    again = forget(store)
    assert set(again["deleted"].values()) == {0}
    assert again["reconsolidated_scopes"] == []
    stranger = forget(store, "nobody")
    assert set(stranger["deleted"].values()) == {0}


def test_a_running_consolidation_makes_the_job_retry(store, world):
    from streams.core.documents import utcnow

    group_oid = ObjectId(world["group"])
    now = utcnow()
    assert store.scopes.acquire_lease(
        group_oid, owner="other-run", now=now, until=now.replace(year=now.year + 1)
    )
    job = forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="api:test")
    with pytest.raises(Exception, match="being consolidated"):
        run_job(store=store, job_id=job.id, work=lambda run: forget_user_run(store=store, run=run))
    assert job_get(store=store, job_id=job.id).status == "failed"
    # Nothing was deleted yet: the retry finds everything still to do.
    assert SECRET in every_memory_document(store)
    store.scopes.release_lease(group_oid, owner="other-run")
    store.jobs.requeue(ObjectId(job.id))
    run_job(store=store, job_id=job.id, work=lambda run: forget_user_run(store=store, run=run))
    assert SECRET not in every_memory_document(store)
