"""Import an export (`streams.people.export`) back: idempotent by ids, every field checked
as any other write checks it.

An item whose `digest` no longer matches (changed since the export) is refused; an item
without one is checked field by field only. An import checks everything first and
writes nothing when any item is bad: 422 listing each bad item (where it is, its id, the
field, why). Otherwise each scope block is written in one transaction: the scope
(created with its exported id when its identity is new), its history when it has none
yet, and the observations not stored yet (same ids, pending or consolidated as exported;
deleted ones are skipped, their text is gone). Importing the same export again changes
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import (
    MAX_CONTENT_CHARS,
    SCOPE_TYPES,
    ConsolidationVersion,
    Observation,
    Scope,
    utcnow,
)
from streams.core.exceptions import InvalidInput
from streams.core.ids import foreign_id, parse_object_id
from streams.memory.consolidation import MAX_CONSOLIDATION_CHARS
from streams.memory.observations import observations_append
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.people.exchange_review import EXTRA_FIELDS, review_fields
from streams.people.export import FORMAT, digest
from streams.people.user_audit import check_user_ids
from streams.store import MemoryStore, StoreSession
from streams.store.exchange import ExchangeRepository

MAX_ID = 128
MAX_SCOPES = 1000
MAX_LIST = 500
MAX_ERRORS = 200
IMPORT_ATTEMPTS = 5  # a write that met a concurrent change to its scope is tried again
DOCUMENT_FIELDS = {"format", "kind", "agent_id", "user_id", "scope_id", "exported_at", "scopes"}
SCOPE_FIELDS = {
    "id", "scope_type", "user_id", "group_id", "name", "display_name", "consolidation",
    "consolidation_version", "history", "observations",
}  # fmt: skip
OBSERVATION_FIELDS = {
    "id", "scope_id", "content", "observed_at", "created_at", "source_session_id",
    "source_message_ids", "related_user_ids", "status", "private", "propagated_from",
    "deleted", "digest", *EXTRA_FIELDS,
}  # fmt: skip
VERSION_FIELDS = {
    "version", "text", "trigger", "actor", "created_at", "absorbed_observation_ids",
    "redacted", "digest",
}  # fmt: skip


# -- import -------------------------------------------------------------------------------


class _Problems:
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


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    try:
        return parsed.astimezone(UTC)  # one the store can hold (years 1..9999 in UTC)
    except OverflowError:
        return None


def _external(value: Any, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, str) and 1 <= len(value) <= MAX_ID


def _id_list(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= MAX_LIST and all(_external(v) for v in value)


def _check_observation(
    item: Any, where: str, scope_id: str, problems: _Problems
) -> Observation | None:
    """The observation an item stands for, or None (its problems recorded)."""
    before = len(problems.items)
    if not isinstance(item, dict):
        problems.add(where, "must be an object")
        return None
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
    content = item.get("content")
    if deleted is True and content is None:
        pass
    elif (
        not isinstance(content, str)
        or not content.strip()
        or len(content.strip()) > MAX_CONTENT_CHARS
    ):
        problems.add(
            where, f"content must be 1..{MAX_CONTENT_CHARS} characters", field="content", id=oid
        )
    times = {name: _time(item.get(name)) for name in ("observed_at", "created_at")}
    for name, value in times.items():
        if value is None:
            problems.add(where, f"{name} must be an ISO 8601 time with a zone", field=name, id=oid)
    if not _external(item.get("source_session_id"), optional=True):
        problems.add(where, "source_session_id: 1..128 characters or null", id=oid)
    for name in ("source_message_ids", "related_user_ids"):
        if not _id_list(item.get(name)):
            problems.add(
                where, f"{name} must be a list of ids (1..128 characters)", field=name, id=oid
            )
    state = review_fields(
        item, lambda name, message: problems.add(where, message, field=name, id=oid)
    )
    if not isinstance(item.get("private"), bool):
        problems.add(where, "private must be true or false", field="private", id=oid)
    origin = item.get("propagated_from")
    if origin is not None and (not isinstance(origin, str) or parse_object_id(origin) is None):
        problems.add(where, "propagated_from must be an id or null", field="propagated_from")
    if len(problems.items) > before or deleted:
        return None
    return Observation(
        id=oid,
        scope_id=scope_id,
        agent_id="",
        content=content.strip(),
        observed_at=times["observed_at"],  # type: ignore[arg-type]
        created_at=times["created_at"],  # type: ignore[arg-type]
        source_session_id=item.get("source_session_id"),
        source_message_ids=list(item["source_message_ids"]),
        related_user_ids=list(item["related_user_ids"]),
        private=item["private"],
        propagated_from=origin,
        **state,
    )


def _check_version(
    item: Any, where: str, scope_id: str, expected: int, problems: _Problems
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
    created = _time(item.get("created_at"))
    if created is None:
        problems.add(where, "created_at must be an ISO 8601 time with a zone")
    absorbed = item.get("absorbed_observation_ids")
    if not isinstance(absorbed, list) or any(
        not isinstance(i, str) or parse_object_id(i) is None for i in absorbed
    ):
        problems.add(where, "absorbed_observation_ids must be a list of 24-hex ids")
    if not isinstance(item.get("redacted"), bool):
        problems.add(where, "redacted must be true or false", field="redacted")
    if len(problems.items) > before:
        return None
    version = ConsolidationVersion(
        scope_id=scope_id,
        agent_id="",
        version=expected,
        text=text,
        trigger=trigger,
        actor=actor,
        absorbed_observation_ids=list(absorbed),
        created_at=created,  # type: ignore[arg-type]
    )
    return version, (created if item["redacted"] else None)


def _scope_key(block: dict[str, Any], agent_id: str, where: str, problems: _Problems):
    scope_type = block.get("scope_type")
    if scope_type not in SCOPE_TYPES:
        problems.add(where, "scope_type must be individual, group or collective")
        return None
    user_id, group_id, name = block.get("user_id"), block.get("group_id"), block.get("name")
    for field, value in (("user_id", user_id), ("group_id", group_id), ("name", name)):
        if not _external(value, optional=True):
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


@dataclass(frozen=True)
class ImportPlan:
    """A checked import whose scopes exist: what is left is writing its blocks."""

    blocks: list[
        tuple[Scope, list[Observation], list[tuple[ConsolidationVersion, datetime | None]]]
    ]
    totals: dict[str, int]


def memory_import(*, store: MemoryStore, agent_id: str, document: Any) -> dict[str, Any]:
    """Import an export of this agent; see the module's doc. InvalidInput lists every bad
    item (`details`), and then nothing is written. One transaction a block."""
    return import_write(
        store=store, plan=import_plan(store=store, agent_id=agent_id, document=document)
    )


def import_write(
    *, store: MemoryStore, plan: ImportPlan, session: StoreSession | None = None
) -> dict[str, Any]:
    """Write a planned import's blocks: in the caller's transaction `session` (the import
    action's, with its audit entry), or without one a transaction per block."""
    exchange = ExchangeRepository(store.db)
    for scope, new, versions in plan.blocks:
        _write_block(store, exchange, scope, new, versions, session)
    return dict(plan.totals)


def import_plan(*, store: MemoryStore, agent_id: str, document: Any) -> ImportPlan:
    """Check every item of the import (InvalidInput lists the bad ones, and nothing is
    written), then create the scopes it needs: their creation is its own write (a scope
    is made on first use, and racing makers agree on one), done before the transaction
    that writes the blocks, which it must not meet."""
    check_user_ids(agent_id, "-")
    problems = _Problems()
    if not isinstance(document, dict):
        raise InvalidInput("the body must be an export (a JSON object)")
    unknown = sorted(set(document) - DOCUMENT_FIELDS)
    if unknown:
        problems.add("document", f"unknown fields: {', '.join(unknown)[:200]}")
    if document.get("format") != FORMAT:
        problems.add("document", f"format must be {FORMAT!r}", field="format")
    if document.get("agent_id") != agent_id:
        problems.add("document", "the export is of another agent", field="agent_id")
    blocks = document.get("scopes")
    if not isinstance(blocks, list) or len(blocks) > MAX_SCOPES:
        problems.add("document", f"scopes must be a list of at most {MAX_SCOPES}", field="scopes")
        blocks = []
    plans = []
    exchange = ExchangeRepository(store.db)
    for b, block in enumerate(blocks):
        where = f"scopes[{b}]"
        if not isinstance(block, dict):
            problems.add(where, "must be an object")
            continue
        extra = sorted(set(block) - SCOPE_FIELDS)
        if extra:
            problems.add(where, f"unknown fields: {', '.join(extra)[:200]}")
        scope_id = block.get("id")
        if not isinstance(scope_id, str) or parse_object_id(scope_id) is None:
            problems.add(where, "id must be a 24-hex id", field="id")
            continue
        key = _scope_key(block, agent_id, where, problems)
        if key is None:
            continue
        existing = store.scopes.find_by_identity(**key.identity())
        home = existing.id if existing is not None else scope_id
        holder = store.scopes.get(ObjectId(scope_id)) if existing is None else None
        if holder is not None and holder.agent_id != agent_id:
            # Another agent's id: answered as an id that exists nowhere (no oracle).
            home = foreign_id(agent_id=agent_id, original=scope_id)
            holder = store.scopes.get(ObjectId(home))
        if holder is not None and holder.agent_id == agent_id:
            problems.add(where, "id is another scope's", field="id", id=scope_id)
            continue
        items = block.get("observations")
        if not isinstance(items, list):
            problems.add(where, "observations must be a list", field="observations")
            continue
        observations = [
            _check_observation(item, f"{where}.observations[{i}]", scope_id, problems)
            for i, item in enumerate(items)
        ]
        fresh = [o for o in observations if o is not None]
        homes = exchange.observation_homes([ObjectId(o.id) for o in fresh])
        _rehome_foreign(exchange, fresh, homes, agent_id)
        new: list[Observation] = []
        for i, o in enumerate(observations):
            if o is None:
                continue
            if o.id in homes:
                if homes[o.id] != (agent_id, home):
                    problems.add(
                        f"{where}.observations[{i}]", "id is another scope's observation", id=o.id
                    )
                continue
            o.scope_id, o.agent_id = home, agent_id
            new.append(o)
        history = block.get("history")
        versions: list[tuple[ConsolidationVersion, datetime | None]] = []
        if history is not None:
            if not isinstance(history, list):
                problems.add(where, "history must be a list or null", field="history")
                continue
            for n, item in enumerate(history, start=1):
                checked = _check_version(item, f"{where}.history[{n - 1}]", home, n, problems)
                if checked is not None:
                    checked[0].agent_id = agent_id
                    versions.append(checked)
            had = existing.consolidation_version if existing is not None else 0
            if had and had != len(history):
                problems.add(where, "the scope has a consolidation history of its own")
            if had:
                versions = []  # imported before
        consolidation = block.get("consolidation")
        if versions and (
            not isinstance(consolidation, str) or consolidation != versions[-1][0].text
        ):
            problems.add(where, "consolidation must be the last version's text")
        display_name = block.get("display_name")
        if display_name is not None and (
            not isinstance(display_name, str) or not 1 <= len(display_name.strip()) <= 200
        ):
            problems.add(where, "display_name must be 1..200 characters or null")
        plans.append((key, home, display_name, existing, new, versions, len(items) - len(fresh)))
    if problems.items:
        raise InvalidInput(
            f"{len(problems.items)} item(s) of the import are invalid; nothing was stored",
            details=problems.items,
        )
    totals = {"scopes_created": 0, "observations_imported": 0, "versions_imported": 0}
    totals["observations_already_there"] = 0
    totals["deleted_skipped"] = 0
    planned = []
    for key, scope_id, display_name, existing, new, versions, skipped in plans:
        scope = existing
        if scope is None:
            scope, created = scope_get_or_create(
                store=store, key=key, display_name=display_name, defaults={"id": scope_id}
            )
            totals["scopes_created"] += int(created)
        planned.append((scope, new, versions))
        totals["observations_imported"] += len(new)
        totals["versions_imported"] += len(versions)
        totals["deleted_skipped"] += skipped
    totals["observations_already_there"] = (
        sum(
            1
            for block in blocks
            for item in block["observations"]
            if isinstance(item, dict) and not item.get("deleted")
        )
        - totals["observations_imported"]
    )
    return ImportPlan(blocks=planned, totals=totals)


def _rehome_foreign(
    exchange: ExchangeRepository,
    observations: list[Observation],
    homes: dict[str, tuple[str, str]],
    agent_id: str,
) -> None:
    """Items whose id another agent's observation holds take `foreign_id` instead (and
    `homes` learns where those are), so the answer is that for ids that exist nowhere."""
    moved = [o for o in observations if o.id in homes and homes[o.id][0] != agent_id]
    for o in moved:
        del homes[o.id]
        o.id = foreign_id(agent_id=agent_id, original=o.id)
    if moved:
        homes.update(exchange.observation_homes([ObjectId(o.id) for o in moved]))


def _write_block(
    store: MemoryStore,
    exchange: ExchangeRepository,
    scope: Scope,
    new: list[Observation],
    versions: list[tuple[ConsolidationVersion, datetime | None]],
    within: StoreSession | None,
) -> None:
    now = utcnow()

    def write(session: StoreSession) -> None:
        if versions:
            exchange.insert_versions(versions, session=session)
            last = versions[-1][0]
            store.scopes.update_fields(
                ObjectId(scope.id),
                {
                    "consolidation": last.text,
                    "consolidation_version": last.version,
                    "consolidation_updated_at": last.created_at,
                    "consolidation_updated_by": last.actor,
                },
                session=session,
            )
        if new:
            observations_append(
                store=store,
                scope_id=scope.id,
                observations=new,
                session=session,
                now=now,
                origin="import",
            )
            store.agents.adjust_counters(
                scope.agent_id,
                now=now,
                observations=len(new),
                pending=sum(1 for o in new if not o.consolidated),
                session=session,
            )

    if within is not None:
        write(within)
    else:
        store.in_transaction(write, attempts=IMPORT_ATTEMPTS)
