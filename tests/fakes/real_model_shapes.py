"""A fake model that fails the way real small models failed (issue 39, item 4).

Every shape here is one a 1.5B model (or SmolLM2-135M) answered to the project's own
prompts, recorded in `shared/data/real-model-answers/README.md` (samples A to E, runs 1
to 11), made to fit whatever prompt the fake receives: the ids, labels and observations
it lists. `SHAPES` holds them per task; `FakeOpenAI.real_model_shapes(...)` plays them.

A shape that breaks the request's schema (a copied choice list as a scope label) comes
with the server that allowed it: one that refuses `json_schema` (so the app steps down to
`json_object`, as on the recorded run), because a strict server could not produce it; the
fake stays strict about everything else. Each shape says what the app must do with it
(`expect`): the named check that refuses it, `empty`, `dropped`, `rejected`, `cut` (the
fake stops an answer at `max_tokens`, `finish_reason=length`), `timeout`, or `repaired`
(fences and prose taken off a valid answer, which is then stored).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from streams.prompts.defaults import CONSOLIDATION
from tests.fakes.openai_wire import (
    Behaviour,
    Delay,
    RecordedRequest,
    Reply,
    consolidation_lines,
    default_responder,
    faithful_memory,
    prompt_lines,
    prompt_text,
    propagation_prompt,
)

Task = Literal["extraction", "consolidation", "propagation", "contradiction"]
Answer = Callable[[RecordedRequest, "str | None"], "str | Behaviour"]
SLOW_SECONDS = 2.0  # past the small per-task timeouts the tests set, cut short by reset()
CHARS_PER_TOKEN = 4  # as the fake counts tokens (`openai_wire.estimate_tokens`)
TASK_LIST = [line for line in CONSOLIDATION.splitlines() if line.startswith("- ")]


@dataclass(frozen=True)
class Shape:
    name: str
    task: Task
    answer: Answer
    expect: str  # what the app must make of it (see the module docstring)
    sample: str  # where the README records it
    refuses: tuple[str, ...] = ()  # what the server that gave it lacks


_SPEAKER_ID = re.compile(r"\(([^()]+)\)\s*$")


def _target_label(request: RecordedRequest, label: str | None) -> str:
    """The label a shape writes: the one the test chose, else the first speaker's own
    (`individual:<id>`, as the prompt shows it after their name), else `individual`."""
    if label:
        return label
    for line in prompt_lines(request):
        found = _SPEAKER_ID.search(line.speaker)
        if found:
            return f"individual:{found[1]}"
    return "individual"


def _first_line(request: RecordedRequest) -> tuple[str, str]:
    lines = prompt_lines(request)
    return (lines[0].message_id, lines[0].text) if lines else ("", "")


def _item(request: RecordedRequest, scope: str) -> dict[str, object]:
    message_id, text = _first_line(request)
    return {"content": text or "A fact.", "scope": scope, "about": [], "sources": [message_id]}


def extraction_good(request: RecordedRequest, label: str | None = None) -> str:
    """Not a failure: the answer a good model gives (the first line, as one fact)."""
    return json.dumps({"observations": [_item(request, _target_label(request, label))]})


def extraction_empty(request: RecordedRequest, label: str | None = None) -> str:
    return '{"observations": []}'  # sample A: runs 1, 2, 6, 10 and 11


def extraction_choice_list(request: RecordedRequest, label: str | None = None) -> str:
    """Sample A'': the prompt's list of choices copied as the label."""
    label = f"{_target_label(request, label)}|group:none|shard:none"
    return json.dumps({"observations": [_item(request, label)]})


def extraction_fenced(request: RecordedRequest, label: str | None = None) -> str:
    """Sample A': valid JSON in a ```json fence (a server without JSON mode)."""
    body = json.dumps({"observations": [_item(request, _target_label(request, label))]}, indent=2)
    return f"```json\n{body}\n```"


def extraction_prose(request: RecordedRequest, label: str | None = None) -> str:
    body = json.dumps({"observations": [_item(request, _target_label(request, label))]})
    return f"Here are the observations I found in the conversation:\n{body}"


