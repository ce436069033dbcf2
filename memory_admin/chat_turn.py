"""One chat turn through the proxy's steps, not streamed: the UI's chat playground.

The same steps as `POST /api/v1/agents/{id}/chat/completions`: the memory context
(`chat_prepare`), the upstream (`forward`, or the memory tool's rounds when the agent
offers it), the call record and its ingest job (`do_chat_turn_finish`). When no chat
upstream is configured the offline provider answers instead: a deterministic sentence
saying what memory the turn was given (and, with the memory tool on, a `search_memory`
call of its own with the user's message), so the playground works without a model.
An offline answer is not learnt from (only the user's message is ingested): no model
wrote it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from memory_admin.chat_tools import memory_tool_on, run_tool_rounds
from memory_admin.integrations.chat_upstream import (
    UpstreamUnreachable,
    answer_text,
    forward,
    read_all,
    upstream_config,
    upstream_error,
    upstream_model,
)
from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.jobs.tasks import dispatch_now
from streams.actions.chat import do_chat_turn_finish
from streams.context.chat import ChatMemory, ChatOutcome, ChatTurn, chat_prepare
from streams.context.chat_tool import MAX_QUERY_CHARS, TOOL_NAME, answer_tool_call, offer_tool
from streams.search.embeddings import SemanticRanker
from streams.store import MemoryStore

logger = logging.getLogger("memory_admin.chat")

OFFLINE_MODEL = "offline-rules"


@dataclass
class PlayedTurn:
    """What the playground shows of one turn."""

    turn: ChatTurn
    answer: str
    model: str
    offline: bool
    error: str | None = None


def play_turn(
    *,
    store: MemoryStore,
    agent_id: str,
    memory: ChatMemory,
    messages: list[dict[str, Any]],
    model: str,
    actor: str,
) -> PlayedTurn:
    """The answer to the last user message, with the call recorded and the turn queued."""
    started = time.monotonic()
    semantic = semantic_ranker()
    turn = chat_prepare(
        store=store,
        agent_id=agent_id,
        memory=memory,
        messages=messages,
        semantic=semantic,
        actor=actor,
    )
    tool = memory_tool_on(store, agent_id)
    upstream = upstream_config()
    if upstream is None:
        answer = offline_answer(store, turn, tool=tool, semantic=semantic)
        played = PlayedTurn(turn, answer, OFFLINE_MODEL, offline=True)
        kind, status, learnt = "answered", None, ""
    else:
        played, kind, status = _upstream_turn(upstream, turn, store, model, tool, semantic)
        learnt = played.answer
    outcome = ChatOutcome(
        outcome=kind,  # type: ignore[arg-type]
        stream=False,
        model=model,
        upstream_model=played.model,
        upstream_status=status,
        answer=learnt,
        duration_ms=(time.monotonic() - started) * 1000,
    )
    job = do_chat_turn_finish(store=store, turn=turn, outcome=outcome)
    if job is not None:
        try:
            dispatch_now(job)
        except Exception:  # the recovery sweep queues it again
            logger.exception("playground %s: queueing ingest job %s failed", turn.call_id, job.id)
    return played


def _upstream_turn(
    upstream: Any,
    turn: ChatTurn,
    store: MemoryStore,
    model: str,
    tool: bool,
    semantic: SemanticRanker | None,
) -> tuple[PlayedTurn, str, int | None]:
    body: dict[str, Any] = {"model": upstream_model(model), "messages": turn.messages}
    try:
        if tool and offer_tool(body):
            result = run_tool_rounds(
                upstream=upstream, body=body, turn=turn, store=store, semantic=semantic
            )
            status, content = result.status, result.content
        else:
            response = forward(upstream, body)
            content = read_all(response)
            status = response.status_code
    except UpstreamUnreachable as exc:
        return PlayedTurn(turn, "", body["model"], False, str(exc)), "upstream_unreachable", None
    if status != 200:
        _, error = upstream_error(status, content, upstream.api_key)
        played = PlayedTurn(turn, "", body["model"], False, error["error"]["message"])
        return played, "upstream_error", status
    return PlayedTurn(turn, answer_text(content), body["model"], False), "answered", status


def offline_answer(
    store: MemoryStore, turn: ChatTurn, *, tool: bool, semantic: SemanticRanker | None
) -> str:
    """The offline provider's reply: what memory this turn had, said plainly."""
    parts = ["Offline provider (no chat upstream is configured), so no model wrote this."]
    if turn.user_text is None:
        return " ".join([*parts, "There is no user message with text to answer."])
    if turn.memory_status == "injected":
        fired = "fired" if turn.retrieval_triggered else "did not fire"
        parts.append(
            f"Memory given: about {turn.context_tokens} tokens; "
            f"retrieval {fired} ({turn.retrieval_reason})."
        )
    elif turn.memory_status == "skipped":
        parts.append("Memory was skipped: the store could not be read.")
    else:
        parts.append("No memory was given for this message.")
    if tool and turn.memory_status != "skipped":
        parts.append(_offline_tool_call(store, turn, semantic))
    return " ".join(parts)


def _offline_tool_call(store: MemoryStore, turn: ChatTurn, semantic: SemanticRanker | None) -> str:
    """With the memory tool on, the offline model calls it once with the user's message."""
    query = (turn.user_text or "").strip()[:MAX_QUERY_CHARS]
    call = {
        "id": "call-offline-1",
        "type": "function",
        "function": {"name": TOOL_NAME, "arguments": json.dumps({"query": query})},
    }
    try:
        _, record = answer_tool_call(
            store=store,
            agent_id=turn.agent_id,
            memory=turn.memory,
            call=call,
            round_number=1,
            semantic=semantic,
            caller=turn.actor,
        )
    except Exception:
        logger.exception("playground %s: the offline memory tool call failed", turn.call_id)
        return f"It called {TOOL_NAME}, which failed."
    turn.memory_tool = "answered"
    turn.tool_calls.append(record.as_record())
    found = len(record.observation_ids)
    return (
        f"It called {TOOL_NAME} with your message: {found} item{'s' if found != 1 else ''} found."
    )
