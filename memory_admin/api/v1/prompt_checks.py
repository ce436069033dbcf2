"""Prompt checks: saved extraction test cases, and running them (for a team's own CI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema, Status
from pydantic import StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, InSchema, Prompt, error_responses
from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import get_store
from streams.actions.prompts import do_prompt_check_create, do_prompt_check_delete
from streams.drafts.prompt_checks import CheckOutcome, PromptCheck, check_list, checks_run
from streams.memory.scopes import scope_get
from streams.prompts import Draft, validate_prompt

router = Router(tags=["prompt checks"])
ShortText = Annotated[str, StringConstraints(max_length=200)]


class ExpectationIO(InSchema):
    type: Literal[
        "lands_in",
        "contains",
        "not_contains",
        "nothing",
        "keeps",
        "answers",
        "within_words",
        "nothing_personal",
    ] = Field(
        ...,
        description="extraction: lands_in, contains, not_contains, nothing; consolidation: "
        "keeps, not_contains, answers (a question), within_words (a number); propagation: "
        "nothing_personal (optionally a text no copy may hold), lands_in (a target).",
    )
    value: ShortText = ""


class CheckIn(InSchema):
    name: Annotated[str, StringConstraints(min_length=1, max_length=120)]
    conversation: Annotated[str, StringConstraints(min_length=1, max_length=20_000)] = Field(
        ..., description='One message per line, "user: ..." or "assistant: ...".'
    )
    user_name: Annotated[str, StringConstraints(max_length=128)] = "User"
    scope_id: Annotated[str, StringConstraints(max_length=24)] | None = Field(
        None, description="An individual scope whose groups the conversation runs with."
    )
    expectations: list[ExpectationIO] = Field(..., min_length=1, max_length=10)
    kind: Literal["extraction", "consolidation", "propagation"] = Field(
        "extraction",
        description="The prompt it checks; consolidation and propagation checks take "
        "observations, one per line, in `conversation`.",
    )


class CheckOut(Schema):
    id: str
    name: str
    conversation: str
    user_name: str
    scope_id: str | None
    expectations: list[dict[str, str]]
    author: str
    kind: str = "extraction"


class CheckListOut(Schema):
    items: list[CheckOut]


class RunIn(InSchema):
    kind: Literal["extraction", "consolidation", "propagation"] = Field(
        "extraction", description="Which prompt's checks run (each check has a kind)."
    )
    scope_id: Annotated[str, StringConstraints(max_length=24)] | None = Field(
        None, description="The level the draft is for: none (agent default) or a scope."
    )
    text: Prompt | None = Field(
        None, description="A draft to run beside the prompt in effect; none runs only the latter."
    )


class OutcomeOut(Schema):
    passed: bool
    failures: list[str]
    text: str | None = None
    items: list[dict[str, str]]


class CheckResultOut(Schema):
    id: str
    name: str
    in_effect: OutcomeOut
    draft: OutcomeOut | None
    regressed: bool


class RunOut(Schema):
    passed: bool = Field(..., description="Every check passes (on the draft, when one is given).")
    regressions: int = Field(..., description="Checks the prompt in effect passes, the draft not.")
    results: list[CheckResultOut]


@router.get(
    "/agents/{agent_id}/prompt-checks",
    auth=needs("read"),
    response={200: CheckListOut, **error_responses(401, 404)},
)
def list_checks(request: HttpRequest, agent_id: Path[ExternalId]) -> dict[str, Any]:
    """The agent's checks, oldest first (an agent has at most `MAX_CHECKS`)."""
    require_agent(request, agent_id)
    return {"items": [check_out(c) for c in check_list(store=get_store(), agent_id=agent_id)]}


@router.post(
    "/agents/{agent_id}/prompt-checks",
    auth=needs("write"),
    response={201: CheckOut, **error_responses(400, 401, 404, 422)},
)
def create_check(request: HttpRequest, agent_id: Path[ExternalId], payload: CheckIn) -> Status:
    require_agent(request, agent_id)
    check = do_prompt_check_create(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        name=payload.name,
        conversation=payload.conversation,
        user_name=payload.user_name,
        expectations=[e.model_dump() for e in payload.expectations],
        scope_id=payload.scope_id,
        kind=payload.kind,
    )
    return Status(201, check_out(check))


@router.post(
    "/agents/{agent_id}/prompt-checks/run",
    auth=needs("write"),
    response={200: RunOut, **error_responses(400, 401, 404, 422)},
)
def run_checks(request: HttpRequest, agent_id: Path[ExternalId], payload: RunIn) -> dict[str, Any]:
    """Run every check on the prompt in effect and, given `text`, on that draft; stores nothing."""
    require_agent(request, agent_id)
    store = get_store()
    level = None
    if payload.scope_id:
        level = scope_get(store=store, scope_id=payload.scope_id, agent_ids=frozenset({agent_id}))
    draft = None
    if payload.text is not None:
        draft = Draft(
            validate_prompt(payload.kind, level, payload.text), level.id if level else None
        )
    runs = checks_run(
        store=store,
        llm=get_llm_provider(),
        agent_id=agent_id,
        draft=draft,
        level=level,
        kind=payload.kind,
    )
    results = [
        {
            "id": r.check.id,
            "name": r.check.name,
            "in_effect": _outcome(r.current),
            "draft": _outcome(r.draft) if r.draft else None,
            "regressed": r.regressed,
        }
        for r in runs
    ]
    deciding = [r.draft or r.current for r in runs]
    return {
        "passed": all(o.passed for o in deciding),
        "regressions": sum(r.regressed for r in runs),
        "results": results,
    }


@router.delete(
    "/agents/{agent_id}/prompt-checks/{check_id}",
    auth=needs("write"),
    response={204: None, **error_responses(401, 404)},
)
def delete_check(request: HttpRequest, agent_id: Path[ExternalId], check_id: str) -> Status:
    require_agent(request, agent_id)
    do_prompt_check_delete(
        store=get_store(), actor=api_actor(request), agent_id=agent_id, check_id=check_id
    )
    return Status(204, None)


def check_out(check: PromptCheck) -> dict[str, Any]:
    return {
        "id": check.id,
        "name": check.name,
        "conversation": check.conversation,
        "user_name": check.user_name,
        "scope_id": check.scope_id,
        "expectations": [{"type": e.type, "value": e.value} for e in check.expectations],
        "author": check.author,
        "kind": check.kind,
    }


def _outcome(outcome: CheckOutcome) -> dict[str, Any]:
    return {
        "passed": outcome.passed,
        "failures": outcome.failures,
        "items": outcome.result.items,
        "text": outcome.result.text,
    }