def extraction_loop(request: RecordedRequest, label: str | None = None) -> str:
    """A model that repeats one item until the server stops it at `max_tokens`."""
    one = json.dumps(_item(request, _target_label(request, label)))
    return '{"observations": [' + ", ".join([one] * _repeats(request, one)) + "]}"


def _repeats(request: RecordedRequest, part: str) -> int:
    """How often a looping model repeats `part` to run past the request's `max_tokens`
    (the fake then cuts it there), and no further: a small answer stays fast to serve."""
    limit = (request.body or {}).get("max_tokens") or 4096
    return limit * CHARS_PER_TOKEN // max(1, len(part)) + 2


def _slow(then: Answer) -> Answer:
    """Run 7's first attempt: an answer that arrives after the per-task timeout."""

    def answer(request: RecordedRequest, label: str | None = None) -> Behaviour:
        text = then(request)
        return Delay(SLOW_SECONDS, text if isinstance(text, Behaviour) else Reply(text))

    return answer


def consolidation_log_lines(request: RecordedRequest, label: str | None = None) -> str:
    """Sample B: a preamble and the prompt's own `[date] [id]` observation lines."""
    listed = list(consolidation_lines(request).items())[:2]
    return "Updated memory:\n\n" + "\n".join(f"[2023-05-08] [{i}] {t}" for i, t in listed)


def consolidation_echo(request: RecordedRequest, label: str | None = None) -> str:
    """Sample C: the task list echoed, a bogus trailer, a copy of the observations."""
    ids = list(consolidation_lines(request))
    trailer = f"CONTRADICTIONS: [{ids[0]}] [{ids[-1]}]" if ids else ""
    return "The updated memory:\n" + "\n".join(TASK_LIST[:3]) + "\n" + trailer


def consolidation_bare(request: RecordedRequest, label: str | None = None) -> str:
    return "UPDATED MEMORY"  # sample D


def consolidation_one_fact(request: RecordedRequest, label: str | None = None) -> str:
    """Run 4's loss: one of the observations kept, the rest left out."""
    texts = list(consolidation_lines(request).values())
    return texts[0] if texts else "Nothing much is known."


def consolidation_invented(request: RecordedRequest, label: str | None = None) -> str:
    """Sample E: a dated sentence invented from nothing."""
    return "[2023-05-14] Caroline went to a gay community event in London on May 8, 2023."


def consolidation_faithful(request: RecordedRequest, label: str | None = None) -> str:
    return faithful_memory(request)


def consolidation_loop(request: RecordedRequest, label: str | None = None) -> str:
    return faithful_memory(request) + " And so on." * _repeats(request, " And so on.")


def contradiction_bogus_pair(request: RecordedRequest, label: str | None = None) -> str:
    """Run 9: a faithful memory, then a pair of two listed observations about different
    things (the first and last listed)."""
    ids = list(consolidation_lines(request))
    memory = faithful_memory(request)
    if len(ids) < 2:
        return memory
    return f"{memory}\n\nCONTRADICTIONS:\n[{ids[0]}] [{ids[-1]}]"


def propagation_empty(request: RecordedRequest, label: str | None = None) -> str:
    return '{"observations": []}'  # runs 6 and 10


def propagation_choice_list(request: RecordedRequest, label: str | None = None) -> str:
    """Every target the prompt lists, joined, as the label of each offered observation."""
    parts = propagation_prompt(prompt_text(request))
    if parts is None:
        return '{"observations": []}'
    label = "|".join([*parts.targets, "none"])  # "group:none", as in sample A''
    items = [{"content": text, "scope": label, "supports": None} for text in parts.observations]
    return json.dumps({"observations": items})


def propagation_loop(request: RecordedRequest, label: str | None = None) -> str:
    parts = propagation_prompt(prompt_text(request))
    target = parts.targets[0] if parts and parts.targets else "collective"
    text = parts.observations[0] if parts and parts.observations else "A fact."
    one = json.dumps({"content": text, "scope": target, "supports": None})
    return '{"observations": [' + ", ".join([one] * _repeats(request, one)) + "]}"


