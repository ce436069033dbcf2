"""Jobs."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema

from memory_admin.api.v1.schemas.common import Time
from streams.core.documents import JobStatus
from streams.core.job_kinds import JobKind, job_kinds_described


class JobOut(Schema):
    id: str
    kind: JobKind = Field(description="What the job does: " + job_kinds_described())
    status: JobStatus
    scope_id: str | None
    session_id: str | None
    created_at: Time
    started_at: Time | None
    finished_at: Time | None
    error: str | None
    llm_calls: int
    result: dict[str, Any]
