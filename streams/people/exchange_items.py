"""An import's observation items, checked (`streams.people.exchange`): each field as any
other write checks it, every problem recorded (an import reports them all at once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from streams.core.documents import MAX_CONTENT_CHARS, Observation, utcnow
from streams.core.ids import parse_object_id
from streams.people.exchange_checks import Problems, external_id_ok, id_list_ok, iso_time
from streams.people.exchange_review import EXTRA_FIELDS, review_fields
from streams.people.export import digest

OBSERVATION_FIELDS = {
    "id", "scope_id", "content", "observed_at", "created_at", "source_session_id",
    "source_message_ids", "related_user_ids", "status", "private", "propagated_from",
    "deleted", "digest", *EXTRA_FIELDS,
}  # fmt: skip


def check_observation(
    item: Any, where: str, scope_id: str, problems: Problems
) -> Observation | None:
    """The observation an item stands for, or None (its problems recorded)."""
    before = len(problems.items)
    if not isinstance(item, dict):
        problems.add(where, "must be an object")
        return None
    oid = item.get("id")
    deleted = _check_identity(item, where, scope_id, problems)
    content, expired = _check_content(item, where, deleted, problems)
    times = _check_sources(item, where, problems)
    state = review_fields(
        item, lambda name, message: problems.add(where, message, field=name, id=oid)
    )
    if not isinstance(item.get("private"), bool):
        problems.add(where, "private must be true or false", field="private", id=oid)
    origin = item.get("propagated_from")
    if origin is not None and (not isinstance(origin, str) or parse_object_id(origin) is None):
        problems.add(where, "propagated_from must be an id or null", field="propagated_from")
    observed_at, created_at = times["observed_at"], times["created_at"]
    if (
        len(problems.items) > before
        or deleted
        or expired
        # each reported above; spelled again so the types below are narrowed
        or not isinstance(oid, str)
        or not isinstance(content, str)
        or observed_at is None
        or created_at is None
    ):
        return None
    return Observation(
        id=oid,
        scope_id=scope_id,
        agent_id="",
        content=content.strip(),
        observed_at=observed_at,
        created_at=created_at,
        source_session_id=item.get("source_session_id"),
        origin="import",
        source_message_ids=list(item["source_message_ids"]),
        related_user_ids=list(item["related_user_ids"]),
        private=item["private"],
        propagated_from=origin,
        **state,
    )


def _check_identity(item: dict[str, Any], where: str, scope_id: str, problems: Problems) -> Any:
    """Its fields, digest, id, scope and `deleted` (returned as given)."""
    oid = item.get("id")
    unknown = sorted(set(item) - OBSERVATION_FIELDS)
    if unknown:
        problems.add(where, f"unknown fields: {', '.join(unknown)[:200]}", id=oid)
    if "digest" in item and item["digest"] != digest(item):
        problems.add(where, "changed since the export (digest differs)", field="digest", id=oid)
    if not isinstance(oid, str) or parse_object_id(oid) is None:
        problems.add(where, "id must be a 24-hex id", field="id", id=oid)
    if item.get("scope_id") != scope_id:
        problems.add(where, "scope_id must be its scope's id", field="scope_id", id=oid)
    deleted = item.get("deleted")
    if not isinstance(deleted, bool):
        problems.add(where, "deleted must be true or false", field="deleted", id=oid)
    return deleted


def _check_content(
    item: dict[str, Any], where: str, deleted: Any, problems: Problems
) -> tuple[Any, bool]:
    """Its text (as given) and whether it expired. An expired one is exported as removed
    (no text) and, like a deleted one, skipped."""
    oid = item.get("id")
    content = item.get("content")
    expires_at = iso_time(item.get("expires_at")) if item.get("expires_at") else None
    expired = content is None and expires_at is not None and expires_at <= utcnow()
    if (deleted is True or expired) and content is None:
        pass
    elif (
        not isinstance(content, str)
        or not content.strip()
        or len(content.strip()) > MAX_CONTENT_CHARS
    ):
        problems.add(
            where, f"content must be 1..{MAX_CONTENT_CHARS} characters", field="content", id=oid
        )
    return content, expired


def _check_sources(
    item: dict[str, Any], where: str, problems: Problems
) -> dict[str, datetime | None]:
    """Its times (returned, parsed), its session and the ids it cites and names."""
    oid = item.get("id")
    times = {name: iso_time(item.get(name)) for name in ("observed_at", "created_at")}
    for name, value in times.items():
        if value is None:
            problems.add(where, f"{name} must be an ISO 8601 time with a zone", field=name, id=oid)
    if not external_id_ok(item.get("source_session_id"), optional=True):
        problems.add(where, "source_session_id: 1..128 characters or null", id=oid)
    for name in ("source_message_ids", "related_user_ids"):
        if not id_list_ok(item.get(name)):
            problems.add(
                where, f"{name} must be a list of ids (1..128 characters)", field=name, id=oid
            )
    return times