JSON_OBJECT_ONLY = ("json_schema",)
PLAIN_TEXT_ONLY = ("json_schema", "json_object")
README = "shared/data/real-model-answers/README.md"
SHAPES: dict[str, Shape] = {
    s.name: s
    for s in [
        Shape("extraction.empty", "extraction", extraction_empty, "empty", "A, runs 1 2 11"),
        Shape(
            "extraction.choice_list",
            "extraction",
            extraction_choice_list,
            "empty",  # every item dropped: nothing usable where facts were said
            "A'', run 3",
            JSON_OBJECT_ONLY,
        ),
        Shape(
            "extraction.fenced",
            "extraction",
            extraction_fenced,
            "repaired",
            "A'",
            PLAIN_TEXT_ONLY,
        ),
        Shape(
            "extraction.prose", "extraction", extraction_prose, "repaired", "A'", JSON_OBJECT_ONLY
        ),
        Shape("extraction.loop", "extraction", extraction_loop, "cut", "timeouts, n_ctx"),
        Shape("extraction.slow", "extraction", _slow(extraction_empty), "timeout", "run 2"),
        Shape(
            "consolidation.log_lines", "consolidation", consolidation_log_lines, "log_lines", "B"
        ),
        Shape("consolidation.echo", "consolidation", consolidation_echo, "echo", "C, run 5 9"),
        Shape("consolidation.bare", "consolidation", consolidation_bare, "no_sentence", "D"),
        Shape(
            "consolidation.one_fact",
            "consolidation",
            consolidation_one_fact,
            "below_floor",
            "run 4",
        ),
        Shape("consolidation.invented", "consolidation", consolidation_invented, "log_lines", "E"),
        Shape("consolidation.loop", "consolidation", consolidation_loop, "cut", "n_ctx"),
        Shape(
            "consolidation.slow",
            "consolidation",
            _slow(consolidation_faithful),
            "timeout",
            "run 7",
        ),
        Shape(
            "contradiction.bogus_pair",
            "contradiction",
            contradiction_bogus_pair,
            "rejected",
            "runs 4 7 9",
        ),
        Shape("propagation.empty", "propagation", propagation_empty, "empty", "runs 6 10"),
        Shape(
            "propagation.choice_list",
            "propagation",
            propagation_choice_list,
            "dropped",
            "A'' (as propagation)",
            JSON_OBJECT_ONLY,
        ),
        Shape("propagation.loop", "propagation", propagation_loop, "cut", "n_ctx"),
        Shape(
            "propagation.slow",
            "propagation",
            _slow(propagation_empty),
            "timeout",
            "run 7 (as prop.)",
        ),
    ]
}


def shapes_of(task: Task) -> list[Shape]:
    return [s for s in SHAPES.values() if s.task == task]


class ShapesResponder:
    """Answers each task's requests with its shapes in turn (or the named ones), cycling;
    a consolidation request takes the contradiction shapes' turn too. A task given no
    shape gets the default answer. `played` lists the shapes answered, in order."""

    def __init__(self, names: dict[str, list[str]], *, label: str | None = None) -> None:
        self._lock = threading.Lock()
        self._label = label
        self._turns = {
            task: itertools.cycle([SHAPES[n] for n in listed])
            for task, listed in names.items()
            if listed
        }
        self.played: list[str] = []

    def __call__(self, request: RecordedRequest) -> str | Behaviour:
        task = request.task or ""
        with self._lock:
            turn = self._turns.get(task)
            shape = next(turn) if turn is not None else None
            if shape is not None:
                self.played.append(shape.name)
        if shape is None:
            return default_responder(request)
        return shape.answer(request, self._label)


def shapes_plan(
    *, task: str | None = None, shapes: list[str] | None = None
) -> tuple[dict[str, list[str]], set[str]]:
    """Which shapes each task plays and which features the server refuses: all the
    recorded shapes (of `task` only, when given), or exactly `shapes`. A shape that needs a
    server without json_schema makes the whole fake such a server, as one server is."""
    chosen = [SHAPES[n] for n in shapes] if shapes else list(SHAPES.values())
    if task is not None:
        chosen = [s for s in chosen if s.task == task]
    names: dict[str, list[str]] = {}
    for shape in chosen:
        request_task = "consolidation" if shape.task == "contradiction" else shape.task
        names.setdefault(request_task, []).append(shape.name)
    refused = set().union(*(s.refuses for s in chosen)) if chosen else set()
    return names, refused
