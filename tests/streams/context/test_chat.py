"""The chat proxy's domain: where the context goes, what a failing store does, what is
recorded and what is ingested after the answer (`streams/context/chat.py`, real embedded store)."""

from __future__ import annotations

from typing import Any

import pytest

from streams.actions.chat_ingest import chat_ingest_run
from streams.context.assemble import context_assemble
from streams.context.chat import (
    ChatMemory,
    ChatOutcome,
    chat_calls_for_session,
    chat_calls_for_user,
    chat_prepare,
    chat_turn_finish,
    chat_turn_messages,
    last_user_message,
    memory_message,
    turn_message_id,
)
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.consolidation import consolidation_edit
from streams.memory.formation import FormationSettings
from streams.memory.scopes import scope_get
from streams.people.privacy import forget_user_run
from streams.store import MemoryStore, StoreError
from tests.factories import ScopeFactory

AGENT = "agent-1"
GENE = ChatMemory(user_id="u1", session_id="s1", user_name="Gene", groups=(("g1", "Eden"),))
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "hi"},
    {"role": "user", "content": [{"type": "text", "text": "what about Rust?"}]},
]


@pytest.fixture
def remembered(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    fresh = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store, scope=fresh, text="Gene likes Rust.", expected_version=0, actor="op"
    )


def _outcome(kind: str = "answered", answer: str = "Rust it is.") -> ChatOutcome:
    return ChatOutcome(
        outcome=kind,  # type: ignore[arg-type]
        stream=False,
        model="m",
        upstream_model="m",
        upstream_status=200,
        answer=answer,
    )


def test_the_context_is_the_context_services_placed_right_before_the_last_user_message(
    store: MemoryStore, remembered: None
):
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    expected = context_assemble(
        store=store, agent_id=AGENT, user_id="u1", user_name="Gene", groups=GENE.groups,
        message="what about Rust?",
    )  # fmt: skip
    assert turn.memory_status == "injected"
    assert turn.messages[:3] == MESSAGES[:3] and turn.messages[4] == MESSAGES[3]
    assert turn.messages[3] == memory_message(expected.xml)
    assert turn.messages[3]["role"] == "user"  # quoted data, never the operator's authority
    assert turn.context == expected.xml and turn.context_tokens == -(-len(expected.xml) // 4)
    assert turn.user_text == "what about Rust?"
    assert MESSAGES[3]["role"] == "user" and len(MESSAGES) == 4  # the caller's list untouched


def test_nothing_remembered_injects_nothing(store: MemoryStore):
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    assert turn.memory_status == "empty" and turn.messages == MESSAGES and turn.context is None


def test_no_user_message_with_text_gets_no_context_and_no_ingest(store: MemoryStore):
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "  "}]
    assert last_user_message(messages) is None
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=messages)
    assert turn.memory_status == "empty" and turn.user_text is None
    assert chat_turn_finish(store=store, turn=turn, outcome=_outcome()) is None


def test_a_failing_store_skips_memory_and_keeps_the_messages(store: MemoryStore, monkeypatch):
    def down(**_: Any) -> None:
        raise StoreError("no servers found")

    monkeypatch.setattr("streams.context.chat.context_assemble", down)
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    assert turn.memory_status == "skipped" and turn.messages == MESSAGES
    assert turn.user_text == "what about Rust?"  # the turn is still learnt from


def test_the_user_message_id_is_stable_per_turn_so_a_retry_is_a_duplicate():
    first = turn_message_id(session_id="s1", index=3, text="hi")
    assert first == turn_message_id(session_id="s1", index=3, text="hi")
    assert first != turn_message_id(session_id="s1", index=5, text="hi")
    assert first != turn_message_id(session_id="s2", index=3, text="hi")
    assert len(first) <= 128


@pytest.mark.parametrize(
    ("kind", "roles"),
    [
        ("answered", ["user", "assistant"]),
        ("client_disconnected", ["user"]),
        ("upstream_error", None),
        ("upstream_unreachable", None),
    ],
)
def test_what_a_finished_turn_ingests_and_records(
    store: MemoryStore, remembered: None, kind: str, roles: list[str] | None
):
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    job = chat_turn_finish(store=store, turn=turn, outcome=_outcome(kind))
    if roles is None:
        assert job is None
    else:
        assert job is not None and job.kind == "chat_ingest" and job.session_id == "s1"
        assert [m.role for m in chat_turn_messages(job.payload)] == roles
    (call,) = chat_calls_for_session(
        store=store, agent_id=AGENT, session_id="s1", before=None, limit=10
    )
    assert call["id"] == turn.call_id and call["outcome"] == kind
    assert call["memory"] == "injected" and call["context"] == turn.context
    assert call["ingest_job_id"] == (job.id if job else None)
    assert chat_calls_for_user(store=store, agent_id=AGENT, user_id="u1", limit=5)[0]["id"] == (
        turn.call_id
    )


def test_the_ingest_job_buffers_the_turn_once_and_schedules_a_due_formation(store: MemoryStore):
    settings = FormationSettings(min_messages=1, max_messages=2)
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    job = chat_turn_finish(store=store, turn=turn, outcome=_outcome())
    assert job is not None

    def work(run: Any) -> None:
        chat_ingest_run(store=store, run=run, settings=settings)

    run = job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert run is not None
    assert run.result["accepted"] == 2 and run.result["duplicates"] == 0
    assert [j.kind for j in run.follow_ups] == ["formation"]
    buffer = store.sessions.get_buffer(AGENT, "s1")
    assert buffer is not None and buffer["user_id"] == "u1"
    assert buffer["groups"] == [{"id": "g1", "name": "Eden"}]


def test_session_pages_go_back_in_time(store: MemoryStore):
    ids = []
    for _ in range(3):
        turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
        chat_turn_finish(store=store, turn=turn, outcome=_outcome())
        ids.append(turn.call_id)
    page = chat_calls_for_session(
        store=store, agent_id=AGENT, session_id="s1", before=None, limit=2
    )
    assert [c["id"] for c in page] == ids[::-1][:2]
    rest = chat_calls_for_session(
        store=store, agent_id=AGENT, session_id="s1", before=page[-1]["id"], limit=2
    )
    assert [c["id"] for c in rest] == [ids[0]]


def test_a_finished_ingest_keeps_no_copy_of_the_text(store: MemoryStore):
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=MESSAGES)
    job = chat_turn_finish(store=store, turn=turn, outcome=_outcome())
    assert job is not None and len(job.payload["messages"]) == 2

    def work(run: Any) -> None:
        chat_ingest_run(store=store, run=run, settings=FormationSettings())

    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    stored = store.jobs.get(job.id_oid)
    assert stored is not None and stored.status == "succeeded"
    assert "messages" not in stored.payload and stored.payload["user_id"] == "u1"


def test_forgetting_a_user_deletes_their_chat_calls(store: MemoryStore):
    for memory in (GENE, ChatMemory(user_id="u2", session_id="s1")):
        turn = chat_prepare(store=store, agent_id=AGENT, memory=memory, messages=MESSAGES)
        chat_turn_finish(store=store, turn=turn, outcome=_outcome("upstream_error"))
    job = job_create(store=store, kind="forget_user", agent_id=AGENT, payload={"user_id": "u1"})
    run = job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda r: forget_user_run(store=store, run=r),
    )
    assert run is not None and run.result["deleted"]["memory_chat_calls"] == 1
    assert chat_calls_for_user(store=store, agent_id=AGENT, user_id="u1", limit=5) == []
    assert len(chat_calls_for_user(store=store, agent_id=AGENT, user_id="u2", limit=5)) == 1
