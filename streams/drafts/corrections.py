"""Corrections on the prompt page: listed through the visibility rule, turned into a
prompt check, and used as examples by "Suggest a change" (issue 38, item 5).

What a correction shows is what the observation shows now (`streams.core.visibility`):
a text is printed only while it is the observation's current, visible text. So a
delete correction shows its reason, who, when, the scope and the prompt version, but
not the deleted words nor the lines they came from; an edit shows the new text, not the
old; a forgotten user's corrections are gone (`corrections_forget_user`). "Make a check"
and "Suggest a change" read the stored record, because that is the evidence: the
operator's click copies a text into a check on purpose (forget-user removes those checks
with the corrections), and the suggestion's examples go to the model, never to a page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from streams.core.documents import PROMPT_KINDS, Observation, Scope
from streams.core.exceptions import InvalidInput, NotFound, Unavailable
from streams.core.ids import require_object_id
from streams.core.pagination import MAX_LIMIT, Page, decode_cursor, encode_cursor
from streams.core.visibility import removal
from streams.llm.json_answer import read_json_answer
from streams.llm.port import CorrectionExample, LLMError, LLMProvider, SuggestionContext
from streams.memory.provenance import CitedLine, cited_lines
from streams.memory.requests import suggestion_request
from streams.prompts import resolve_for_scope, resolve_template, validate_prompt
from streams.prompts.versions import prompt_role
from streams.records.corrections import Correction
from streams.store import MemoryStore

DEFAULT_PAGE = 20
MAX_PAGE = MAX_LIMIT
MAX_EXAMPLES = 20  # corrections one suggestion call shows the model
VALUE_CHARS = 200  # a check expectation's longest value (`prompt_checks.MAX_VALUE_CHARS`)


@dataclass(frozen=True)
class ShownCorrection:
    """A correction as a surface may show it: texts only while they are memory's own."""

    correction: Correction
    before: str | None
    after: str | None
    withheld: str | None  # why a text is not shown: deleted, expired, edited, gone
    private: bool
    lines: list[CitedLine]


@dataclass(frozen=True)
class Suggestion:
    """A draft proposed from corrections, for the editor (nothing is saved)."""

    kind: str
    scope_id: str | None
    text: str
    why: str
    model: str
    correction_ids: list[str]


def corrections_page(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    scope_id: str | None = None,
    cursor: str | None = None,
    limit: int = DEFAULT_PAGE,
) -> Page[ShownCorrection]:
    """One page of an agent's corrections of one prompt kind (optionally one scope),
    newest first, each read through the visibility rule."""
    if kind not in PROMPT_KINDS:
        raise InvalidInput(
            f"kind must be one of {', '.join(PROMPT_KINDS)}", details=[{"field": "kind"}]
        )
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit is 1 to {MAX_PAGE}", details=[{"field": "limit"}])
    scope_oid = require_object_id(scope_id, what="scope") if scope_id else None
    position = decode_cursor(cursor, required_keys=("before",))
    before = position["before"] if position else None
    if before is not None and not isinstance(before, int):
        raise InvalidInput("cursor is not one this list handed out", details=[{"field": "cursor"}])
    page = store.corrections.page(
        agent_id=agent_id, prompt_kind=kind, scope_id=scope_oid, before=before, limit=limit
    )
    corrections = [Correction.from_mongo(d) for d in page.docs]
    next_cursor = encode_cursor({"before": page.next_before}) if page.next_before else None
    return Page(
        items=corrections_shown(store=store, corrections=corrections), next_cursor=next_cursor
    )


