"""One request builder per model task: what the real run sends and the dry run shows.

Formation, consolidation (its overshoot retry and its contradiction pass), propagation
and every dry run and prompt check build their `LLMRequest` here, and nowhere else. So
a dry run shows exactly what a run would send, and a retried request asks for the same
thing: the same prompt, schema, `temperature` (0) and `max_tokens`.

`max_tokens` is sized from the task's word limits (about two tokens a word, plus room
for the JSON, the labels and the ids), so a looping model stops, and a truncated answer
(`finish_reason=length`) is an error, never half a memory.
"""

from __future__ import annotations

from streams.llm.answers_trailer import MAX_ANSWER_CHARS, questions_block
from streams.llm.contradiction_answer import MAX_PAIRS
from streams.llm.port import ConsolidationContext, LLMRequest, PropagationContext
from streams.llm.schemas import extraction_schema, propagation_schema
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
