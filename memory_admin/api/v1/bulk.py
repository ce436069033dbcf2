"""Bulk actions by filter: delete, mark private, or move observations of one agent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema, Status
from pydantic import StrictBool, StrictInt, StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import (
    NOT_BLANK,
    ExternalId,
    InSchema,
    IsoTime,
    JobIdOut,
    ObservationOut,
    PageQuery,
    error_responses,
)
from memory_admin.api.v1.search import ScopeNameOut
from memory_admin.stores import get_store
from streams.actions.bulk import do_bulk_undo, do_observations_bulk
from streams.memory.bulk import MAX_QUERY_CHARS, UNUSED_DAYS_RANGE, BulkFilter
from streams.memory.unused import unused_report

router = Router(tags=["observations"])

ObjectIdText = Annotated[str, StringConstraints(min_length=1, max_length=64)]
QueryText = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NOT_BLANK)
]


class BulkFilterIn(InSchema):
    scope_id: ObjectIdText | None = None
    session_id: ExternalId | None = None
    speaker_user_id: ExternalId | None = Field(
        None, description="A person the observation came from (its `related_user_ids`)."
    )
    q: QueryText | None = Field(None, description="Text the content holds (any case).")
    observed_after: IsoTime | None = Field(None, description="Observed at or after (inclusive).")
    observed_before: IsoTime | None = Field(None, description="Observed before (exclusive).")
    status: Literal["pending", "consolidated", "all"] | None = None
    unused_days: Annotated[StrictInt, Field(ge=1, le=3650)] | None = Field(
        None,
        description="Only observations no context or search retrieved in this many days "
        "(and older than that).",
    )


class BulkIn(InSchema):
    filter: BulkFilterIn
    action: Literal["delete", "private", "move"]
    target_scope_id: ObjectIdText | None = Field(None, description="Where a move files to.")
    dry_run: StrictBool = Field(True, description="Count and sample only (the default).")


class BulkOut(Schema):
    matched: int
    sample: list[ObservationOut] = Field(
        ..., description="At most 20 of the matched, newest first."
    )
    job_id: str | None = Field(..., description="The `bulk` job of a real run; null otherwise.")


@router.post(
    "/agents/{agent_id}/observations/bulk",
    auth=needs("write"),
    response={200: BulkOut, **error_responses(400, 401, 404, 422)},
)
def bulk_observations(
    request: HttpRequest, agent_id: Path[ExternalId], payload: BulkIn
) -> dict[str, Any]:
    """Delete, mark private or move (to another active scope of the same agent) every
    observation the filter matches: at least one filter field, at most `MEMORY_BULK_MAX`
    matched (else 422). `dry_run` (the default) answers the count and a sample; a real
    run answers the same with the `bulk` job that applies it in batches (one audit entry
    with the filter and the count; one rebuild per scope whose consolidation held the text).
    """
    require_agent(request, agent_id)
    outcome = do_observations_bulk(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        bulk_filter=BulkFilter(**payload.filter.model_dump()),
        action=payload.action,
        target_scope_id=payload.target_scope_id,
        dry_run=payload.dry_run,
        max_matched=settings.MEMORY_BULK_MAX,
        batch_size=settings.MEMORY_BULK_BATCH,
        visible_agents=visible_agents(request),
    )
    return {
        "matched": outcome.matched,
        "sample": outcome.sample,
        "job_id": outcome.job.id if outcome.job is not None else None,
    }


@router.post(
    "/bulk/{job_id}/undo",
    auth=needs("write"),
    response={202: JobIdOut, **error_responses(401, 404, 409)},
)
def undo_bulk(request: HttpRequest, job_id: str) -> Status[dict[str, str]]:
    """Take a finished bulk action back within `MEMORY_BULK_UNDO_SECONDS` (default 900)
    of its end, as one `bulk_undo` job: deleted observations are restored through the
    screen (not those of a user forgotten since), moved ones moved back, private ones made
    public; one rebuild per scope whose consolidation changes. 404: no such bulk job;
    409: not finished, undone already (`undo_unavailable`), or too late (`undo_expired`)."""
    job = do_bulk_undo(
        store=get_store(),
        actor=api_actor(request),
        bulk_job_id=job_id,
        visible_agents=visible_agents(request),
    )
    return Status(202, {"job_id": job.id})


class UnusedQuery(PageQuery):
    days: int = Field(
        30,
        ge=UNUSED_DAYS_RANGE[0],
        le=UNUSED_DAYS_RANGE[1],
        description="N: not retrieved in N days.",
    )


class UnusedScopeOut(Schema):
    scope: ScopeNameOut
    unused: int = Field(..., description="Live observations not retrieved in `days` days.")
    observations: int = Field(..., description="Live observations in the scope.")


class UnusedOut(Schema):
    days: int
    items: list[UnusedScopeOut]
    next_cursor: str | None


@router.get(
    "/agents/{agent_id}/unused",
    auth=needs("read"),
    response={200: UnusedOut, **error_responses(401, 404, 422)},
)
def unused_memory(
    request: HttpRequest, agent_id: Path[ExternalId], filters: Query[UnusedQuery]
) -> dict[str, Any]:
    """Per scope of the agent (newest first, paginated): how many live observations no
    context or search retrieved in the last `days` days (and that are older than that).
    The bulk filter `unused_days` takes the same observations."""
    require_agent(request, agent_id)
    page = unused_report(
        store=get_store(),
        agent_id=agent_id,
        days=filters.days,
        cursor=filters.cursor,
        limit=filters.limit,
    )
    items = [
        {"scope": row.scope, "unused": row.unused, "observations": row.observations}
        for row in page.items
    ]
    return {"days": filters.days, "items": items, "next_cursor": page.next_cursor}
