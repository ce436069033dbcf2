"""Reading a JSON answer the way real models write it: in code fences, after a line of prose.

A server without JSON mode (or a small model with it) wraps its object in ```` ```json ````
fences or opens with "Here is the JSON:"; the object inside is what it meant. Only the
outermost object is taken, and only when the text holds exactly one: anything else is
an `LLMError` (the batch is retried, nothing is stored).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from streams.llm.port import LLMError, LLMRequest, LLMResult

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)


@dataclass(frozen=True)
class JsonAnswer:
    value: Any
    repaired: bool  # True when fences or prose had to be taken off first


def read_json_answer(text: str, *, what: str) -> JsonAnswer:
    """The JSON object of an answer; fences and prose around one object are tolerated."""
    stripped = (text or "").strip()
    try:
        return JsonAnswer(json.loads(stripped), repaired=False)
    except (TypeError, ValueError):
        pass
    for candidate in _candidates(stripped):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return JsonAnswer(value, repaired=True)
    raise LLMError(f"the {what} answer is not valid JSON")


def _candidates(text: str) -> list[str]:
    """Fenced blocks first, then the span from the first `{` to the last `}`."""
    found = [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start : end + 1])
    return found


def json_read_noted(request: LLMRequest, result: LLMResult) -> LLMResult:
    """`result` with its task and, for a JSON answer, how it reads ("clean", "repaired" or
    "unreadable") in `extra`: the usage counters count repairs and parse failures per
    model and task from it (`streams.records.usage`). The domain's parser reads the same."""
    extra: dict[str, object] = {**result.extra, "task": request.task}
    if request.json_output:
        try:
            extra["json"] = (
                "repaired" if read_json_answer(result.text, what="").repaired else "clean"
            )
        except LLMError:
            extra["json"] = "unreadable"
    return replace(result, extra=extra)


def failed_call(request: LLMRequest, error: LLMError, *, provider: object) -> LLMResult:
    """A call that brought no answer, as a result with no text: its task, the model asked
    (when the provider says), and why (`failure`: "cut" at max_tokens, "timeout", or
    "error"), for the usage counters."""
    message = str(error)
    failure = (
        "cut"
        if "cut at max_tokens" in message
        else "timeout"
        if "timed out" in message
        else "error"
    )
    model_for = getattr(provider, "model_for", None)
    model = model_for(request) if callable(model_for) else getattr(provider, "name", "?")
    return LLMResult(text="", model=str(model), extra={"task": request.task, "failure": failure})