def corrections_shown(
    *, store: MemoryStore, corrections: list[Correction]
) -> list[ShownCorrection]:
    """Each correction with what its observation lets a surface show now."""
    ids = list({ObjectId(c.observation_id) for c in corrections})
    current = {o.id: o for o in store.observations.get_many(ids)}
    lines = cited_lines(store=store, observations=list(current.values()))
    shown = []
    for c in corrections:
        observation = current.get(c.observation_id)
        reason = _withheld(observation)
        if observation is None or reason is not None:
            shown.append(ShownCorrection(c, None, None, reason, False, []))
            continue
        before = c.before if c.before == observation.content else None
        after = c.after if c.after == observation.content else None
        edited = (c.before is not None and before is None) or (
            c.after is not None and after is None
        )
        cited = lines.get(observation.id)
        shown.append(
            ShownCorrection(
                correction=c,
                before=before,
                after=after,
                withheld="edited" if edited else None,
                private=observation.private,
                lines=cited.lines if cited else [],
            )
        )
    return shown


def _withheld(observation: Observation | None) -> str | None:
    if observation is None:
        return "gone"  # purged, or its user forgotten
    return removal(observation)


def correction_get(
    *, store: MemoryStore, correction_id: str, agent_ids: frozenset[str] | None
) -> Correction:
    """One correction of an agent the caller sees (`agent_ids` None: every agent);
    NotFound for an unknown id or another agent's."""
    doc = store.corrections.get(require_object_id(correction_id, what="correction"))
    if doc is None or (agent_ids is not None and doc["agent_id"] not in agent_ids):
        raise NotFound("correction not found")
    return Correction.from_mongo(doc)


def correction_check_spec(*, store: MemoryStore, correction: Correction) -> dict[str, Any]:
    """What `check_create` takes to make a prompt check of this correction: the source
    lines (extraction) or the copied observation (propagation) as input, and the
    expectation the correction implies. InvalidInput when it implies none."""
    c = correction
    name = f"{c.what} {c.created_at:%Y-%m-%d} ({c.id[-6:]})"
    common = {"name": name, "correction_id": c.id, "user_ids": list(c.user_ids)}
    if c.prompt_kind == "extraction":
        conversation, user_name, speakers = _source_conversation(store, c)
        return {
            **common,
            # The check holds what they said: forgetting any speaker removes it.
            "user_ids": sorted({*c.user_ids, *speakers}),
            "kind": "extraction",
            "conversation": conversation,
            "user_name": user_name,
            "expectations": [_extraction_expectation(c)],
            "scope_id": c.scope_id if c.scope_kind == "individual" else None,
        }
    if c.prompt_kind == "propagation":
        return {
            **common,
            "kind": "propagation",
            "conversation": _copied_from(store, c),
            "user_name": "User",
            "expectations": [_propagation_expectation(c)],
            "scope_id": None,
        }
    raise _no_check("it was not made by a prompt (added by hand or imported)")


def _no_check(why: str) -> InvalidInput:
    return InvalidInput(
        f"this correction makes no check: {why}", details=[{"field": "correction_id"}]
    )


def _prefix(text: str | None) -> str:
    """A text cut to a check value's length at a word (a prefix still matches as a part)."""
    text = " ".join((text or "").split())
    if len(text) <= VALUE_CHARS:
        return text
    return text[:VALUE_CHARS].rsplit(" ", 1)[0]


def _extraction_expectation(c: Correction) -> dict[str, str]:
    if c.what == "edit":
        return {"type": "contains", "value": _prefix(c.after)}
    if c.what in ("delete", "reject"):
        return {"type": "not_contains", "value": _prefix(c.before)}
    if c.what == "move" and c.target_label:
        return {"type": "lands_in", "value": c.target_label}
    raise _no_check("marking private says nothing about what extraction files where")


def _propagation_expectation(c: Correction) -> dict[str, str]:
    if c.what in ("delete", "reject"):
        return {"type": "nothing_personal", "value": _prefix(c.before)}
    if c.what == "move" and c.target_label and not c.target_label.startswith("individual"):
        return {"type": "lands_in", "value": c.target_label.replace("shard:", "")}
    raise _no_check(f"a propagation check cannot say what a copy's {c.what} means")


