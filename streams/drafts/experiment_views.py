"""Reading prompt experiments: one by id, an agent's newest first, as surfaces show them.

An experiment keeps both answers of each input for the drill-down, and those answers
hold memory text. So they are shown only while their sources are: an input whose
session is gone (forgotten, removed) or one of whose observations is no longer visible
(`streams.core.visibility.removal`) keeps its counts and withholds its words.
"""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.core.exceptions import InvalidInput, NotFound
from streams.core.ids import parse_object_id, require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.core.visibility import removal
from streams.store import MemoryStore

WITHHELD = "withheld: a source of this input was removed after the experiment ran"


def experiment_get(
    *, store: MemoryStore, experiment_id: str, agent_ids: frozenset[str] | None = None
) -> dict[str, Any]:
    """One experiment as surfaces show it; NotFound also for an agent the caller may not see."""
    doc = store.prompt_experiments.get(require_object_id(experiment_id, what="experiment"))
    if doc is None or (agent_ids is not None and doc["agent_id"] not in agent_ids):
        raise NotFound("experiment not found")
    return experiment_shown(store=store, doc=doc)


def experiment_page(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[dict[str, Any]]:
    """The agent's experiments, newest first, without their inputs (the list's rows)."""
    page_size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("before",))
    before = parse_object_id(position["before"]) if position else None
    if position and before is None:
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    docs = store.prompt_experiments.page(
        agent_id=agent_id, kind=kind, before=before, limit=page_size
    )
    items = [experiment_row(doc) for doc in docs]
    next_cursor = encode_cursor({"before": items[-1]["id"]}) if len(items) == page_size else None
    return Page(items=items, next_cursor=next_cursor)


def experiment_row(doc: dict[str, Any]) -> dict[str, Any]:
    """What a list shows of an experiment: its inputs and outcome in numbers."""
    return {
        "id": str(doc["_id"]),
        "agent_id": doc["agent_id"],
        "kind": doc["kind"],
        "scope_id": doc["scope_id"],
        "scope_label": doc.get("scope_label", ""),
        "status": doc.get("status", "queued"),
        "job_id": doc.get("job_id"),
        "sessions": doc["sessions"],
        "budget_tokens": doc["budget_tokens"],
        "draft_level": doc.get("draft_level", "agent"),
        "in_effect": doc.get("in_effect") or {},
        "estimate": doc.get("estimate") or {},
        "summary": doc.get("summary"),
        "rerun_of": doc.get("rerun_of"),
        "author": doc.get("author", ""),
        "created_at": doc["created_at"],
        "finished_at": doc.get("finished_at"),
    }


def experiment_shown(*, store: MemoryStore, doc: dict[str, Any]) -> dict[str, Any]:
    """The experiment with its draft and its inputs, words withheld where a source went."""
    shown = experiment_row(doc) | {"draft": doc["draft"], "units": []}
    for unit in doc.get("units") or []:
        if unit.get("forgotten"):
            shown["units"].append(unit | {"withheld": unit["forgotten"]})
        elif _sources_visible(store, doc["agent_id"], unit):
            shown["units"].append(unit | {"withheld": None})
        else:
            shown["units"].append(
                unit
                | {
                    "withheld": WITHHELD,
                    "draft": _without_words(unit["draft"]),
                    "in_effect": _without_words(unit["in_effect"]),
                }
            )
    return shown


def _sources_visible(store: MemoryStore, agent_id: str, unit: dict[str, Any]) -> bool:
    session_id = unit.get("session_id")
    if session_id and store.sessions.get_buffer(agent_id, session_id) is None:
        return False
    ids = [ObjectId(i) for i in unit.get("source_ids") or [] if ObjectId.is_valid(i)]
    if not ids:
        return True
    found = store.observations.get_many(ids)
    return len(found) == len(ids) and all(removal(o) is None for o in found)


def _without_words(side: dict[str, Any]) -> dict[str, Any]:
    return side | {
        "text": None,
        "items": [{"scope": i["scope"], "content": None} for i in side["items"]],
    }
