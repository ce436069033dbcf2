"""What every action shares: who acts, the audit entry, and handing jobs to the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from streams.core.documents import Job
from streams.records.audit import AuditSink, audit_record
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

ActorKind = Literal["api", "ui", "cli"]
JobDispatcher = Callable[[list[Job]], None]

_dispatcher: JobDispatcher | None = None


@dataclass(frozen=True)
class Actor:
    """Who performs an action, named the same in the audit log, job and version records:
    `api:<key name>`, `ui:<username>` or `cli`."""

    kind: ActorKind
    name: str = ""

    @classmethod
    def api(cls, key_name: str) -> Actor:
        return cls("api", key_name)

    @classmethod
    def ui(cls, username: str) -> Actor:
        return cls("ui", username)

    @classmethod
    def cli(cls) -> Actor:
        return cls("cli")

    @classmethod
    def parse(cls, text: str) -> Actor:
        """The actor a stored name stands for (`str(actor)` read back, e.g. from a job)."""
        kind, _, name = text.partition(":")
        if kind not in ("api", "ui", "cli"):
            raise ValueError(f"not an actor: {text!r}")
        return cls(kind, name)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind


def register_dispatcher(dispatcher: JobDispatcher | None) -> None:
    """Set what runs scheduled jobs (the Django side registers its task queue once).

    The domain cannot import Django or Celery, so the runner is injected.
    """
    global _dispatcher
    _dispatcher = dispatcher


def current_dispatcher() -> JobDispatcher | None:
    """What runs scheduled jobs now (a caller that swaps it puts this one back)."""
    return _dispatcher


def schedule(jobs: list[Job]) -> None:
    """Hand the jobs an action created to the runner. Without one registered (a script
    outside Django) they stay queued documents, which the periodic sweep dispatches."""
    if jobs and _dispatcher is not None:
        _dispatcher(list(jobs))


def record(
    *,
    store: MemoryStore,
    actor: Actor | str,
    action: str,
    object_type: str,
    object_id: str | None,
    agent_id: str | None = None,
    summary: dict[str, Any] | None = None,
    session: StoreSession | None = None,
    at: datetime | None = None,
    writes: WriteBatch | None = None,
) -> None:
    """The one audit entry of an action (with `session`, inside the action's transaction)."""
    audit_record(
        store=store,
        actor=str(actor),
        action=action,
        object_type=object_type,
        object_id=object_id,
        agent_id=agent_id,
        summary=summary,
        session=session,
        at=at,
        writes=writes,
    )


def system_audit(store: MemoryStore, actor: str) -> AuditSink:
    """The audit sink of a system action (a sweep, a job's own entry) that a service
    writes through, in the transaction it passes (`session`)."""

    def sink(
        *,
        action: str,
        object_type: str,
        object_id: str | None,
        agent_id: str | None = None,
        summary: dict[str, Any] | None = None,
        at: datetime | None = None,
        session: StoreSession | None = None,
        writes: WriteBatch | None = None,
    ) -> None:
        record(
            store=store,
            actor=actor,
            action=action,
            object_type=object_type,
            object_id=object_id,
            agent_id=agent_id,
            summary=summary,
            session=session,
            at=at,
            writes=writes,
        )

    return sink
