"""Corrections: what support corrected, per prompt kind; a check made of one; a prompt
change suggested from them (issue 38, item 5). Texts are shown through the visibility
rule (`streams.drafts.corrections`): `before`/`after` are null, and `withheld` says why,
once they are no longer memory's visible text."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema, Status
from pydantic import StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.prompt_checks import CheckOut, check_out
from memory_admin.api.v1.schemas import ExternalId, InSchema, PageQuery, error_responses
from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import get_store
from streams.actions.corrections import do_correction_check
from streams.core.exceptions import NotFound
from streams.drafts.corrections import ShownCorrection, corrections_page, prompt_suggest
from streams.memory.scopes import scope_get

router = Router(tags=["corrections"])
Kind = Literal["extraction", "consolidation", "propagation"]


class CorrectionQuery(PageQuery):
    kind: Kind = Field("extraction", description="The prompt kind whose corrections to list.")
    scope_id: Annotated[str, StringConstraints(max_length=24)] | None = Field(
        None,
        description="Only what this scope's prompt made: observations of this scope "
        "(extraction), copies made from its observations (propagation).",
    )


class SourceLineOut(Schema):
    message_id: str
    role: str
    speaker: str
    text: str
    at: str


class CorrectionOut(Schema):
    id: str
    what: str = Field(..., description="edit, delete, private, move or reject")
    observation_id: str
    scope_id: str
    scope_type: str = Field(..., description="individual, group, collective or shard")
    scope_label: str
    actor: str
    created_at: str
    reason: str | None
    prompt_kind: str | None
    prompt_version: int | None = Field(..., description="0: the code default; null: unknown")
    job_id: str | None
    session_id: str | None
    target_scope_id: str | None
    target_label: str | None
    before: str | None
    after: str | None
    withheld: str | None = Field(
        ..., description="Why a text is null: deleted, expired, edited (replaced), gone"
    )
    private: bool
    source_lines: list[SourceLineOut]


class CorrectionPageOut(Schema):
    items: list[CorrectionOut]
    next_cursor: str | None


class SuggestIn(InSchema):
    scope_id: Annotated[str, StringConstraints(max_length=24)] | None = Field(
        None, description="The level the draft is for: none (agent default) or a scope."
    )


class SuggestionOut(Schema):
    kind: str
    scope_id: str | None
    draft: str
    why: str
    model: str
    correction_ids: list[str]


@router.get(
    "/agents/{agent_id}/corrections",
    auth=needs("read"),
    response={200: CorrectionPageOut, **error_responses(401, 404, 422)},
)
def list_corrections(
    request: HttpRequest, agent_id: Path[ExternalId], query: Query[CorrectionQuery]
) -> dict[str, Any]:
    """Corrections of one prompt kind (optionally one scope), newest first."""
    require_agent(request, agent_id)
    page = corrections_page(
        store=get_store(),
        agent_id=agent_id,
        kind=query.kind,
        scope_id=query.scope_id,
        cursor=query.cursor,
        limit=query.limit,
    )
    return {"items": [correction_out(s) for s in page.items], "next_cursor": page.next_cursor}


@router.post(
    "/corrections/{correction_id}/check",
    auth=needs("write"),
    response={201: CheckOut, **error_responses(401, 404, 409, 422)},
)
def make_check(request: HttpRequest, correction_id: str) -> Status:
    """The prompt check the correction implies (its source lines, and e.g. `not_contains`
    the deleted text, `contains` the edited text, `lands_in` the move's target)."""
    check = do_correction_check(
        store=get_store(),
        actor=api_actor(request),
        correction_id=correction_id,
        agent_ids=visible_agents(request),
    )
    return Status(201, check_out(check))


@router.post(
    "/agents/{agent_id}/prompts/{kind}/suggest",
    auth=needs("write"),
    response={200: SuggestionOut, **error_responses(401, 404, 422, 503)},
)
def suggest(
    request: HttpRequest, agent_id: Path[ExternalId], kind: Path[Kind], payload: SuggestIn
) -> dict[str, Any]:
    """One model call with the newest corrections as examples: a draft (nothing saved).
    Save it like any prompt (its checks run; `save_anyway` for one that fails them)."""
    require_agent(request, agent_id)
    store = get_store()
    scope = None
    if payload.scope_id:
        scope = scope_get(store=store, scope_id=payload.scope_id, agent_ids=frozenset({agent_id}))
        if kind == "propagation" and scope.scope_type == "collective":
            raise NotFound("the collective memory does not propagate")
    suggestion = prompt_suggest(
        store=store, llm=get_llm_provider(), agent_id=agent_id, kind=kind, scope=scope
    )
    return {
        "kind": suggestion.kind,
        "scope_id": suggestion.scope_id,
        "draft": suggestion.text,
        "why": suggestion.why,
        "model": suggestion.model,
        "correction_ids": suggestion.correction_ids,
    }


def correction_out(shown: ShownCorrection) -> dict[str, Any]:
    c = shown.correction
    return {
        "id": c.id,
        "what": c.what,
        "observation_id": c.observation_id,
        "scope_id": c.scope_id,
        "scope_type": c.scope_kind,
        "scope_label": c.scope_label,
        "actor": c.actor,
        "created_at": c.created_at.isoformat(),
        "reason": c.reason,
        "prompt_kind": c.prompt_kind,
        "prompt_version": c.prompt_version,
        "job_id": c.job_id,
        "session_id": c.session_id,
        "target_scope_id": c.target_scope_id,
        "target_label": c.target_label,
        "before": shown.before,
        "after": shown.after,
        "withheld": shown.withheld,
        "private": shown.private,
        "source_lines": [
            {
                "message_id": line.message_id,
                "role": line.role,
                "speaker": line.speaker,
                "text": line.text,
                "at": line.at.isoformat(),
            }
            for line in shown.lines
        ],
    }
