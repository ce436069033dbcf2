"""Dry runs: a draft prompt and the prompt in effect on the same input, side by side.

Each side is built by the same code as the real call (`plan_extraction`,
`consolidation` context, `propagation_plan`) with the draft given to the resolver
in place of what is saved at its level, so a dry run shows exactly the request a
save would produce. One LLM call per side; nothing is stored (no version, no
job, no observation moves).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from streams.core.documents import BufferedMessage, Scope, utcnow
from streams.core.exceptions import InvalidInput
from streams.llm.port import LLMError, LLMProvider, LLMRequest
from streams.memory.consolidation_chunks import DEFAULT_CHUNK_TOKENS, chunk_plan
from streams.memory.consolidation_contradictions import contradiction_holds
from streams.memory.consolidation_runs import Chunking, consolidation_inputs, consolidation_pass
from streams.memory.extraction import ExtractionPlan, plan_extraction
from streams.memory.extraction_answer import parse_extraction
from streams.memory.formation import FormationSettings, weighted_tokens
from streams.memory.propagation import propagation_copies, propagation_plan
from streams.memory.requests import extraction_request
from streams.memory.scopes import ScopeKey
from streams.prompts import Draft, PromptPart, resolve_template
from streams.store import MemoryStore

MAX_CONVERSATION_LINES = 200
RECENT_SESSIONS = 20
ROLES = ("user", "assistant", "tool", "system")
DRY_RUN_USER = "dry-run-user"
OFFLINE_NOTE = (
    "The offline provider ignores the wording of templates: both columns come from the "
    "same rules. It does read shard names and guidance words to route to shards. Configure "
    "an OpenAI-compatible model to see what a wording change does."
)


@dataclass(frozen=True)
class DryRunResult:
    prompt: str
    part: PromptPart | None = None  # the template this side ran with, and where it came from
    text: str | None = None
    model: str | None = None
    duration_ms: int = 0
    error: str | None = None
    # Extraction and propagation: what would be stored, each with the scope it goes to.
    items: list[dict[str, str]] = field(default_factory=list)
    # Every request sent, as the real run builds it (`streams.memory.requests`).
    requests: list[LLMRequest] = field(default_factory=list)
    # Why an extraction would store nothing ("the model found no facts ...").
    why_nothing: list[str] = field(default_factory=list)
    # A consolidation's folds in turn (`streams.memory.consolidation_chunks`): how many
    # observations each chunk offered; one entry per chunk, its requests in `requests`.
    chunks: list[int] = field(default_factory=list)

    @property
    def sent(self) -> list[dict[str, Any]]:
        """What each call asks for beside its prompt, for the page: the sampling, the token
        limit and the answer's schema (a consolidation's retry or contradiction pass too)."""
        return [
            {
                "temperature": r.temperature,
                "max_tokens": r.max_tokens,
                "schema": json.dumps(r.schema, indent=1) if r.schema else "",
            }
            for r in self.requests
        ]


def dry_run_extraction(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    agent_id: str,
    conversation: str,
    user_name: str,
    draft: Draft | None,
    level: Scope | None = None,
    session_id: str | None = None,
    model: str | None = None,
) -> DryRunResult:
    """What one formation would extract from a pasted conversation ("role: text" per line)
    or from a recent real session (its latest messages, its user and groups).

    For a pasted conversation the speaker is the level's user when the level is an
    individual scope, and the level's group is among the user's groups when the level is
    a group, so its guidance is in play.
    """
    if session_id:
        plan = session_plan(store=store, agent_id=agent_id, session_id=session_id, draft=draft)
    else:
        plan = extraction_plan(
            store=store,
            agent_id=agent_id,
            conversation=conversation,
            user_name=user_name,
            draft=draft,
            level=level,
        )
    return run_extraction_plan(llm, plan, model=model)


def recent_sessions(*, store: MemoryStore, agent_id: str) -> list[dict[str, Any]]:
    """The agent's latest sessions, to pick one to dry-run on."""
    return [
        {
            "session_id": b["session_id"],
            "user_name": b.get("user_name") or b.get("user_id") or "?",
            "last_message_at": b.get("last_message_at"),
        }
        for b in store.session_samples.recent(agent_id, limit=RECENT_SESSIONS)
    ]


def session_plan(
    *, store: MemoryStore, agent_id: str, session_id: str, draft: Draft | None
) -> ExtractionPlan:
    buffer = store.sessions.get_buffer(agent_id, session_id)
    messages = store.session_samples.latest_messages(
        agent_id, session_id, limit=MAX_CONVERSATION_LINES
    )
    if buffer is None or not messages:
        raise InvalidInput("that session has no messages", details=[{"field": "session"}])
    return plan_extraction(
        store=store, buffer=buffer, messages=messages, settings=FormationSettings(), draft=draft
    )


