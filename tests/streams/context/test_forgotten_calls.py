"""A chat call and a context call made for a user after they were forgotten (issue 37, 3):
the tombstone covers them, so their records keep ids and times only: no message, no
answer, no context XML, no user name or id, and no ingest job carrying the words."""

from __future__ import annotations

from typing import Any

from streams.context.assemble import context_assemble
from streams.context.chat import ChatMemory, ChatOutcome, chat_prepare, chat_turn_finish
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.people.privacy import forget_user_run
from streams.store import MemoryStore, write_behind
from tests.factories import ScopeFactory

AGENT = "agent-1"
SAID = "my badge number is zq-badge-771 and I live on Elm Street"
GENE = ChatMemory(user_id="u-gene", session_id="s1", user_name="Gene Example", groups=())


def _forget(store: MemoryStore, user_id: str) -> None:
    job = job_create(store=store, kind="forget_user", agent_id=AGENT, payload={"user_id": user_id})
    work = lambda r: forget_user_run(store=store, run=r)  # noqa: E731
    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert store.tombstones.covered(agent_id=AGENT, user_ids=[user_id]) == {user_id}


def _strings(doc: dict[str, Any]) -> str:
    return repr(doc)


def test_a_chat_call_after_forget_keeps_ids_and_times_only(store: MemoryStore):
    ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    _forget(store, "u-gene")
    messages = [{"role": "user", "content": SAID}]
    turn = chat_prepare(store=store, agent_id=AGENT, memory=GENE, messages=messages)
    outcome = ChatOutcome(
        outcome="answered", stream=False, model="m", upstream_model="m",
        upstream_status=200, answer="Noted, Elm Street and zq-badge-771.",
    )  # fmt: skip
    job = chat_turn_finish(store=store, turn=turn, outcome=outcome)
    assert job is None  # nothing to ingest: the tombstone would refuse it anyway
    write_behind.flush()
    [call] = list(store.db["memory_chat_calls"].find({"agent_id": AGENT}).limit(5))
    text = _strings(call)
    for word in ("zq-badge-771", "Elm Street", "Gene Example", "u-gene"):
        assert word not in text, (word, call)
    assert call["created_at"] and call["finished_at"] and call["outcome"] == "answered"
    assert call["forgotten"] is True
    jobs = list(store.db["memory_jobs"].find({"agent_id": AGENT, "kind": "chat_ingest"}).limit(5))
    assert jobs == []


def test_a_context_call_after_forget_keeps_ids_and_times_only(store: MemoryStore):
    store.context_log_days = 7
    ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    _forget(store, "u-gene")
    context_assemble(store=store, agent_id=AGENT, user_id="u-gene", user_name="Gene Example",
                     groups=[], message=SAID)  # fmt: skip
    write_behind.flush()
    [call] = list(store.db["memory_context_calls"].find({"agent_id": AGENT}).limit(5))
    text = _strings(call)
    for word in ("zq-badge-771", "Elm Street", "Gene Example", "u-gene"):
        assert word not in text, (word, call)
    assert call["created_at"] and call["forgotten"] is True


def test_a_context_call_of_a_user_not_forgotten_keeps_its_message(store: MemoryStore):
    store.context_log_days = 7
    ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-ada", display_name="Ada")
    context_assemble(store=store, agent_id=AGENT, user_id="u-ada", user_name="Ada",
                     groups=[], message=SAID)  # fmt: skip
    write_behind.flush()
    [call] = list(store.db["memory_context_calls"].find({"agent_id": AGENT}).limit(5))
    assert "zq-badge-771" in call["message"] and call["user_id"] == "u-ada"
