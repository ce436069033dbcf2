"""Bulk actions by filter: delete, mark private, or move observations of one agent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from pydantic import StrictBool, StringConstraints

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import (
    NOT_BLANK,
    ExternalId,
    InSchema,
    IsoTime,
    ObservationOut,
    error_responses,
)
from memory_admin.stores import get_store
from streams.actions.bulk import do_observations_bulk
from streams.memory.bulk import MAX_QUERY_CHARS, BulkFilter

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