def _source_conversation(store: MemoryStore, c: Correction) -> tuple[str, str, set[str]]:
    """The lines the observation was extracted from, as a check's conversation, its user's
    name, and who spoke them."""
    messages = (
        store.sessions.messages_by_id(c.agent_id, c.session_id, c.message_ids)
        if c.session_id
        else []
    )
    if not messages:
        raise _no_check("its source lines are no longer kept")
    conversation = "\n".join(f"{m.role}: {' '.join(m.content.split())}" for m in messages)
    user_name = next((m.user_name for m in messages if m.role == "user" and m.user_name), None)
    speakers = {m.user_id for m in messages if m.role == "user" and m.user_id}
    return conversation, user_name or "User", speakers


def _copied_from(store: MemoryStore, c: Correction) -> str:
    """A propagated copy's source observation, the input of a propagation check."""
    copy = store.observations.get(ObjectId(c.observation_id))
    source_id = copy.propagated_from if copy is not None else None
    source = store.observations.get(ObjectId(source_id)) if source_id else None
    if source is None or source.deleted:
        raise _no_check("the observation it was copied from is gone")
    return source.content


def prompt_suggest(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    agent_id: str,
    kind: str,
    scope: Scope | None,
) -> Suggestion:
    """One model call (metaprompt) with the newest corrections of this prompt as examples:
    a draft of the whole prompt for the editor. Unavailable when the model fails or
    answers no usable prompt; nothing is saved either way."""
    if kind not in PROMPT_KINDS:
        raise InvalidInput(
            f"kind must be one of {', '.join(PROMPT_KINDS)}", details=[{"field": "kind"}]
        )
    docs = store.corrections.page(
        agent_id=agent_id,
        prompt_kind=kind,
        scope_id=ObjectId(scope.id) if scope else None,
        before=None,
        limit=MAX_EXAMPLES,
    ).docs
    corrections = [Correction.from_mongo(d) for d in docs]
    if not corrections:
        raise InvalidInput(
            f"no corrections of the {kind} prompt here yet: nothing to learn from",
            details=[{"field": "kind"}],
        )
    context = SuggestionContext(
        kind=kind,
        template=_level_text(store, agent_id, kind, scope),
        examples=[_example(store, c) for c in corrections],
    )
    try:
        answer = llm.complete(suggestion_request(context))
        value = read_json_answer(answer.text, what="suggestion").value
    except LLMError as exc:
        raise Unavailable(f"the model could not suggest a change: {exc}") from exc
    text = str(value.get("prompt") or "").strip() if isinstance(value, dict) else ""
    if not text:
        raise Unavailable("the model could not suggest a change: its answer held no prompt")
    try:
        text = validate_prompt(kind, scope, text)
    except InvalidInput as exc:
        raise Unavailable(f"the model suggested a prompt that cannot be used: {exc}") from exc
    return Suggestion(
        kind=kind,
        scope_id=scope.id if scope else None,
        text=text,
        why=str(value.get("why") or "")[:500],
        model=answer.model,
        correction_ids=[c.id for c in corrections],
    )


def _level_text(store: MemoryStore, agent_id: str, kind: str, scope: Scope | None) -> str:
    """What this level holds in effect: its template, or a shared scope's guidance."""
    if scope is not None and prompt_role(kind, scope) == "guidance":  # type: ignore[arg-type]
        resolved = resolve_for_scope(store=store, scope=scope)["extraction"]
        return resolved.guidance[0].text if resolved is not None else ""
    return resolve_template(store=store, agent_id=agent_id, kind=kind, scope=scope).text


def _example(store: MemoryStore, c: Correction) -> CorrectionExample:
    messages = (
        store.sessions.messages_by_id(c.agent_id, c.session_id, c.message_ids)
        if c.session_id
        else []
    )
    return CorrectionExample(
        what=c.what,
        before=c.before,
        after=c.after,
        reason=c.reason,
        target=c.target_label,
        lines=[f"{m.role}: {' '.join(m.content.split())}" for m in messages][:10],
    )
