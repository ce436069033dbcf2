"""The webhook events, declared once.

`WebhookEvent` is the type the API validates against; `WEBHOOK_EVENTS` says when each is
emitted and, for a removal, the only fields its data keeps (ids and times, never the
removed words: `streams.records.webhooks.webhook_outbox_add` applies it on every path).
The API schema and docs/kinds.md (`manage.py kinds_docs`) read this table;
`tests/streams/core/test_kinds_registry.py` checks that every emitted event is declared here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

WebhookEvent = Literal[
    "observation.created",
    "observation.updated",
    "observation.deleted",
    "consolidation.version",
    "review.waiting",
    "user.forgotten",
]


@dataclass(frozen=True)
class WebhookEventInfo:
    name: WebhookEvent
    description: str
    removal_fields: tuple[str, ...] | None = None  # a removal: only these fields are sent


WEBHOOK_EVENTS: tuple[WebhookEventInfo, ...] = (
    WebhookEventInfo(
        "observation.created",
        "an observation was stored, by any write path (API, batch, formation, propagation, "
        "import, the legacy migration)",
    ),
    WebhookEventInfo("observation.updated", "an observation's content or privacy changed"),
    WebhookEventInfo(
        "observation.deleted",
        "an observation was deleted",
        removal_fields=("id", "scope_id", "deleted_at"),
    ),
    WebhookEventInfo(
        "consolidation.version",
        "a consolidation version was committed (a run, a hand edit, a restore, a rebuild)",
    ),
    WebhookEventInfo("review.waiting", "observations were filed to wait for review"),
    WebhookEventInfo(
        "user.forgotten",
        "a person was forgotten (the forget receipt)",
        removal_fields=("user_id", "forgotten_at"),
    ),
)

WEBHOOK_EVENT_BY_NAME: dict[str, WebhookEventInfo] = {e.name: e for e in WEBHOOK_EVENTS}
EVENTS: tuple[WebhookEvent, ...] = get_args(WebhookEvent)
REMOVAL_FIELDS: dict[str, tuple[str, ...]] = {
    e.name: e.removal_fields for e in WEBHOOK_EVENTS if e.removal_fields is not None
}


def webhook_events_described() -> str:
    """The events in one line, for a schema description."""
    return "; ".join(f"{e.name}: {e.description}" for e in WEBHOOK_EVENTS)


__all__ = [
    "EVENTS",
    "REMOVAL_FIELDS",
    "WEBHOOK_EVENTS",
    "WEBHOOK_EVENT_BY_NAME",
    "WebhookEvent",
    "WebhookEventInfo",
    "webhook_events_described",
]
