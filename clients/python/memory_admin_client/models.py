"""Typed answers of /api/v1. Unknown fields are kept (the API adds fields within a
version), so an older client keeps working against a newer server."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Health(Model):
    status: str
    store: str
    llm: str
    queue: str
    store_mode: str | None = None
    warnings: list[str] = Field(default_factory=list)


class Review(Model):
    reasons: list[str] = Field(default_factory=list)
    since: datetime | None = None
    supporting_group_ids: list[str] = Field(default_factory=list)
    decision: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str | None = None


class Observation(Model):
    id: str
    scope_id: str
    scope_type: str | None = None  # filled by lists, adds and search hits; null by id
    scope_name: str | None = None
    content: str | None
    observed_at: datetime
    created_at: datetime
    source_session_id: str | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    related_user_ids: list[str] = Field(default_factory=list)
    status: str
    private: bool = False
    propagated_from: str | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    deleted: bool = False
    flags: list[str] = Field(default_factory=list)
    review: Review | None = None
    expires_at: datetime | None = None
    superseded_by: str | None = None
    valid_until: datetime | None = None
    superseded: bool = False


class BatchItem(Observation):
    client_id: str
    created: bool
    duplicate_of: str | None = None


class BatchResult(Model):
    items: list[BatchItem]
    created: int


class Scope(Model):
    id: str
    agent_id: str
    scope_type: str
    user_id: str | None = None
    group_id: str | None = None
    name: str | None = None
    display_name: str | None = None
    is_active: bool = True
    consolidation: str | None = None
    consolidation_version: int = 0
    pending_count: int = 0
    observation_count: int = 0
    pins: list[str] = Field(default_factory=list)
    review_mode: str | None = None
    created_at: datetime | None = None
    last_activity_at: datetime | None = None


class ConsolidationVersion(Model):
    version: int
    text: str | None = None
    trigger: str | None = None
    actor: str | None = None
    absorbed_observation_ids: list[str] = Field(default_factory=list)
    created_at: datetime | None = None


class Job(Model):
    id: str
    kind: str  # callers must accept kinds added later
    status: str
    scope_id: str | None = None
    session_id: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    llm_calls: int = 0
    result: dict[str, Any] | None = None


class JobId(Model):
    job_id: str


class Refused(Model):
    user_id: str
    reason: str


class IngestResult(Model):
    session_id: str
    accepted: int
    duplicates: int
    unformed_messages: int
    formation_job_id: str | None = None
    refused: list[Refused] = Field(default_factory=list)


class Hit(Model):
    observation: Observation
    score: float
    matched_terms: list[str] = Field(default_factory=list)


class SearchResult(Model):
    items: list[Hit]


class Retrieval(Model):
    triggered: bool
    reason: str
    results: list[Hit] = Field(default_factory=list)


class Context(Model):
    context: str
    retrieval: Retrieval
    context_call_id: str | None = None
    tokens: int = 0
    dropped: list[str] = Field(default_factory=list)


class AuditEntry(Model):
    id: str
    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str | None = None
    agent_id: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict)


class ContextCall(Model):
    id: str
    agent_id: str
    user_id: str | None = None
    session_id: str | None = None
    created_at: datetime
    message: str
    xml: str
    retrieved_ids: list[str] = Field(default_factory=list)


class ReviewDecisions(Model):
    approved: int
    rejected: int
    skipped: list[str] = Field(default_factory=list)


class Decided(Model):
    """A decided review item, and until when its decision can be undone (None: not)."""

    observation: Observation
    undo_until: datetime | None = None


class Agent(Model):
    """An agent, its counters and its settings."""

    id: str
    scope_count: int = 0
    observation_count: int = 0
    pending_count: int = 0
    created_at: datetime
    last_activity_at: datetime
    memory_tool: str = "off"


class Raw(Model):
    """An answer this client has no narrower model for (e.g. an export document)."""


T = TypeVar("T", bound=BaseModel)


class SupersessionChain(Model):
    items: list[Observation]


class Page(Model, Generic[T]):
    items: list[T]
    next_cursor: str | None = None


class Webhook(Model):
    id: str
    agent_id: str
    url: str
    events: list[str]
    active: bool
    created_at: datetime


class WebhookCreated(Webhook):
    secret: str  # shown once


class Delivery(Model):
    id: str
    webhook_id: str
    event: str
    status: str
    created_at: datetime
    attempts: list[dict[str, Any]] = Field(default_factory=list)


class BulkResult(Model):
    matched: int
    sample: list[Observation] = Field(default_factory=list)
    job_id: str | None = None


class ImportResult(Model):
    scopes_created: int
    observations_imported: int
    observations_already_there: int
    refused: list[Refused] = Field(default_factory=list)


class PromptCheck(Model):
    id: str
    name: str
    scope_id: str | None = None


class Questions(Model):
    scope_kind: str
    questions: list[str]
    version: int


class PromptCheckList(Model):
    items: list[PromptCheck]


class PromptCheckRun(Model):
    passed: bool
    regressions: int
    results: list[dict[str, Any]] = Field(default_factory=list)


class PromptExperiment(Model):
    """A draft beside the prompt in effect over a scope's recent inputs (its `units` and
    `draft` only when read one by one)."""

    id: str
    agent_id: str
    kind: str
    scope_id: str
    status: str  # queued, running, succeeded, failed
    job_id: str | None = None
    sessions: int
    budget_tokens: int
    estimate: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] | None = None
    rerun_of: str | None = None
    draft: str | None = None
    units: list[dict[str, Any]] = Field(default_factory=list)


class PromptExperimentStarted(Model):
    experiment: PromptExperiment
    job: Job


class PromptExperimentEstimate(Model):
    units: int
    calls: int
    estimated_tokens: int
    estimated_cost_micro_usd: int | None = None
    budget_tokens: int
    within_budget: bool
    units_within_budget: int
    per_unit: list[dict[str, Any]] = Field(default_factory=list)


class TextHistory(Model):
    items: list[dict[str, Any]]
    next_cursor: str | None = None
