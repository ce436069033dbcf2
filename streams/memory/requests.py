"""One request builder per model task: what the real run sends and the dry run shows.

Formation, consolidation (its overshoot retry and its contradiction pass), propagation,
the prompt suggestion from corrections, and every dry run and prompt check build their
`LLMRequest` here, and nowhere else. So a dry run shows exactly what a run would send,
and a retried request asks for the same thing: the same prompt, schema, `temperature`
(0) and `max_tokens`.

`max_tokens` is sized from the task's word limits (about two tokens a word, plus room
for the JSON, the labels and the ids), so a looping model stops, and a truncated answer
(`finish_reason=length`) is an error, never half a memory.
"""

from __future__ import annotations

from streams.llm.answers_trailer import MAX_ANSWER_CHARS, questions_block
from streams.llm.contradiction_answer import MAX_PAIRS
from streams.llm.port import (
    ConsolidationContext,
    LLMRequest,
    PropagationContext,
    SuggestionContext,
)
from streams.llm.schemas import extraction_schema, propagation_schema, suggestion_schema
from streams.memory.extraction import ExtractionPlan
from streams.prompts import render_consolidation, render_propagation
from streams.prompts.templates import COLLECTIVE_TARGET

TOKENS_PER_WORD = 2
JSON_ITEM_TOKENS = 96  # a scope label, an `about` list, a few source ids, the braces
ANSWER_TOKENS = 64  # the envelope, and a line of prose a model adds anyway
PAIR_TOKENS = 30  # one "[<id>] [<id>]" line of the contradiction trailer
ANSWER_LINE_TOKENS = MAX_ANSWER_CHARS // 4 + 4  # one "Q<n>: <answer>" line of ANSWERS:
OVERSHOOT = (
    "Your previous answer had {words} words; the limit is {limit}. "
    "Write the consolidated memory again in at most {limit} words."
)


def extraction_request(plan: ExtractionPlan, *, model: str | None = None) -> LLMRequest:
    """The one call of a formation: its labels the routes the prompt lists, its ids the
    lines' message ids and the speakers' user ids; the agent's model (a dry run may ask
    another: `model`)."""
    context = plan.context
    labels = [f"individual:{s.user_id}" for s in plan.speakers]
    if len(plan.speakers) == 1:
        labels.append("individual")
    labels += [f"group:{name}" for name in context.group_names]
    labels.append("collective")
    labels += [f"shard:{shard.name}" for shard in context.shards]
    schema = extraction_schema(
        labels=labels,
        speaker_ids=[s.user_id for s in plan.speakers],
        message_ids=[line.message_id for line in context.lines if line.message_id],
    )
    per_item = TOKENS_PER_WORD * context.max_words + JSON_ITEM_TOKENS
    return LLMRequest(
        task="extraction",
        prompt=plan.prompt,
        context=context,
        json_output=True,
        tier="fast",
        schema=schema,
        max_tokens=ANSWER_TOKENS + context.max_observations * per_item,
        model=model or plan.model,
    )


def consolidation_request(
    *, template: str, context: ConsolidationContext, model: str | None = None
) -> LLMRequest:
    """A consolidation call: prose (the memory text, then the optional contradiction
    trailer, then the answers to the scope's questions), so no schema; room for the word
    limit, the pairs it may report and one line per question.

    The questions are added after the template (any template, an operator's too), so the
    trailer is asked for whatever the template says; without questions nothing is added.
    """
    pairs = min(MAX_PAIRS, len(context.observations))
    prompt = render_consolidation(template, context)
    if context.questions:
        prompt += questions_block(context.questions)
    return LLMRequest(
        task="consolidation",
        prompt=prompt,
        context=context,
        json_output=False,
        tier="slow",
        max_tokens=ANSWER_TOKENS
        + TOKENS_PER_WORD * context.max_words
        + PAIR_TOKENS * pairs
        + ANSWER_LINE_TOKENS * len(context.questions),
        model=model,
    )


def consolidation_retry(request: LLMRequest, *, words: int, limit: int) -> LLMRequest:
    """The same call once more, the overshoot stated after the prompt."""
    return LLMRequest(
        task=request.task,
        prompt=f"{request.prompt}\n\n{OVERSHOOT.format(words=words, limit=limit)}",
        context=request.context,
        json_output=request.json_output,
        tier=request.tier,
        schema=request.schema,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        model=request.model,
    )


def propagation_request(
    *, template: str, context: PropagationContext, model: str | None = None
) -> LLMRequest:
    """The one call after a consolidation: targets as the prompt writes them, candidate ids
    as it lists them; room for each offered observation rewritten."""
    targets = [
        target if target == COLLECTIVE_TARGET else f"group:{target.removeprefix('group:')}"
        for target in context.targets
    ]
    schema = propagation_schema(
        targets=targets, candidate_ids=[candidate_id for candidate_id, _ in context.candidates]
    )
    rewritten = sum(
        TOKENS_PER_WORD * len(text.split()) + JSON_ITEM_TOKENS for text in context.observations
    )
    return LLMRequest(
        task="propagation",
        prompt=render_propagation(template, context),
        context=context,
        json_output=True,
        tier="fast",
        schema=schema,
        max_tokens=ANSWER_TOKENS + rewritten,
        model=model,
    )


PROMPT_START = "<<<PROMPT"
PROMPT_END = "PROMPT>>>"
SUGGESTION_HEAD = (
    "You improve one prompt of a memory system. Support staff corrected what it produced; "
    "each correction below shows the source lines, the observation before and after, and "
    "why. Revise the prompt so that it would not make these mistakes again."
)
SUGGESTION_RULES = (
    'Answer with JSON: {"prompt": "<the whole revised prompt>", "why": "<one or two '
    'sentences>"}. Keep every placeholder of the prompt (a name in braces) exactly as it '
    "is, and its other braces as they are. Change only what the corrections show is "
    "wrong, as general rules: never copy a correction's names, numbers or personal "
    "details into the prompt."
)
WHAT_WORDS = {
    "edit": "edited",
    "delete": "deleted",
    "private": "marked private",
    "move": "moved",
    "reject": "rejected in review",
}


def suggestion_request(context: SuggestionContext) -> LLMRequest:
    """The one metaprompt call of "Suggest a change": the prompt in effect and the
    corrections as examples; the answer is the whole revised prompt and why (a schema)."""
    parts = [
        SUGGESTION_HEAD,
        f"# The {context.kind} prompt in effect\n{PROMPT_START}\n{context.template}\n{PROMPT_END}",
        f"# Corrections ({len(context.examples)})",
    ]
    for n, e in enumerate(context.examples, 1):
        lines = [f"## Correction {n}: {WHAT_WORDS.get(e.what, e.what)}"]
        if e.lines:
            lines.append("Source lines:\n" + "\n".join(f"- {line}" for line in e.lines))
        lines.append(f"Observation before: {e.before or '(none)'}")
        if e.what in ("edit", "private"):
            lines.append(f"After: {e.after or '(none)'}")
        if e.target:
            lines.append(f"Moved to: {e.target}")
        lines.append(f"Reason: {e.reason or '(none given)'}")
        parts.append("\n".join(lines))
    parts.append("# Your answer\n" + SUGGESTION_RULES)
    prompt = "\n\n".join(parts)
    template_tokens = len(context.template) // 4 + 1
    return LLMRequest(
        task="prompt_suggestion",
        prompt=prompt,
        context=context,
        json_output=True,
        tier="slow",
        schema=suggestion_schema(),
        max_tokens=ANSWER_TOKENS + 2 * template_tokens + 400,
    )
