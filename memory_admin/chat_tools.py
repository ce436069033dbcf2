"""The chat proxy's memory tool rounds: the model calls `search_memory`, we answer, it goes on.

With an agent's `memory_tool` on, the proxy offers the tool (`streams.context.chat_tool`)
and runs the rounds here: each upstream answer whose tool calls are all ours is answered
from memory and sent back, at most `MEMORY_CHAT_TOOL_MAX_ROUNDS` times; then the final
answer goes to the caller. An answer with any of the caller's own tool calls goes back
to the caller at once, with ours left out (the caller could not answer them).

The rounds are requests with `stream: false` (a round is never shown to the caller);
a caller who asked for `stream: true` gets the final answer as server-sent events made
from it (`completion_as_sse`), so the `openai` SDK's stream reads it unchanged.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memory_admin.integrations.chat_upstream import Upstream, forward, passed_headers, read_all
from streams.context.chat import ChatTurn
from streams.context.chat_tool import answer_tool_call, split_tool_calls
from streams.core.exceptions import NotFound
from streams.search.embeddings import SemanticRanker
from streams.selectors import agent_get
from streams.store import MemoryStore, StoreError

logger = logging.getLogger("memory_admin.chat")


@dataclass
class ToolRoundsResult:
    """The final answer after the rounds: the upstream's (or ours, at the cap)."""

    status: int
    content: bytes
    headers: dict[str, str]


def memory_tool_on(store: MemoryStore | None, agent_id: str) -> bool:
    """Whether the agent offers the tool (one read by `_id`; off when the store fails)."""
    if store is None:
        return False
    try:
        agent = agent_get(store=store, agent_id=agent_id)
    except (StoreError, NotFound):
        return False
    return agent.memory_tool == "search_memory"


def run_tool_rounds(
    *,
    upstream: Upstream,
    body: dict[str, Any],
    turn: ChatTurn,
    store: MemoryStore,
    semantic: SemanticRanker | None,
    max_rounds: int | None = None,
) -> ToolRoundsResult:
    """The rounds, then the final answer. Raises `UpstreamUnreachable` like `forward`."""
    rounds = settings.MEMORY_CHAT_TOOL_MAX_ROUNDS if max_rounds is None else max_rounds
    request = {**body, "stream": False}
    request.pop("stream_options", None)
    messages = list(body["messages"])
    turn.memory_tool = "offered"
    round_number = 0
    while True:
        response = forward(upstream, {**request, "messages": messages})
        content = read_all(response)
        headers = passed_headers(response, upstream.api_key)
        if response.status_code != 200:
            return ToolRoundsResult(response.status_code, content, headers)
        answer = _parsed(content)
        message = _first_message(answer)
        ours, theirs = split_tool_calls(message)
        if not ours:
            return ToolRoundsResult(200, content, headers)
        if theirs:  # the caller's calls go back to them; ours are left out
            message["tool_calls"] = theirs
            return ToolRoundsResult(200, json.dumps(answer).encode(), headers)
        if round_number >= rounds:
            turn.memory_tool = "rounds_exceeded"
            return ToolRoundsResult(200, _stopped(answer, rounds), headers)
        round_number += 1
        turn.memory_tool = "answered"
        messages.append(
            {"role": "assistant", "content": message.get("content"), "tool_calls": ours}
        )
        messages += [_answered(store, turn, call, round_number, semantic) for call in ours]


def _answered(
    store: MemoryStore,
    turn: ChatTurn,
    call: dict[str, Any],
    round_number: int,
    semantic: SemanticRanker | None,
) -> dict[str, Any]:
    """One call's `tool` message (an error the model reads when memory fails)."""
    try:
        message, record = answer_tool_call(
            store=store,
            agent_id=turn.agent_id,
            memory=turn.memory,
            call=call,
            round_number=round_number,
            semantic=semantic,
            caller=turn.actor,
        )
    except Exception:
        logger.exception("chat %s: the memory tool call failed", turn.call_id)
        error = "search_memory: memory is unavailable right now; answer without it"
        turn.tool_calls.append(
            {"round": round_number, "tool_call_id": call.get("id"), "error": error}
        )
        return {
            "role": "tool",
            "tool_call_id": call.get("id"),
            "content": json.dumps({"error": error}),
        }
    turn.tool_calls.append(record.as_record())
    return message


def _parsed(content: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(content)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _first_message(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def stopped_text(rounds: int) -> str:
    return (
        f"I stopped before answering: the memory tool was called more than {rounds} "
        f"time{'s' if rounds != 1 else ''} in a row (MEMORY_CHAT_TOOL_MAX_ROUNDS)."
    )


def _stopped(answer: dict[str, Any], rounds: int) -> bytes:
    """Our completion when the model still calls the tool after the last round."""
    body = {
        "id": answer.get("id") or f"chatcmpl-memory{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": answer.get("created") or int(time.time()),
        "model": answer.get("model") or "",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": stopped_text(rounds)},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
    }
    if isinstance(answer.get("usage"), dict):
        body["usage"] = answer["usage"]
    return json.dumps(body).encode()


def completion_as_sse(content: bytes) -> bytes:
    """A whole `chat.completion` as the chunks a streamed one would have sent."""
    answer = _parsed(content)
    base = {
        "id": answer.get("id") or f"chatcmpl-memory{uuid.uuid4().hex[:20]}",
        "object": "chat.completion.chunk",
        "created": answer.get("created") or int(time.time()),
        "model": answer.get("model") or "",
    }
    message = _first_message(answer)
    choice = (answer.get("choices") or [{}])[0]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["tool_calls"] = [
            {**call, "index": index} for index, call in enumerate(message["tool_calls"])
        ]
    finish = choice.get("finish_reason") if isinstance(choice, dict) else "stop"
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish or "stop"}]},
    ]
    out = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
    return out + b"data: [DONE]\n\n"
