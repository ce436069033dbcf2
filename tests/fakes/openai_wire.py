"""What the fake OpenAI server understands: recorded requests, scripted behaviours, and the
JSON bodies it answers, shaped like the real API's.

Kept apart from the server so the wire format can be read (and reused by tests that assert
on requests, vectors or usage) without wading through the threading.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_EMBEDDING_DIMENSIONS = 16
DEFAULT_TEXT = "This is a reply from the fake OpenAI server."
DEFAULT_JSON_TEXT = '{"observations": []}'


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it, so tests can assert what the app sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON, or None when the body was empty or not JSON
    time: float  # time.monotonic() on arrival

    def header(self, name: str, default: str | None = None) -> str | None:
        """Case-insensitive lookup, as HTTP header names are case-insensitive."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), default)

    @property
    def task(self) -> str | None:
        """The `X-Memory-Task` header, which lets a proxy attribute cost per task."""
        return self.header("X-Memory-Task")

    @property
    def wants_json(self) -> bool:
        """Whether the request asked for JSON: `response_format` `json_object` or `json_schema`."""
        response_format = (self.body or {}).get("response_format") or {}
        return response_format.get("type") in ("json_object", "json_schema")


@dataclass(frozen=True)
class Reply:
    """Answer a normal chat completion whose message content is `text`, with extra response
    `headers` (a `Set-Cookie`, say).

    Strict by default: an extraction answer whose `sources` name a message id the prompt
    does not show is refused (a 500 the client does not retry), since a model can only
    cite the lines it was given. `strict=False` sends it anyway (to test that the app
    drops such ids).
    """

    text: str
    headers: tuple[tuple[str, str], ...] = ()
    strict: bool = True


@dataclass(frozen=True)
class Fail:
    """Answer an OpenAI-shaped error; `retry_after` (seconds) is sent as `retry-after-ms`.

    `echo_headers` appends the request's headers to the message, as some proxies and
    model servers do in their error pages (the `Authorization` header included).
    """

    status: int = 500
    message: str = "Fake failure."
    retry_after: float | None = 0.01
    echo_headers: bool = False


@dataclass(frozen=True)
class Delay:
    """Sleep before answering (to trip client timeouts), then play `then` or the responder."""

    seconds: float
    then: Behaviour | None = None


@dataclass(frozen=True)
class MalformedBody:
    """HTTP 200 whose body is not JSON, like a broken proxy in front of the model server."""

    body: bytes = b"<html><body>upstream hiccup</body></html>"
    content_type: str = "application/json"


@dataclass(frozen=True)
class DropConnection:
    """Close the socket without answering, like a server that crashed mid-request."""


@dataclass(frozen=True)
class Stream:
    """Answer `stream: true` with SSE chunks, one per part, then `[DONE]`.

    With `release`, the first `hold_after` chunks are sent and the rest wait for the
    event (at most `hold_timeout` seconds): a test sets it once its client has seen a
    chunk, which proves chunks arrive before the upstream has finished. `finished` is
    set once the last byte is written (or the client hung up).
    """

    parts: tuple[str, ...] = ("This ", "is ", "a ", "streamed ", "reply.")
    release: threading.Event | None = None
    hold_after: int = 1
    hold_timeout: float = 10.0
    chunk_delay: float = 0.0
    finished: threading.Event | None = None


@dataclass(frozen=True)
class ToolCall:
    """Answer with tool calls (`calls`: (name, arguments JSON text) pairs), as a model does.

    Strict, as a real model is: only when the request offers every named function in its
    `tools`; otherwise the responder's text answers (a model cannot call what it was not
    given). `arguments` are sent as written, so a test can send malformed ones.
    """

    calls: tuple[tuple[str, str], ...]


Behaviour = Reply | Fail | Delay | MalformedBody | DropConnection | Stream | ToolCall
Responder = Callable[[RecordedRequest], "str | Behaviour"]


CONVERSATION_LINE = re.compile(r"^\[([^\]\s]+)\] ([^:\n]+): (.*)$")


@dataclass(frozen=True)
class PromptLine:
    """One line of an extraction prompt's conversation: `[<message id>] <speaker>: <text>`."""

    message_id: str
    speaker: str
    text: str


def prompt_text(request: RecordedRequest) -> str:
    messages = (request.body or {}).get("messages") or []
    return "\n".join(_content_text(m.get("content")) for m in messages)


def prompt_lines(request: RecordedRequest) -> list[PromptLine]:
    """The conversation lines the prompt shows, ids exactly as written (role-only lines, such
    as `[user] ...` of a prompt with no ids, are left out)."""
    lines = []
    for raw in prompt_text(request).splitlines():
        match = CONVERSATION_LINE.match(raw)
        if match and match[1] not in {"user", "assistant", "tool", "system"}:
            lines.append(PromptLine(match[1], match[2], match[3]))
    return lines