def session_conversation(*, store: MemoryStore, agent_id: str, session_id: str) -> tuple[str, str]:
    """A recent session as a pasted conversation ("role: text" per line) and its user's
    name: what "Save this conversation as a check" stores when a session was picked."""
    buffer = store.sessions.get_buffer(agent_id, session_id)
    messages = store.session_samples.latest_messages(
        agent_id, session_id, limit=MAX_CONVERSATION_LINES
    )
    if buffer is None or not messages:
        raise InvalidInput("that session has no messages", details=[{"field": "session"}])
    lines = [f"{m.role}: {' '.join(m.content.split())}" for m in messages if m.content.strip()]
    return "\n".join(lines), str(buffer.get("user_name") or buffer.get("user_id") or "")


def extraction_plan(
    *,
    store: MemoryStore,
    agent_id: str,
    conversation: str,
    user_name: str,
    draft: Draft | None,
    level: Scope | None = None,
) -> ExtractionPlan:
    user_id, groups = DRY_RUN_USER, []
    if level is not None and level.scope_type == "individual":
        user_id, groups = level.user_id or DRY_RUN_USER, list(level.groups)
        user_name = user_name or level.label
    if level is not None and level.scope_type == "group":
        groups = [{"id": level.group_id or "", "name": level.label}]
    user_name = user_name or "User"
    now = utcnow()
    lines = parse_conversation(conversation)
    messages = [
        BufferedMessage(
            agent_id=agent_id,
            session_id="dry-run",
            message_id=str(i),
            role=role,
            content=content,
            created_at=now - timedelta(seconds=len(lines) - i),
            weighted_tokens=weighted_tokens(role, content),  # the cap grows with them
        )
        for i, (role, content) in enumerate(lines)
    ]
    buffer = {"agent_id": agent_id, "user_id": user_id, "user_name": user_name, "groups": groups}
    return plan_extraction(
        store=store, buffer=buffer, messages=messages, settings=FormationSettings(), draft=draft
    )


def run_extraction_plan(
    llm: LLMProvider, plan: ExtractionPlan, *, model: str | None = None
) -> DryRunResult:
    """One extraction call of `plan` (with `model`: that model instead of the agent's)."""
    result = _call(llm, extraction_request(plan, model=model), plan.resolved.template)
    if result.text is None:
        return result
    try:
        stored, _dropped = parse_extraction(
            result.text,
            plan=plan,
            max_items=plan.context.max_observations,
            max_words=plan.context.max_words,
        )
    except LLMError as exc:
        return _with(result, error=f"The answer would fail the formation: {exc}")
    items = [{"scope": scope_label(key, name), "content": content} for key, name, content in stored]
    return _with(result, items=items, why_nothing=[] if items else _why_nothing(plan, _dropped))


def _why_nothing(plan: ExtractionPlan, dropped: int) -> list[str]:
    """Why a formation of this conversation would store nothing, in words for the page."""
    reasons = []
    if dropped:
        reasons.append(
            f"the model proposed {dropped} fact{'s' if dropped != 1 else ''}, and every one "
            "was dropped (a scope label not offered, longer than its place's word limit, "
            "past its place's cap, or repeated)"
        )
    else:
        reasons.append("the model found no candidate facts in this conversation")
    users = sum(1 for line in plan.context.lines if line.role == "user")
    minimum = FormationSettings().min_messages
    if len(plan.context.lines) < minimum:
        reasons.append(
            f"a real formation also waits for {minimum} messages (this has "
            f"{len(plan.context.lines)}) unless one asks to remember"
        )
    if not users:
        reasons.append("no line is the user's: only user lines hold facts about them")
    return reasons


