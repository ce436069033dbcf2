"""The lifecycle sweeps as actions: expiry (claim, then purge past the keep days) and
retention (scopes over their cap). Their entries (`observation.expire`,
`scope.purge_expired`, `scope.purge_retention`, actor `system:lifecycle`) are written
through this layer's sink (`system_audit`), each in the transaction of its claim or
purge: audit entries are written by actions only (tests/test_audit_writers.py)."""

from __future__ import annotations

from datetime import datetime

from streams.actions.base import system_audit
from streams.core.documents import Scope
from streams.memory.lifecycle import (
    SWEEP_ACTOR,
    RetentionResult,
    SweepResult,
    expiry_sweep,
    retention_apply,
    retention_sweep,
)
from streams.store import MemoryStore


def do_expiry_sweep(
    *, store: MemoryStore, keep_days: int, now: datetime | None = None
) -> SweepResult:
    """One expiry pass (resumable: each observation is claimed once)."""
    return expiry_sweep(
        store=store, audit=system_audit(store, SWEEP_ACTOR), keep_days=keep_days, now=now
    )


def do_retention_sweep(*, store: MemoryStore, now: datetime | None = None) -> int:
    """One retention pass over the scopes with a cap; how many it purged."""
    return retention_sweep(store=store, audit=system_audit(store, SWEEP_ACTOR), now=now)


def do_retention_apply(
    *, store: MemoryStore, scope: Scope, now: datetime | None = None
) -> RetentionResult:
    """Bring one scope back under its cap."""
    return retention_apply(
        store=store, audit=system_audit(store, SWEEP_ACTOR), scope=scope, now=now
    )