def unknown_sources(request: RecordedRequest, text: str) -> list[str]:
    """The `sources` of an extraction answer that the request's prompt does not show."""
    if request.task != "extraction":
        return []
    try:
        answer = json.loads(text)
    except ValueError:
        return []
    items = answer.get("observations") if isinstance(answer, dict) else None
    shown = {line.message_id for line in prompt_lines(request)}
    cited = [
        s
        for item in items or []
        if isinstance(item, dict) and isinstance(item.get("sources"), list)
        for s in item["sources"]
    ]
    return [s for s in cited if s not in shown]


CONSOLIDATION_LINE = re.compile(r"^- \[\d{4}-\d{2}-\d{2}\] \[([0-9a-f]{24})\] (.*)$")
CONTRADICTION_ID = re.compile(r"\[([0-9a-fA-F]{24})\]")


def consolidation_lines(request: RecordedRequest) -> dict[str, str]:
    """The new observations a consolidation prompt lists with their ids: id -> text."""
    found = {}
    for raw in prompt_text(request).splitlines():
        match = CONSOLIDATION_LINE.match(raw)
        if match:
            found[match[1]] = match[2]
    return found


def unknown_contradiction_ids(request: RecordedRequest, text: str) -> list[str]:
    """The ids a consolidation answer reports (after `CONTRADICTIONS:`) that its prompt
    does not list: a model can only name the observations it was shown."""
    if request.task != "consolidation" or "CONTRADICTIONS:" not in text.upper():
        return []
    trailer = text[text.upper().rindex("CONTRADICTIONS:") :]
    shown = set(consolidation_lines(request))
    return [i for i in CONTRADICTION_ID.findall(trailer) if i.lower() not in shown]


def contradiction_responder(*pairs: tuple[str, str], memory: str = DEFAULT_TEXT) -> Responder:
    """Answer a consolidation with `memory`, reporting as contradicting each pair of listed
    observations whose texts hold these two phrases, by the ids the prompt shows (a pair
    the prompt does not list is not reported). Other requests get the default answer."""

    def respond(request: RecordedRequest) -> str:
        if request.task != "consolidation":
            return default_responder(request)
        lines = consolidation_lines(request)
        reported = []
        for first, second in pairs:
            a = [i for i, text in lines.items() if first in text]
            b = [i for i, text in lines.items() if second in text]
            if a and b:
                reported.append(f"[{a[0]}] [{b[0]}]")
        if not reported:
            return with_answers(request, memory)
        return with_answers(request, memory + "\n\nCONTRADICTIONS:\n" + "\n".join(reported))

    return respond


def extraction_responder(*items: dict[str, Any]) -> Responder:
    """Answer an extraction with these observations, each citing the prompt's lines that
    contain its `cite` phrase, by their ids exactly as the prompt shows them (the phrase
    itself is not sent). A phrase no line holds is a test bug: the responder raises."""

    def respond(request: RecordedRequest) -> str:
        lines = prompt_lines(request)
        answer = []
        for item in items:
            observation = {k: v for k, v in item.items() if k != "cite"}
            if "cite" in item:
                ids = [line.message_id for line in lines if item["cite"] in line.text]
                if not ids:
                    raise AssertionError(f"no prompt line holds {item['cite']!r}")
                observation["sources"] = ids
            answer.append(observation)
        return json.dumps({"observations": answer})

    return respond


def default_responder(request: RecordedRequest) -> str:
    """A fixed text, or an empty extraction result when the request asked for JSON; a
    consolidation prompt listing observations gets a faithful memory (`faithful_memory`),
    with the answers to the questions its prompt lists (`with_answers`)."""
    if request.task == "consolidation" and consolidation_lines(request):
        return with_answers(request, faithful_memory(request))
    return DEFAULT_JSON_TEXT if request.wants_json else DEFAULT_TEXT


QUESTIONS_HEADING = "# Questions the memory must answer"
QUESTION_LINE = re.compile(r"^Q(\d+)\. (.+)$")
ANSWER_LINE = re.compile(r"^Q(\d+): (.+)$")
_QUESTION_WORDS = frozenset(
    re.findall(r"\w+", "what which who when where how does is are the this that user users their")
)


def prompt_questions(request: RecordedRequest) -> list[str]:
    """The questions a consolidation prompt lists (`Q<n>. <question>`), in order."""
    found = []
    for line in _section(prompt_text(request), QUESTIONS_HEADING):
        match = QUESTION_LINE.match(line.strip())
        if match:
            found.append(match[2])
    return found


