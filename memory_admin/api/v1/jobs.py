"""Jobs: the state of background work an earlier request started."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory_admin.api.auth import visible_agents
from memory_admin.api.v1.schemas import JobOut, error_responses
from memory_admin.stores import get_store
from streams.documents import Job
from streams.jobs import job_get

router = Router(tags=["jobs"])


@router.get("/jobs/{job_id}", response={200: JobOut, **error_responses(401, 404)})
def get_job(request: HttpRequest, job_id: str) -> Job:
    """A formation, consolidation, propagation or forget-user job: status, timings, result."""
    return job_get(store=get_store(), job_id=job_id, agent_ids=visible_agents(request))
