"""`Agent`: an agent the store has seen, with the counters the dashboard shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streams.core.documents._base import utcnow


@dataclass
class Agent:
    """An agent the store has seen, with the counters the dashboard shows."""

    id: str
    scope_count: int = 0
    observation_count: int = 0
    pending_count: int = 0
    scope_seq: int = 0
    created_at: datetime = field(default_factory=utcnow)
    last_activity_at: datetime = field(default_factory=utcnow)
    # The chat proxy offers `search_memory` as a function tool ("search_memory") or not ("off").
    memory_tool: str = "off"
    # Lifecycle ranking switches set for the agent (`streams.search.ranking_settings`):
    # a switch left out inherits the code's default.
    ranking: dict[str, bool] = field(default_factory=dict)
    # Limits and models (`streams.memory.scope_limits`): the extraction model (None: the
    # code's), and per scope kind the defaults its scopes take ({kind: {field: value}}).
    extraction_model: str | None = None
    scope_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> Agent:
        return cls(
            id=doc["_id"],
            memory_tool=doc.get("memory_tool") or "off",
            ranking=dict(doc.get("ranking") or {}),
            extraction_model=doc.get("extraction_model"),
            scope_defaults=dict(doc.get("scope_defaults") or {}),
            scope_seq=doc.get("scope_seq", 0),
            scope_count=doc.get("scope_count", 0),
            observation_count=doc.get("observation_count", 0),
            pending_count=doc.get("pending_count", 0),
            created_at=doc["created_at"],
            last_activity_at=doc.get("last_activity_at", doc["created_at"]),
        )
