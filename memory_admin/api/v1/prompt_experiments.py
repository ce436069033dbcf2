"""Prompt experiments: a draft beside the prompt in effect over a scope's recent real
inputs, as a background job within a token budget; the estimate first, the list, re-run.

Permissions as prompt checks: starting, estimating and re-running need `write`, reading
needs `read`; a key limited to agents sees only theirs (another agent's is a 404).
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import (
    ExternalId,
    InSchema,
    JobOut,
    PageQuery,
    Prompt,
    Time,
    error_responses,
)
from memory_admin.stores import get_store
from streams.actions.prompt_experiments import (
    do_prompt_experiment_rerun,
    do_prompt_experiment_start,
)
from streams.core.documents import Job
from streams.drafts.experiment_views import experiment_get, experiment_page
from streams.drafts.experiments import (
    MAX_BUDGET_TOKENS,
    MAX_SESSIONS,
    experiment_estimate,
    experiment_input,
)

router = Router(tags=["prompt experiments"])
ExperimentKind = Literal["extraction", "consolidation", "propagation"]


class ExperimentIn(InSchema):
    kind: ExperimentKind = Field(..., description="The prompt the draft is for.")
    scope_id: ExternalId = Field(..., description="The scope whose recent inputs it runs on.")
    draft: Prompt = Field(..., description="The draft template (the same rules as a save).")
    sessions: int = Field(
        ...,
        ge=1,
        le=MAX_SESSIONS,
        description="How many inputs: the last N sessions (extraction), pending sets "
        "(consolidation) or versions (propagation).",
    )
    budget_tokens: int = Field(
        ...,
        gt=0,
        le=MAX_BUDGET_TOKENS,
        description="The cap on tokens, both sides; the run stops before an input that "
        "could pass it.",
    )


class EstimateOut(Schema):
    units: int = Field(..., description="Inputs found (at most `sessions`).")
    calls: int = Field(..., description="Model calls at most, both sides.")
    estimated_tokens: int = Field(..., description="Prompts plus answer caps, both sides.")
    estimated_cost_micro_usd: int | None = Field(
        ..., description="At the dearest priced model's rate; null without a price table."
    )
    budget_tokens: int
    within_budget: bool
    units_within_budget: int = Field(..., description="Inputs the budget covers, in order.")
    per_unit: list[dict[str, Any]] = Field(
        ..., description="Each input, newest first: label, calls, estimated_tokens."
    )


class ExperimentRowOut(Schema):
    id: str
    agent_id: str
    kind: str
    scope_id: str
    scope_label: str
    status: str = Field(..., description="queued, running, succeeded or failed")
    job_id: str | None
    sessions: int
    budget_tokens: int
    draft_level: str = Field(..., description="Where the draft stands: agent or scope.")
    in_effect: dict[str, Any] = Field(..., description="The template it was compared with.")
    estimate: dict[str, Any]
    summary: dict[str, Any] | None = Field(
        ...,
        description="Once run: planned, covered, stopped (null or budget), spent_tokens, "
        "failed_units, routing_changes and per side (draft, in_effect) totals.",
    )
    rerun_of: str | None
    author: str
    created_at: Time
    finished_at: Time | None


class ExperimentOut(ExperimentRowOut):
    draft: str
    units: list[dict[str, Any]] = Field(
        ...,
        description="Per input: label, session_id or version, draft and in_effect (text, "
        "items, stored, flags, duplicates, words, fidelity, coverage, tokens, cost, "
        "error), routing_changes, tokens, failed, withheld.",
    )


class StartedOut(Schema):
    experiment: ExperimentOut
    job: JobOut


class ExperimentPageOut(Schema):
    items: list[ExperimentRowOut]
    next_cursor: str | None


class ExperimentListQuery(PageQuery):
    kind: ExperimentKind | None = None


@router.post(
    "/agents/{agent_id}/prompt-experiments/estimate",
    auth=needs("write"),
    response={200: EstimateOut, **error_responses(400, 401, 404, 422)},
)
def estimate_experiment(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ExperimentIn
) -> dict[str, Any]:
    """What the experiment would cost at most, before any model call."""
    require_agent(request, agent_id)
    store = get_store()
    given = experiment_input(store=store, agent_id=agent_id, **payload.model_dump())
    return experiment_estimate(store=store, given=given)


@router.post(
    "/agents/{agent_id}/prompt-experiments",
    auth=needs("write"),
    response={202: StartedOut, **error_responses(400, 401, 404, 422)},
)
def start_experiment(
    request: HttpRequest, agent_id: Path[ExternalId], payload: ExperimentIn
) -> Status:
    """Queue the experiment; its job runs both prompts and fills in the result."""
    require_agent(request, agent_id)
    experiment, job = do_prompt_experiment_start(
        store=get_store(), actor=api_actor(request), agent_id=agent_id, **payload.model_dump()
    )
    return Status(202, _started(experiment, job))


@router.get(
    "/agents/{agent_id}/prompt-experiments",
    auth=needs("read"),
    response={200: ExperimentPageOut, **error_responses(401, 404, 422)},
)
def list_experiments(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[ExperimentListQuery]
) -> dict[str, Any]:
    """The agent's experiments, newest first, without their inputs."""
    require_agent(request, agent_id)
    page = experiment_page(
        store=get_store(),
        agent_id=agent_id,
        kind=filters.kind,
        cursor=filters.cursor,
        limit=filters.limit,
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.get(
    "/prompt-experiments/{experiment_id}",
    auth=needs("read"),
    response={200: ExperimentOut, **error_responses(401, 404)},
)
def get_experiment(request: HttpRequest, experiment_id: ExternalId) -> dict[str, Any]:
    """The experiment: its inputs, both answers of each and the totals."""
    return experiment_get(
        store=get_store(), experiment_id=experiment_id, agent_ids=visible_agents(request)
    )


@router.post(
    "/prompt-experiments/{experiment_id}/rerun",
    auth=needs("write"),
    response={202: StartedOut, **error_responses(401, 404, 422)},
)
def rerun_experiment(request: HttpRequest, experiment_id: ExternalId) -> Status:
    """The same draft, scope, size and budget again, against the prompt in effect now."""
    experiment, job = do_prompt_experiment_rerun(
        store=get_store(),
        actor=api_actor(request),
        experiment_id=experiment_id,
        agent_ids=visible_agents(request),
    )
    return Status(202, _started(experiment, job))


def _started(experiment: dict[str, Any], job: Job) -> dict[str, Any]:
    return {"experiment": experiment, "job": job}
