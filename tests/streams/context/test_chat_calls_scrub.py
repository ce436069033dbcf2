"""Removed text leaves the chat proxy's call records too, with the context log on or off.

A chat call keeps its own copy of the injected context (`memory_chat_calls.context`,
shown on the session and Users pages), also when the context log is off
(`MEMORY_CONTEXT_LOG_DAYS=0`). When the text it quoted is deleted, edited or forgotten
(another user's forget-user), or a rebuild redacts the consolidation versions that held
it, that copy loses the text as the log does. The world is
tests/streams/memory/test_derived_memory.py's: the fake model echoes its prompt as the
consolidation, so a consolidated secret is in the group's and collective's versions too.
"""

from __future__ import annotations

import pytest

from streams.actions.chat import do_chat_turn_finish
from streams.context.chat import (
    ChatMemory,
    ChatOutcome,
    ChatTurn,
    chat_calls_for_session,
    chat_prepare,
)
from streams.core.documents import Job
from streams.memory.observation_changes import observation_delete, observation_update
from streams.people.privacy import forget_user_request
from streams.store import MemoryStore
from tests.streams.memory.test_derived_memory import AGENT, act, add, drain, seed_secret, world
from tests.streams.memory.test_derived_memory import SECRET as SECRET_WORD

__all__ = ["world"]  # a fixture, imported for this module
QUESTION = "Do you remember where Gene kiteboards?"
PENDING = "Gene hides the spare key under the blue flowerpot."
EDEN = (("g1", "Eden Team"),)


def _chat(store: MemoryStore, user: str, message: str = QUESTION) -> str:
    """One proxied turn of `user` (in Eden Team), filed as the proxy files it; its context."""
    turn = _prepare(store, user, message)
    _finish(store, turn)
    assert turn.context is not None
    return turn.context


def _prepare(store: MemoryStore, user: str, message: str) -> ChatTurn:
    memory = ChatMemory(user_id=user, session_id=f"chat-{user}", groups=EDEN)
    turn = chat_prepare(
        store=store,
        agent_id=AGENT,
        memory=memory,
        messages=[{"role": "user", "content": message}],
    )
    assert turn.memory_status == "injected"
    return turn


def _finish(store: MemoryStore, turn: ChatTurn) -> None:
    outcome = ChatOutcome(
        outcome="upstream_error", stream=False, model="m", upstream_model="m", upstream_status=500
    )
    jobs: list[Job] = []  # not ingested (no ingest job); its catch-up job, run here
    do_chat_turn_finish(store=store, turn=turn, outcome=outcome, also=jobs)
    drain(store, jobs)


def _stored(store: MemoryStore, user: str) -> list[str]:
    calls = chat_calls_for_session(
        store=store, agent_id=AGENT, session_id=f"chat-{user}", before=None, limit=50
    )
    return [call["context"] or "" for call in calls]


@pytest.mark.parametrize("log_days", [0, 7])
@pytest.mark.parametrize("action", ["delete", "edit", "forget_user"])
@pytest.mark.parametrize("origin", ["individual", "group"])
def test_a_consolidated_text_leaves_every_chat_call_after_the_rebuild(
    store: MemoryStore, world: dict[str, str], origin: str, action: str, log_days: int
) -> None:
    """The secret is in consolidation versions only (the rebuild redacts them); u2 saw it
    through the group's section, u1 through their own too."""
    store.context_log_days = log_days
    secret = seed_secret(store, world, origin)
    shown = {user: _chat(store, user) for user in ("u1", "u2")}
    assert SECRET_WORD in shown["u2"].lower()  # the group's section quoted it

    act(store, action, secret, world)

    if action == "forget_user":
        assert _stored(store, "u1") == []  # the forgotten user's calls are deleted
    for user in ("u1", "u2"):
        for context in _stored(store, user):
            assert SECRET_WORD not in context.lower(), (user, context)
    (other,) = _stored(store, "u2")  # scrubbed, not deleted: the rest is still there
    assert "<MemoryContext>" in other and "[removed]" in other


@pytest.mark.parametrize("log_days", [0, 7])
@pytest.mark.parametrize("action", ["delete", "edit", "forget_user"])
@pytest.mark.parametrize("origin", ["individual", "group"])
def test_a_removed_pending_observation_leaves_the_chat_calls_that_quoted_it(
    store: MemoryStore, world: dict[str, str], origin: str, action: str, log_days: int
) -> None:
    """A recent observation: u1's own scope (u1's call quoted it) or the group's (u1's
    and u2's did); the forget-user is u1's, the author."""
    store.context_log_days = log_days
    pending = add(store, world[origin], PENDING, "u1")
    readers = ["u1"] if origin == "individual" else ["u1", "u2"]
    for user in readers:
        assert "blue flowerpot" in _chat(store, user, message="hello")

    jobs: list[Job] = []
    if action == "delete":
        observation_delete(store=store, observation=pending, follow_ups=jobs)
    elif action == "edit":
        observation_update(
            store=store, observation=pending, content="Gene keeps a spare key.", follow_ups=jobs
        )
    else:
        jobs.append(forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="t"))
    drain(store, jobs)

    if action == "forget_user":
        assert _stored(store, "u1") == []
    for user in readers:
        for context in _stored(store, user):
            assert "blue flowerpot" not in context, (user, context)
    kept = [c for user in readers for c in _stored(store, user)]
    assert len(kept) == len(readers) - (action == "forget_user")  # scrubbed, not deleted
    assert all("[removed]" in c for c in kept)
    docs = store.chat_calls.collection.find({"agent_id": AGENT, "user_id": "u2"}).limit(50)
    assert all(pending.id not in d.get("quoted_observation_ids", []) for d in docs)


def test_a_chat_call_lists_what_its_context_quoted(
    store: MemoryStore, world: dict[str, str]
) -> None:
    store.context_log_days = 0
    pending = add(store, world["group"], PENDING, "u1")
    _chat(store, "u2", message="hello")
    (doc,) = store.chat_calls.collection.find({"agent_id": AGENT, "user_id": "u2"}).limit(5)
    assert doc["context_call_id"] is None  # the log is off: this copy is the only one
    assert pending.id in doc["quoted_observation_ids"]
    assert f"{world['group']}:1" in doc["quoted_versions"]


@pytest.mark.parametrize("kind", ["pending", "consolidated"])
def test_a_removal_made_while_the_upstream_answers_leaves_the_late_record_too(
    store: MemoryStore, world: dict[str, str], kind: str
) -> None:
    """The record is filed after the answer; a delete (and, for a consolidated text, the
    rebuild redacting its versions) made between the context and the filing has scrubbed
    only the records written before it. Filing checks what it quoted."""
    store.context_log_days = 0
    if kind == "pending":
        removed = add(store, world["group"], PENDING, "u1")
        marker = "blue flowerpot"
        turn = _prepare(store, "u2", "hello")
    else:
        removed = seed_secret(store, world, "group")
        marker = SECRET_WORD
        turn = _prepare(store, "u2", QUESTION)
    assert turn.context is not None and marker in turn.context.lower()

    # While the upstream answers: the delete (and the rebuild it queues) runs to the end.
    if kind == "pending":
        jobs: list[Job] = []
        observation_delete(store=store, observation=removed, follow_ups=jobs)
        drain(store, jobs)
    else:
        act(store, "delete", removed, world)
    _finish(store, turn)

    (context,) = _stored(store, "u2")
    assert marker not in context.lower() and "[removed]" in context
