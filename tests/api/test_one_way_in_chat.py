"""One way in through the chat proxy (issue 37): a secret the caller sends (or the model
echoes) is redacted before the turn is stored anywhere: the chat-call record, the ingest
job's payload and the session's messages. The upstream still gets the caller's text."""

from __future__ import annotations

import json

import openai
from bson import ObjectId

from streams.store import MemoryStore
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, client, upstream
from tests.eventually import eventually
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["chat_clients", "chat_key", "client", "upstream"]  # fixtures

SK = "sk-proj-abcdefghijklmnopqrstuvwx123"
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_a_chat_turn_s_secrets_are_redacted_in_every_record(
    client: openai.OpenAI, upstream: FakeOpenAI, store: MemoryStore
):
    upstream.reply(f"Noted: your AWS key is {AWS}.")
    message = f"Remember my deploy token {SK} please."
    raw = client.chat.completions.with_raw_response.create(
        model="memory-gpt", messages=[{"role": "user", "content": message}], metadata=MEMORY
    )
    assert raw.parse().choices[0].message.content.endswith(f"{AWS}.")
    assert SK in json.dumps(upstream.chat_requests[-1].body)  # forwarded as sent

    calls = eventually(
        lambda: store.chat_calls.for_session(
            agent_id=AGENT,
            session_id="s-1",
            before=None,
            limit=5,
        ),
        until=lambda c: len(c) == 1,
    )
    [call] = calls
    recorded = json.dumps(call, default=str)
    assert SK not in recorded and AWS not in recorded
    assert "[redacted secret]" in call["user_message"]
    job = eventually(
        lambda: store.jobs.get(ObjectId(call["ingest_job_id"])),
        until=lambda j: j is not None and j.status in ("succeeded", "failed"),
    )
    assert SK not in json.dumps(job.payload, default=str)
    assert AWS not in json.dumps(job.payload, default=str)
    # The ingest job ran: the session's stored messages hold no secret either.
    stored = store.sessions.messages.find({"agent_id": AGENT, "session_id": "s-1"}).limit(10)
    texts = [d["content"] for d in stored]
    assert texts and all(SK not in t and AWS not in t for t in texts)