def dry_run_consolidation(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    scope: Scope,
    draft: Draft | None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    model: str | None = None,
) -> DryRunResult:
    """What a consolidation run would write now from the scope's pending observations: the
    run's own folds chunk after chunk, overshoot retry and contradiction pass (what would
    be held for review is only left out, never flagged); InvalidInput when nothing is
    pending."""
    _live, folded = consolidation_inputs(store=store, scope=scope)
    if not folded:
        raise InvalidInput(
            "the scope has no pending observations to dry-run on", details=[{"field": "scope"}]
        )
    template = resolve_template(
        store=store, agent_id=scope.agent_id, kind="consolidation", scope=scope, draft=draft
    )
    shared = scope.scope_type != "individual"
    asked: list[LLMRequest] = []
    plan = chunk_plan(
        store=store, scope=scope, observations=folded, budget=chunk_tokens, draft=draft
    )
    chunks = [len(chunk) for chunk in plan.chunks]
    try:
        text, details, _reported, _held = consolidation_pass(
            store=store,
            llm=llm,
            scope=scope,
            folded=folded,
            hold=lambda pairs: contradiction_holds(shared=shared, observations=folded, pairs=pairs),
            draft=draft,
            asked=asked,
            chunking=Chunking(tokens=chunk_tokens),
            model=model,
        )
    except LLMError as exc:
        prompt = asked[0].prompt if asked else ""
        error = f"The LLM call failed: {exc}"
        return DryRunResult(
            prompt=prompt, part=template, error=error, requests=asked, chunks=chunks
        )
    return DryRunResult(
        prompt=asked[0].prompt,
        part=template,
        text=text,
        model=details.model,
        duration_ms=details.duration_ms,
        requests=asked,
        chunks=chunks,
    )


def dry_run_propagation(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    scope: Scope,
    draft: Draft | None,
    model: str | None = None,
) -> DryRunResult:
    """What propagating the observations the scope's latest consolidation absorbed would copy,
    and where; InvalidInput when there is nothing to propagate."""
    if scope.consolidation_version < 1:
        raise InvalidInput(
            "the scope has not been consolidated yet: nothing was absorbed to propagate",
            details=[{"field": "scope"}],
        )
    plan = propagation_plan(
        store=store, source=scope, version=scope.consolidation_version, draft=draft
    )
    if plan.request is None:
        raise InvalidInput(
            "nothing to propagate: the latest consolidation absorbed no shareable observation, "
            "or this scope has nowhere to propagate to",
            details=[{"field": "scope"}],
        )
    request = plan.request if model is None else replace(plan.request, model=model)
    result = _call(llm, request, plan.template)
    if result.text is None:
        return result
    try:
        copies = propagation_copies(result.text, source=scope, plan=plan)
    except LLMError as exc:
        return _with(result, error=f"The answer would fail the propagation: {exc}")
    names = dict(plan.targets.values())
    items = [
        {"scope": scope_label(key, names.get(key)), "content": copy.content} for key, copy in copies
    ]
    return _with(result, items=items)


def scope_label(key: ScopeKey, display_name: str | None) -> str:
    """The label an item is routed by: individual, group:<name>, collective, shard:<name>."""
    if key.scope_type == "individual":
        return "individual"
    if key.scope_type == "group":
        return f"group:{display_name or key.group_id}"
    return f"shard:{key.name}" if key.name else "collective"


def routing_table(current: DryRunResult, edited: DryRunResult) -> list[dict[str, Any]]:
    """Per scope, what each side would store there: the routing change at a glance."""
    labels = sorted({i["scope"] for i in [*current.items, *edited.items]})
    rows = []
    for label in labels:
        before = [i["content"] for i in current.items if i["scope"] == label]
        after = [i["content"] for i in edited.items if i["scope"] == label]
        rows.append({"scope": label, "current": before, "edited": after, "same": before == after})
    return rows


def parse_conversation(text: str) -> list[tuple[str, str]]:
    """(role, content) per message: "role: text" lines; a line without a known role
    continues the message before it."""
    lines: list[tuple[str, str]] = []
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw:
            continue
        role, _, content = raw.partition(":")
        role = role.strip().lower()
        if role in ROLES and content.strip():
            lines.append((role, content.strip()))
        elif lines:
            lines[-1] = (lines[-1][0], f"{lines[-1][1]}\n{raw}")
        else:
            lines.append(("user", raw))
    if not lines:
        raise InvalidInput(
            'paste a conversation: one message per line, like "user: ..."',
            details=[{"field": "conversation"}],
        )
    if len(lines) > MAX_CONVERSATION_LINES:
        raise InvalidInput(
            f"at most {MAX_CONVERSATION_LINES} messages per dry run",
            details=[{"field": "conversation"}],
        )
    return lines


def _call(llm: LLMProvider, request: LLMRequest, part: PromptPart) -> DryRunResult:
    try:
        answer = llm.complete(request)
    except LLMError as exc:
        return DryRunResult(
            prompt=request.prompt,
            part=part,
            error=f"The LLM call failed: {exc}",
            requests=[request],
        )
    return DryRunResult(
        prompt=request.prompt,
        part=part,
        text=answer.text.strip(),
        model=answer.model,
        duration_ms=answer.duration_ms,
        requests=[request],
    )


def _with(result: DryRunResult, **changes: Any) -> DryRunResult:
    return replace(result, **changes)
