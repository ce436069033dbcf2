"""Removed text leaves the context log: a logged call of any user, whose XML quoted an
observation or a consolidation version that was since deleted, edited, made private or
forgotten, holds that text no more (the log view), and replay does not bring it back.

The world of tests/streams/memory/test_derived_memory.py: the fake model echoes its prompt as
the consolidation, so the observation's text is in every version that absorbed it, in
the group's and the collective's too (propagated copies), which u2 sees.
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.context.log import context_calls_page
from streams.context.replay import context_replay
from streams.core.documents import Job, utcnow
from streams.jobs import job_create
from streams.memory.bulk_job import bulk_apply_batch
from streams.memory.observation_changes import observation_delete, observation_update
from streams.store import MemoryStore, write_behind
from streams.store.bulk import BulkRepository
from tests.streams.memory.test_derived_memory import (
    AGENT,
    ORIGINS,
    act,
    add,
    drain,
    seed_secret,
    world,
)

__all__ = ["world"]  # a fixture, imported for this module
SECRET = "zanzibar"
QUESTION = "Do you remember where Gene kiteboards?"
PENDING = "Gene hides the spare key under the blue flowerpot."


@pytest.fixture
def logged(store: MemoryStore) -> MemoryStore:
    store.context_log_days = 7
    return store


def _call(store: MemoryStore, user: str, message: str = QUESTION) -> str:
    result = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id=user,
        groups=[("g1", "Eden Team")],
        message=message,
        session_id=f"s-{user}",
    )
    assert result.call_id is not None
    return result.xml


def _logged_xml(store: MemoryStore, user: str) -> list[str]:
    write_behind.flush()
    page = context_calls_page(store=store, agent_id=AGENT, user_id=user, limit=50)
    return [call["xml"] for call in page.items]


@pytest.mark.parametrize("action", ["delete", "edit", "private", "forget_user"])
@pytest.mark.parametrize("origin", ORIGINS)
def test_a_removed_consolidated_text_leaves_every_logged_call(
    logged: MemoryStore, world: dict[str, str], origin: str, action: str
) -> None:
    secret = seed_secret(logged, world, origin)
    readers = ["u1", "u2"]
    shown = {user: _call(logged, user) for user in readers}
    assert any(SECRET in xml.lower() for xml in shown.values())  # it was quoted, then
    then = utcnow()

    act(logged, action, secret, world)

    for user in readers:
        if action == "private" and user == "u1" and origin == "individual":
            continue  # their own memory still shows a private observation of theirs
        for xml in _logged_xml(logged, user):
            assert SECRET not in xml.lower(), (user, xml)
    # The other user's log keeps the rest of what they were given.
    other = _logged_xml(logged, "u2")
    assert other and all("<MemoryContext>" in xml for xml in other)
    replayed = context_replay(
        store=logged,
        agent_id=AGENT,
        user_id="u2",
        groups=[("g1", "Eden Team")],
        message=QUESTION,
        as_of=then,
    ).xml
    assert SECRET not in replayed.lower()


@pytest.mark.parametrize("action", ["delete", "edit", "private", "bulk_delete", "forget_user"])
@pytest.mark.parametrize("origin", ["group", "collective", "shard"])
def test_a_removed_pending_observation_leaves_other_users_logged_calls(
    logged: MemoryStore, world: dict[str, str], origin: str, action: str
) -> None:
    pending = add(logged, world[origin], PENDING, "u1")
    xml = _call(logged, "u2", message="hello")
    assert "blue flowerpot" in xml  # a recent observation of a shared section
    before = len(_logged_xml(logged, "u2"))

    jobs: list[Job] = []
    if action == "edit":
        observation_update(
            store=logged, observation=pending, content="Gene keeps a spare key.", follow_ups=jobs
        )
    elif action == "private":
        observation_update(store=logged, observation=pending, private=True, follow_ups=jobs)
    elif action == "delete":
        observation_delete(store=logged, observation=pending, follow_ups=jobs)
    elif action == "bulk_delete":
        _bulk_delete(logged, world[origin], pending.id)
    else:
        act(logged, action, pending, world)
    drain(logged, jobs)

    after = _logged_xml(logged, "u2")
    assert len(after) == before  # scrubbed, not deleted
    assert all("blue flowerpot" not in x for x in after)
    assert any("[removed]" in x for x in after)


def test_only_the_records_that_quoted_it_are_rewritten(
    logged: MemoryStore, world: dict[str, str]
) -> None:
    pending = add(logged, world["group"], PENDING, "u1")
    quoted = _call(logged, "u2", message="hello")
    assert "blue flowerpot" in quoted
    write_behind.flush()
    untouched_before = _logged_xml(logged, "u2")
    other = add(logged, world["group"], "Standups move to ten.", "u2")
    jobs: list[Job] = []  # the deletes' follow-ups scrub the log
    observation_delete(store=logged, observation=other, follow_ups=jobs)
    drain(logged, jobs)
    assert _logged_xml(logged, "u2") == untouched_before  # it never quoted that one
    jobs = []
    observation_delete(store=logged, observation=pending, follow_ups=jobs)
    drain(logged, jobs)
    (scrubbed,) = _logged_xml(logged, "u2")
    assert "blue flowerpot" not in scrubbed and "[removed]" in scrubbed
    docs = list(
        logged.context_calls.collection.find({"agent_id": AGENT, "user_id": "u2"}).limit(50)
    )
    assert all(pending.id not in d.get("quoted_observation_ids", []) for d in docs)


def _bulk_delete(store: MemoryStore, scope_id: str, observation_id: str) -> None:
    """A bulk delete's batch, as the `bulk` job applies it."""
    observation = store.observations.get(ObjectId(observation_id))
    assert observation is not None
    job = job_create(store=store, kind="bulk", agent_id=AGENT, trigger="test", payload={})
    bulk_apply_batch(
        store=store,
        repo=BulkRepository(store.db),
        job_oid=ObjectId(job.id),
        action="delete",
        entries=[[scope_id, observation.seq, observation_id]],
        done_before=0,
        target_id=None,
    )
