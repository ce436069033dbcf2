"""Privacy: forget one user of one agent (a background job whose result is the receipt)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Path, Router, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, JobIdOut, error_responses
from memory_admin.stores import get_store
from streams.actions.privacy import do_user_forget

router = Router(tags=["privacy"])


@router.delete(
    "/agents/{agent_id}/users/{user_id}",
    auth=needs("forget"),
    response={202: JobIdOut, **error_responses(401, 404, 422)},
)
def forget_user(
    request: HttpRequest, agent_id: Path[ExternalId], user_id: Path[ExternalId]
) -> Status[dict[str, str]]:
    """Forget the user: their individual scope, buffered messages and every observation
    that came from them; group and collective texts are rebuilt without them.

    The job's result is the deletion receipt (counts per collection, time, actor).
    A user nothing is known about is not an error: the receipt counts zero.
    """
    require_agent(request, agent_id)
    job = do_user_forget(
        store=get_store(), actor=api_actor(request), agent_id=agent_id, user_id=user_id
    )
    return Status(202, {"job_id": job.id})