def answer_from(memory: str, question: str) -> str | None:
    """The fake's reading: the first sentence of `memory` that holds a word of the question
    (four letters or more, question words aside); None when none does."""
    wanted = {
        w
        for w in re.findall(r"[a-z0-9]+", question.lower())
        if len(w) >= 4 and w not in _QUESTION_WORDS
    }
    for sentence in re.split(r"(?<=[.!?])\s+", memory):
        if wanted & set(re.findall(r"[a-z0-9]+", sentence.lower())):
            return sentence.strip()
    return None


def with_answers(request: RecordedRequest, memory: str) -> str:
    """`memory` and, when the prompt lists questions, the trailer exactly as it asks:
    `ANSWERS:` then `Q<n>: <answer>` or `Q<n>: NOT STATED` per question."""
    questions = prompt_questions(request)
    if not questions:
        return memory
    lines = [f"Q{n}: {answer_from(memory, q) or 'NOT STATED'}" for n, q in enumerate(questions, 1)]
    return memory + "\n\nANSWERS:\n" + "\n".join(lines)


def trailer_problems(request: RecordedRequest, text: str) -> str | None:
    """Why a consolidation answer does not give the trailer its prompt asks for (a line
    `ANSWERS:`, then exactly `Q1:` .. `Q<n>:` in order), or None."""
    questions = prompt_questions(request) if request.task == "consolidation" else []
    if not questions:
        return None
    lines = text.splitlines()
    if "ANSWERS:" not in [line.strip() for line in lines]:
        return "no ANSWERS: line"
    after = lines[[line.strip() for line in lines].index("ANSWERS:") + 1 :]
    numbered = [ANSWER_LINE.match(line.strip()) for line in after if line.strip()]
    numbers = [int(m[1]) for m in numbered if m]
    if numbers[: len(questions)] != list(range(1, len(questions) + 1)):
        return f"answers {numbers} for {len(questions)} questions"
    return None


def one_fact_responder(content: str, scope: str = "individual:u1") -> Responder:
    """Extractions answer one observation (`content` in `scope`, citing no line); others
    get the default answer. For tests whose conversations hold a fact: an empty answer
    to them fails as `empty` (issue 39)."""
    answer = json.dumps(
        {"observations": [{"content": content, "scope": scope, "about": [], "sources": []}]}
    )
    return lambda request: answer if request.task == "extraction" else default_responder(request)


def faithful_memory(request: RecordedRequest) -> str:
    """What a faithful model answers a consolidation: the current memory, then each listed
    observation as a sentence (the answer checks refuse one that drops most of them)."""
    current = " ".join(
        line.strip() for line in _section(prompt_text(request), "# The current memory")
    ).strip()
    if current.startswith("(") and current.endswith(")"):
        current = ""  # the prompt's "no memory yet" placeholder
    added = [
        t if t.rstrip()[-1:] in ".!?" else f"{t}." for t in consolidation_lines(request).values()
    ]
    return " ".join([current, *added]).strip()


@dataclass(frozen=True)
class PropagationPrompt:
    """What a propagation prompt offers, read back from its text the way a model reads it."""

    observations: list[str]
    targets: list[str]  # exactly as listed, e.g. "group:Eden Team" or "collective"
    candidates: dict[str, str]  # open collective candidates: id -> text


def _section(prompt: str, heading: str) -> list[str]:
    lines = prompt.split("\n")
    try:
        start = lines.index(heading) + 1
    except ValueError:
        return []
    out: list[str] = []
    for line in lines[start:]:
        if line.startswith("# "):
            break
        out.append(line)
    return out


def propagation_prompt(prompt: str) -> PropagationPrompt | None:
    """The parts of the default propagation prompt; None when `prompt` is not one."""
    if "# Where they may be shared" not in prompt:
        return None
    observations = [
        line[2:] for line in _section(prompt, "# Observations just absorbed") if line[:2] == "- "
    ]
    targets = []
    for line in _section(prompt, "# Where they may be shared"):
        if line.startswith("- "):
            # "- collective (lessons ...)": the target is what precedes the " (…)" note.
            targets.append(line[2:].split(" (", 1)[0].strip())
    candidates = {}
    for line in _section(prompt, "# Open collective candidates"):
        if line.startswith("- [") and "] " in line:
            candidate_id, _, text = line[3:].partition("] ")
            candidates[candidate_id] = text
    if observations == ["(none)"]:
        observations = []
    return PropagationPrompt(observations, targets, candidates)


def _normal(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c.isspace()).split())


