"""An imported observation's review and dedup state: checked like any other write.

An export carries each observation's status (pending, consolidated, or held: in_review,
candidate, rejected), its review record (reasons, supporting groups, the decision),
`flags`, `similar_to`, `contradicts` and `expires_at`. `review_fields` checks them and
returns what the import stores; `streams.guard.screening` (origin "import") keeps a held status
as exported instead of deciding it again, and still redacts and sets the flags itself
(the detectors are the authority on flags: an exported list is only checked for shape).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from streams.core.ids import parse_object_id
from streams.guard.detectors import FLAGS
from streams.guard.review import MAX_NOTE_CHARS

STATUSES = ("pending", "consolidated", "in_review", "candidate", "rejected")
HELD = ("in_review", "candidate", "rejected")
MAX_ID = 128
MAX_REASONS = 50
MAX_REASON_CHARS = 200
MAX_GROUPS = 500
MAX_IDS = 500
MAX_ACTOR = 200
# A reason as the guard and the review write them: `flag:pii:email`, `propagated`,
# `needs_more_groups`, `contradicts:<id>` ...
_REASON = re.compile(r"^[a-z_]+(:[A-Za-z0-9_.:-]+)?$")
REVIEW_TIMES = ("since", "decided_at", "promoted_at")
REVIEW_FIELDS = {
    "reasons", "since", "supporting_group_ids", "supports", "promoted_at", "decision",
    "decided_by", "decided_at", "note", "status_before",
}  # fmt: skip
EXTRA_FIELDS = {"flags", "similar_to", "contradicts", "review", "expires_at"}

Report = Callable[[str, str], None]  # (field, message)


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time with a zone that the store can hold (UTC, years 1..9999), or None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        return None


def _oid(value: Any) -> bool:
    return isinstance(value, str) and parse_object_id(value) is not None


def _external(value: Any) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= MAX_ID


def review_fields(item: dict[str, Any], report: Report) -> dict[str, Any]:
    """The status and the review/dedup fields of an import item, checked (`report` gets
    each problem); the Observation fields they set (valid or not: the caller drops an item
    with problems)."""
    status = item.get("status")
    if status not in STATUSES:
        report("status", "status must be " + ", ".join(STATUSES))
    flags = item.get("flags", [])
    if not isinstance(flags, list) or len(flags) > len(FLAGS) or any(f not in FLAGS for f in flags):
        report("flags", "flags must be a list of " + ", ".join(FLAGS))
    similar = item.get("similar_to")
    if similar is not None and not _oid(similar):
        report("similar_to", "similar_to must be an id or null")
    contradicts = item.get("contradicts", [])
    if not isinstance(contradicts, list) or len(contradicts) > MAX_IDS:
        report("contradicts", f"contradicts must be a list of at most {MAX_IDS} ids")
        contradicts = []
    if not all(_oid(i) for i in contradicts):
        report("contradicts", "contradicts must be a list of 24-hex ids")
    expires_at = None
    if item.get("expires_at") is not None:
        expires_at = parse_time(item["expires_at"])
        if expires_at is None:
            report("expires_at", "expires_at must be an ISO 8601 time with a zone or null")
    review = _review(item.get("review"), status, report)
    return {
        "consolidated": status == "consolidated",
        "review_status": status if status in HELD else None,
        "review": review,
        "similar_to": similar if _oid(similar) else None,
        "contradicts": [i for i in contradicts if _oid(i)],
        "expires_at": expires_at,
    }


def _review(value: Any, status: Any, report: Report) -> dict[str, Any] | None:
    """The review record, its times parsed back; required for a held status."""
    if value is None:
        if status in HELD:
            report("review", f"an observation {status} needs its review record")
        return None
    if not isinstance(value, dict):
        report("review", "review must be an object or null")
        return None
    unknown = sorted(set(value) - REVIEW_FIELDS)
    if unknown:
        report("review", f"unknown review fields: {', '.join(unknown)[:200]}")
    out: dict[str, Any] = {}
    reasons = value.get("reasons", [])
    if (
        not isinstance(reasons, list)
        or len(reasons) > MAX_REASONS
        or not all(
            isinstance(r, str) and len(r) <= MAX_REASON_CHARS and _REASON.match(r) for r in reasons
        )
    ):
        report("review", f"review.reasons must be a list of at most {MAX_REASONS} reasons")
    out["reasons"] = list(reasons) if isinstance(reasons, list) else []
    groups = value.get("supporting_group_ids", [])
    if not isinstance(groups, list) or len(groups) > MAX_GROUPS or not all(map(_external, groups)):
        report("review", "review.supporting_group_ids must be a list of group ids")
    elif "supporting_group_ids" in value or status == "candidate":
        out["supporting_group_ids"] = list(dict.fromkeys(groups))
    if status == "candidate" and not groups:
        report("review", "a candidate needs its supporting_group_ids")
    for name in REVIEW_TIMES:
        if value.get(name) is None:
            continue
        parsed = parse_time(value[name])
        if parsed is None:
            report("review", f"review.{name} must be an ISO 8601 time with a zone")
        out[name] = parsed
    if status in ("in_review", "candidate") and out.get("since") is None:
        report("review", f"an observation {status} needs review.since")
    decision = value.get("decision")
    if decision not in (None, "approve", "reject"):
        report("review", "review.decision must be approve, reject or null")
    if status == "rejected" and decision != "reject":
        report("review", "a rejected observation needs review.decision reject")
    note = value.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
        report("review", f"review.note must be at most {MAX_NOTE_CHARS} characters")
    by = value.get("decided_by")
    if by is not None and (not isinstance(by, str) or not 1 <= len(by) <= MAX_ACTOR):
        report("review", f"review.decided_by must be 1..{MAX_ACTOR} characters or null")
    before = value.get("status_before")
    if before is not None and before not in STATUSES:
        report("review", "review.status_before must be a status or null")
    supports = value.get("supports")
    if supports is not None and not _oid(supports):
        report("review", "review.supports must be an id or null")
    for name in ("decision", "decided_by", "note", "status_before", "supports"):
        if name in value:
            out[name] = value[name]
    return out
