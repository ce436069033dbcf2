"""Explicit remember through the chat proxy (issue 42 item 4): the answer says it in a
header and the call record, and the filed turn forms at once, below the minimum."""

from __future__ import annotations

from typing import Any

import openai
from bson import ObjectId

from streams.store import MemoryStore
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, client, upstream
from tests.eventually import eventually
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures, imported for this module
SCRUM = "Please remember that my scrum meeting is on 10 September."


def _call(store: MemoryStore, session_id: str) -> dict[str, Any]:
    calls = eventually(
        lambda: store.chat_calls.for_session(
            agent_id=AGENT, session_id=session_id, before=None, limit=5
        ),
        until=lambda c: len(c) == 1 and c[0].get("ingest_job_id"),
    )
    return calls[0]


def _job(store: MemoryStore, job_id: str) -> Any:
    return eventually(
        lambda: store.jobs.get(ObjectId(job_id)),
        until=lambda j: j is not None and j.status in ("succeeded", "failed"),
    )


def test_a_request_to_remember_is_said_in_the_answer_and_formed_at_once(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    upstream.reply("Noted: your scrum meeting is on 10 September.")
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=[{"role": "user", "content": SCRUM}], metadata=MEMORY
    )
    assert raw.headers["X-Memory-Remembered"] == "queued"
    call = _call(store, MEMORY["session_id"])
    assert call["memory_request"] == {"kind": "remember", "topic": None}
    ingest = _job(store, call["ingest_job_id"])
    assert ingest.status == "succeeded", ingest
    formation_id = ingest.result["formation_job_id"]
    assert formation_id is not None  # two messages, below the minimum of four
    formation = _job(store, formation_id)
    assert (formation.trigger, formation.status) == ("remember", "succeeded")


def test_an_ordinary_turn_has_no_remember_header(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore
):
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt",
        messages=[{"role": "user", "content": "Do you remember my birthday?"}],
        metadata={**MEMORY, "session_id": "s-2"},
    )
    assert "X-Memory-Remembered" not in raw.headers
    assert _call(store, "s-2")["memory_request"] is None
