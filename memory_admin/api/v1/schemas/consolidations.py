"""Consolidation versions and their pages."""

from __future__ import annotations

from typing import Any

from ninja import Schema

from memory_admin.api.v1.schemas.common import Time


class FidelityOut(Schema):
    unstated_observation_ids: list[str]
    dropped_sentences: list[str]


class ConsolidationVersionOut(Schema):
    version: int
    text: str
    trigger: str
    actor: str | None
    absorbed_observation_ids: list[str]
    prompt_version: int | None
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int
    restored_from: int | None
    warning: str | None
    redacted: bool
    created_at: Time
    # What the text no longer states: {"unstated_observation_ids", "dropped_sentences"}
    # (empty lists for versions written before it was recorded).
    fidelity: FidelityOut

    @staticmethod
    def resolve_fidelity(obj: Any) -> dict[str, list[str]]:
        found = getattr(obj, "fidelity", None) or {}
        return {
            "unstated_observation_ids": list(found.get("unstated_observation_ids") or []),
            "dropped_sentences": list(found.get("dropped_sentences") or []),
        }


class ConsolidationPageOut(Schema):
    items: list[ConsolidationVersionOut]
    next_cursor: str | None
