"""Jobs: the state of background work an earlier request started, the list, and retry."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, visible_agents
from memory_admin.api.v1.schemas import ExternalId, JobOut, PageQuery, error_responses
from memory_admin.stores import get_store
from streams.actions.jobs import do_job_retry
from streams.core.documents import Job, JobKind, JobStatus
from streams.jobs import job_get, job_list

router = Router(tags=["jobs"])


class JobListQuery(PageQuery):
    status: JobStatus | None = None
    kind: JobKind | None = None
    agent_id: ExternalId | None = Field(None, description="Only this agent's jobs.")


class JobPageOut(Schema):
    items: list[JobOut]
    next_cursor: str | None


@router.get(
    "/jobs", auth=needs("read"), response={200: JobPageOut, **error_responses(401, 422, 429)}
)
def list_jobs(request: HttpRequest, filters: Query[JobListQuery]) -> dict[str, Any]:
    """Jobs newest first, filtered by status, kind and agent; a key limited to agents sees
    only its agents' jobs (another agent's id gives an empty page)."""
    page = job_list(
        store=get_store(),
        status=filters.status,
        kind=filters.kind,
        agent_id=filters.agent_id,
        agent_ids=visible_agents(request),
        cursor=filters.cursor,
        limit=filters.limit,
    )
    return {"items": page.items, "next_cursor": page.next_cursor}


@router.get(
    "/jobs/{job_id}", auth=needs("read"), response={200: JobOut, **error_responses(401, 404)}
)
def get_job(request: HttpRequest, job_id: str) -> Job:
    """A formation, consolidation, propagation or forget-user job: status, timings, result."""
    return job_get(store=get_store(), job_id=job_id, agent_ids=visible_agents(request))


@router.post(
    "/jobs/{job_id}/retry",
    auth=needs("write"),
    response={202: JobOut, **error_responses(401, 404, 409, 429)},
)
def retry_job(request: HttpRequest, job_id: str) -> Status[Job]:
    """Run a failed job again now (409 for a job that is not failed). A formation retried
    after another formation of its session started finishes with nothing to do."""
    job = do_job_retry(
        store=get_store(),
        actor=api_actor(request),
        job_id=job_id,
        agent_ids=visible_agents(request),
    )
    return Status(202, job)
