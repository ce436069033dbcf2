"""Privacy: forget one user of one agent (a background job whose result is the receipt)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Field, Path, Router, Status

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_admin_key, require_agent
from memory_admin.api.v1.schemas import ExternalId, InSchema, JobIdOut, error_responses
from memory_admin.stores import get_store
from streams.actions.privacy import MAX_REASON, do_tombstone_lift, do_user_forget

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


class TombstoneLiftIn(InSchema):
    reason: str = Field(..., min_length=1, max_length=MAX_REASON)


@router.delete(
    "/agents/{agent_id}/tombstones/{user_id}",
    auth=needs("forget"),
    response={204: None, **error_responses(401, 403, 404, 422)},
)
def lift_tombstone(
    request: HttpRequest,
    agent_id: Path[ExternalId],
    user_id: Path[ExternalId],
    payload: TombstoneLiftIn,
) -> Status[None]:
    """Lift the erasure tombstone forget-user left (admin keys only, with a reason; the
    audit log records who, when and why). From then on the user's data may be stored
    again: imports, migration and ingest no longer refuse it. 404 without a tombstone."""
    require_admin_key(request)
    require_agent(request, agent_id)
    do_tombstone_lift(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        user_id=user_id,
        reason=payload.reason,
    )
    return Status(204, None)
