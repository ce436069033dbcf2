"""The checks of an import's parts that stand alone: where a problem is (`Problems`), times
and ids, a consolidation version, and a scope's identity (`streams.people.exchange` checks
the observations and the document, and writes)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from streams.core.documents import SCOPE_TYPES, ConsolidationVersion
from streams.core.ids import parse_object_id
from streams.guard.detectors import detect
from streams.guard.screening import REFUSED_FLAGS, SHARED_SCOPE_TYPES
from streams.memory.consolidation import MAX_CONSOLIDATION_CHARS
from streams.memory.scopes import ScopeKey
from streams.people.exchange_review import parse_time
from streams.people.export import digest

MAX_ID = 128
MAX_LIST = 500
MAX_ERRORS = 200
VERSION_FIELDS = {
    "version", "text", "trigger", "actor", "created_at", "absorbed_observation_ids",
    "redacted", "digest",
}  # fmt: skip


class Problems:
    """The problems found so far, each with where it is (at most `MAX_ERRORS`)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, where: str, message: str, *, field: str | None = None, id: Any = None) -> None:
        if len(self.items) < MAX_ERRORS:
            entry: dict[str, Any] = {"item": where, "message": message}
            if field is not None:
                entry["field"] = field
            if isinstance(id, str):
                entry["id"] = id[:64]
            self.items.append(entry)


# One parse of an export's times: the review fields' (`exchange_review.parse_time`).
iso_time = parse_time


def external_id_ok(value: Any, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, str) and 1 <= len(value) <= MAX_ID


def id_list_ok(value: Any) -> bool:
    return (
        isinstance(value, list) and len(value) <= MAX_LIST and all(external_id_ok(v) for v in value)
    )


def check_version(
    item: Any, where: str, scope_id: str, expected: int, problems: Problems
) -> tuple[ConsolidationVersion, datetime | None] | None:
    before = len(problems.items)
    if not isinstance(item, dict):
        problems.add(where, "must be an object")
        return None
    unknown = sorted(set(item) - VERSION_FIELDS)
    if unknown:
        problems.add(where, f"unknown fields: {', '.join(unknown)[:200]}")
    if "digest" in item and item["digest"] != digest(item):
        problems.add(where, "changed since the export (digest differs)", field="digest")
    if item.get("version") != expected or isinstance(item.get("version"), bool):
        problems.add(where, f"version must be {expected} (versions count up from 1)")
    text = item.get("text")
    if not isinstance(text, str) or len(text) > MAX_CONSOLIDATION_CHARS:
        problems.add(where, f"text must be at most {MAX_CONSOLIDATION_CHARS} characters")
    trigger = item.get("trigger")
    if not isinstance(trigger, str) or not 1 <= len(trigger) <= 64:
        problems.add(where, "trigger must be 1..64 characters", field="trigger")
    actor = item.get("actor")
    if actor is not None and (not isinstance(actor, str) or len(actor) > 200):
        problems.add(where, "actor must be at most 200 characters or null", field="actor")
    created = iso_time(item.get("created_at"))
    if created is None:
        problems.add(where, "created_at must be an ISO 8601 time with a zone")
    absorbed = item.get("absorbed_observation_ids")
    if not isinstance(absorbed, list) or any(
        not isinstance(i, str) or parse_object_id(i) is None for i in absorbed
    ):
        problems.add(where, "absorbed_observation_ids must be a list of 24-hex ids")
    if not isinstance(item.get("redacted"), bool):
        problems.add(where, "redacted must be true or false", field="redacted")
    if (
        len(problems.items) > before
        # each reported above; spelled again so the types below are narrowed
        or not isinstance(text, str)
        or not isinstance(trigger, str)
        or not isinstance(absorbed, list)
        or created is None
    ):
        return None
    version = ConsolidationVersion(
        scope_id=scope_id,
        agent_id="",
        version=expected,
        text=text,
        trigger=trigger,
        actor=actor,
        absorbed_observation_ids=list(absorbed),
        created_at=created,
    )
    return version, (created if item["redacted"] else None)


def scope_key_checked(block: dict[str, Any], agent_id: str, where: str, problems: Problems):
    scope_type = block.get("scope_type")
    if scope_type not in SCOPE_TYPES:
        problems.add(where, "scope_type must be individual, group or collective")
        return None
    user_id, group_id, name = block.get("user_id"), block.get("group_id"), block.get("name")
    for field, value in (("user_id", user_id), ("group_id", group_id), ("name", name)):
        if not external_id_ok(value, optional=True):
            problems.add(where, f"{field} must be 1..128 characters or null", field=field)
            return None
    if scope_type == "individual" and (not user_id or group_id or name):
        problems.add(where, "an individual scope has a user_id only")
        return None
    if scope_type == "group" and (not group_id or user_id or name):
        problems.add(where, "a group scope has a group_id only")
        return None
    if scope_type == "collective" and (user_id or group_id):
        problems.add(where, "a collective scope has at most a name")
        return None
    return ScopeKey(
        agent_id=agent_id, scope_type=scope_type, user_id=user_id, group_id=group_id, name=name
    )


def flagged_history(
    key: ScopeKey, versions: list[tuple[ConsolidationVersion, datetime | None]]
) -> list[str]:
    """The flags (`pii:*`, `instruction`) that keep an imported consolidation history out
    of a shared scope: a text so flagged would be a member's context at once, where a
    hand edit of it is refused (422 `flagged`). The import leaves the history out (and
    says so), applies the rest, and the scope is consolidated again from its observations;
    secrets are redacted in every scope either way. Empty: the history is taken."""
    if key.scope_type not in SHARED_SCOPE_TYPES:
        return []
    return sorted(
        {f for version, _ in versions for f in detect(version.text).flags if f in REFUSED_FLAGS}
    )