def propagation_responder(
    *, keep: Callable[[str], bool] | None = None, support: bool = True
) -> Responder:
    """A model that follows the propagation prompt: it copies each offered observation
    (those `keep` accepts) word for word to every target exactly as the prompt lists it,
    naming an open candidate with the same text in "supports". Other requests get the
    default answer."""

    def respond(request: RecordedRequest) -> str:
        messages = (request.body or {}).get("messages") or []
        prompt = "".join(_content_text(m.get("content")) for m in messages)
        parts = propagation_prompt(prompt)
        if parts is None:
            return default_responder(request)
        by_text = {_normal(text): cid for cid, text in parts.candidates.items()}
        items = []
        for text in parts.observations:
            if keep is not None and not keep(text):
                continue
            for target in parts.targets:
                item = {"content": text, "scope": target}
                if support and target == "collective" and _normal(text) in by_text:
                    item["supports"] = by_text[_normal(text)]
                items.append(item)
        return json.dumps({"observations": items})

    return respond


def estimate_tokens(text: str) -> int:
    """About four characters per token: close enough for usage accounting in tests."""
    return math.ceil(len(text) / 4)


def embedding_vector(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit vector derived from a hash of `text`: the same in every run and process.

    Values are rounded to float32, so the float and base64 encodings decode to equal lists.
    """
    raw: list[float] = []
    counter = 0
    while len(raw) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend(int.from_bytes(digest[i : i + 4], "big") / 2**31 - 1.0 for i in range(0, 32, 4))
        counter += 1
    raw = raw[:dimensions]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [struct.unpack("<f", struct.pack("<f", v / norm))[0] for v in raw]


def error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error envelope; the client puts `message` into the exception it raises."""
    if status == 429:
        kind, code = "requests", "rate_limit_exceeded"
    elif status >= 500:
        kind, code = "server_error", None
    else:
        kind, code = "invalid_request_error", "unknown_url" if status == 404 else None
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def chat_completion(request_body: dict[str, Any], text: str) -> dict[str, Any]:
    """A `chat.completion` object answering `request_body` with `text`, with estimated usage.

    Past the request's `max_tokens` the text is cut there, `finish_reason="length"`, as a
    real server stops a model that runs on (or loops)."""
    prompt = "".join(_content_text(m.get("content")) for m in request_body.get("messages", []))
    prompt_tokens, completion_tokens = estimate_tokens(prompt), estimate_tokens(text)
    finish_reason = "stop"
    limit = request_body.get("max_tokens")
    if isinstance(limit, int) and completion_tokens > limit:
        text, completion_tokens, finish_reason = text[: limit * 4], limit, "length"
    message = {"role": "assistant", "content": text, "refusal": None}
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return {
        "id": f"chatcmpl-fake{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request_body.get("model", "fake-model"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": usage,
    }


def offered_tools(request_body: dict[str, Any]) -> set[str]:
    """The function names a chat request offers in its `tools`."""
    names = set()
    for tool in request_body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def tool_calls(calls: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_fake{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for name, arguments in calls
    ]


def tool_call_completion(
    request_body: dict[str, Any], calls: tuple[tuple[str, str], ...]
) -> dict[str, Any]:
    """A `chat.completion` whose message calls tools (`finish_reason="tool_calls"`)."""
    completion = chat_completion(request_body, "")
    choice = completion["choices"][0]
    choice["message"] = {"role": "assistant", "content": None, "tool_calls": tool_calls(calls)}
    choice["finish_reason"] = "tool_calls"
    return completion


def chat_chunk(
    request_body: dict[str, Any], completion_id: str, delta: dict[str, Any], finish: str | None
) -> dict[str, Any]:
    """One `chat.completion.chunk` event of a streamed answer."""
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request_body.get("model", "fake-model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def sse_event(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def split_words(text: str) -> tuple[str, ...]:
    """A text as streamed parts: each word with the space that follows it."""
    words = text.split(" ")
    return tuple(w + " " for w in words[:-1]) + (words[-1],)


def embeddings(request_body: dict[str, Any], default_dimensions: int) -> dict[str, Any]:
    """An embeddings list for a string or list input, honouring `dimensions`.

    The client asks for `encoding_format="base64"` unless told otherwise, so both
    encodings are served: base64 is little-endian float32, as the real API sends it.
    """
    inputs = request_body.get("input", "")
    texts = [_content_text(t) for t in ([inputs] if isinstance(inputs, str) else inputs)]
    dimensions = int(request_body.get("dimensions") or default_dimensions)
    data = []
    for index, text in enumerate(texts):
        vector: Any = embedding_vector(text, dimensions)
        if request_body.get("encoding_format") == "base64":
            vector = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(estimate_tokens(t) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": request_body.get("model", "fake-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
