"""Import an export (`streams.people.export`) back: idempotent by ids, every field checked
as any other write checks it.

An item whose `digest` no longer matches (changed since the export) is refused; an item
without one is checked field by field only. An import checks everything first and
writes nothing when any item is bad: 422 listing each bad item (where it is, its id, the
field, why). Otherwise each scope block is written in one transaction: the scope
(created with its exported id when its identity is new), its history when it has none
yet, and the observations not stored yet (same ids, pending or consolidated as exported;
deleted ones are skipped, their text is gone). Importing the same export again changes
nothing. A block's `settings` (format 2) are restored on the scopes the import creates
(`streams.people.exchange_settings`); older documents, without them, import as before.

Long because: an import checks every field of every item before it writes any; the
checks, the plan and the block writes read one document shape together.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import (
    MAX_CONTENT_CHARS,
    ConsolidationVersion,
    Observation,
    Scope,
    utcnow,
)
from streams.core.exceptions import InvalidInput
from streams.core.ids import foreign_id, parse_object_id
from streams.guard.erasure import erased_users, refused_entries
from streams.guard.screening import screened
from streams.memory.observations import observations_append
from streams.memory.scopes import scope_get_or_create
from streams.people.exchange_checks import (
    Problems,
    check_version,
    external_id_ok,
    flagged_history,
    id_list_ok,
    iso_time,
    scope_key_checked,
)
from streams.people.exchange_review import EXTRA_FIELDS, review_fields
from streams.people.exchange_settings import (
    prompts_to_record,
    settings_checked,
    settings_differ,
)
from streams.people.export import FORMAT, READABLE_FORMATS, digest
from streams.people.user_audit import check_user_ids
from streams.prompts import prompt_save
from streams.store import MemoryStore, StoreSession
from streams.store.exchange import ExchangeRepository

MAX_SCOPES = 1000
IMPORT_ATTEMPTS = 5  # a write that met a concurrent change to its scope is tried again
DOCUMENT_FIELDS = {"format", "kind", "agent_id", "user_id", "scope_id", "exported_at", "scopes"}
SCOPE_FIELDS = {
    "id", "scope_type", "user_id", "group_id", "name", "display_name", "consolidation",
    "consolidation_version", "history", "observations", "settings",
}  # fmt: skip
OBSERVATION_FIELDS = {
    "id", "scope_id", "content", "observed_at", "created_at", "source_session_id",
    "source_message_ids", "related_user_ids", "status", "private", "propagated_from",
    "deleted", "digest", *EXTRA_FIELDS,
}  # fmt: skip

# -- import -------------------------------------------------------------------------------


def _check_observation(
    item: Any, where: str, scope_id: str, problems: Problems
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
    expires_at = iso_time(item.get("expires_at")) if item.get("expires_at") else None
    # An expired one is exported as removed (no text) and, like a deleted one, skipped.
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


@dataclass(frozen=True)
class ImportPlan:
    """A checked import whose scopes exist: what is left is writing its blocks."""

    blocks: list[
        tuple[
            Scope,
            list[Observation],
            list[tuple[ConsolidationVersion, datetime | None]],
            dict[str, str],  # prompt kind -> the override whose history the block writes
        ]
    ]
    totals: dict[str, Any]


def memory_import(*, store: MemoryStore, agent_id: str, document: Any) -> dict[str, Any]:
    """Import an export of this agent; see the module's doc. InvalidInput lists every bad
    item (`details`), and then nothing is written. One transaction a block."""
    return import_write(
        store=store, plan=import_plan(store=store, agent_id=agent_id, document=document)
    )


def import_write(
    *,
    store: MemoryStore,
    plan: ImportPlan,
    session: StoreSession | None = None,
    author: str = "import",
) -> dict[str, Any]:
    """Write a planned import's blocks: in the caller's transaction `session` (the import
    action's, with its audit entry), or without one a transaction per block. Restored
    prompt overrides are saved as versions by `author`."""
    exchange = store.exchange
    for scope, new, versions, prompts in plan.blocks:
        _write_block(store, exchange, scope, new, versions, prompts, session, author)
    return dict(plan.totals)


def import_plan(*, store: MemoryStore, agent_id: str, document: Any) -> ImportPlan:
    """Check every item of the import (InvalidInput lists the bad ones, and nothing is
    written), then create the scopes it needs: their creation is its own write (a scope
    is made on first use, and racing makers agree on one), done before the transaction
    that writes the blocks, which it must not meet."""
    check_user_ids(agent_id, "-")
    problems = Problems()
    left_out: list[dict[str, Any]] = []  # histories a shared scope does not take
    if not isinstance(document, dict):
        raise InvalidInput("the body must be an export (a JSON object)")
    unknown = sorted(set(document) - DOCUMENT_FIELDS)
    if unknown:
        problems.add("document", f"unknown fields: {', '.join(unknown)[:200]}")
    if document.get("format") not in READABLE_FORMATS:
        problems.add("document", f"format must be {FORMAT!r} (or an earlier one)", field="format")
    if document.get("agent_id") != agent_id:
        problems.add("document", "the export is of another agent", field="agent_id")
    blocks = document.get("scopes")
    if not isinstance(blocks, list) or len(blocks) > MAX_SCOPES:
        problems.add("document", f"scopes must be a list of at most {MAX_SCOPES}", field="scopes")
        blocks = []
    plans = []
    refused: set[str] = set()  # users an erasure tombstone covers: nothing of them stored
    refused_items = 0
    exchange = store.exchange
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
        key = scope_key_checked(block, agent_id, where, problems)
        if key is None:
            continue
        if key.scope_type == "individual" and erased_users(
            store=store, agent_id=agent_id, user_ids=[key.user_id]
        ):
            refused.add(str(key.user_id))  # forgotten: nothing of theirs comes back
            items = block.get("observations")
            refused_items += sum(
                1
                for item in (items if isinstance(items, list) else [])
                if isinstance(item, dict) and not item.get("deleted")
            )
            continue

        def report(field: str | None, message: str, where: str = where) -> None:
            problems.add(f"{where}.settings", message, field=field)

        restored = settings_checked(
            block.get("settings"), probe=Scope(**key.identity()), report=report
        )
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
        named = erased_users(
            store=store, agent_id=agent_id, user_ids=[u for o in new for u in o.related_user_ids]
        )
        if named:
            refused.update(named)
            kept = [o for o in new if not named & set(o.related_user_ids)]
            refused_items += len(new) - len(kept)
            new = kept
        history = block.get("history")
        versions: list[tuple[ConsolidationVersion, datetime | None]] = []
        if history is not None:
            if not isinstance(history, list):
                problems.add(where, "history must be a list or null", field="history")
                continue
            for n, item in enumerate(history, start=1):
                checked = check_version(item, f"{where}.history[{n - 1}]", home, n, problems)
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
        flags = flagged_history(key, versions)
        if flags:
            left_out.append({"item": where, "reason": "flagged", "flags": flags})
            versions = []
        display_name = block.get("display_name")
        if display_name is not None and (
            not isinstance(display_name, str) or not 1 <= len(display_name.strip()) <= 200
        ):
            problems.add(where, "display_name must be 1..200 characters or null")
        plans.append(
            (
                key,
                home,
                display_name,
                existing,
                new,
                versions,
                len(items) - len(fresh),
                restored,
            )
        )
    if problems.items:
        raise InvalidInput(
            f"{len(problems.items)} item(s) of the import are invalid; nothing was stored",
            details=problems.items,
        )
    totals: dict[str, Any] = {
        "scopes_created": 0,
        "observations_imported": 0,
        "versions_imported": 0,
    }
    totals["observations_already_there"] = 0
    totals["deleted_skipped"] = 0
    totals["settings_applied"] = totals["settings_skipped"] = 0
    planned = []
    for key, scope_id, display_name, existing, new, versions, skipped, restored in plans:
        scope, created = existing, False
        if scope is None:
            # A restored scope is made with its settings in its one insert.
            scope, created = scope_get_or_create(
                store=store,
                key=key,
                display_name=display_name,
                defaults={"id": scope_id, **(restored or {})},
            )
            totals["scopes_created"] += int(created)
        if restored and created:
            totals["settings_applied"] += 1
        elif restored and settings_differ(scope, restored):
            totals["settings_skipped"] += 1
        planned.append((scope, new, versions, prompts_to_record(scope, restored)))
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
        - refused_items
    )
    totals["observations_refused"] = refused_items
    totals["consolidations_left_out"] = left_out
    totals["refused"] = refused_entries(refused)
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
    prompts: dict[str, str],
    within: StoreSession | None,
    author: str,
) -> None:
    now = utcnow()

    def write(session: StoreSession) -> None:
        for kind, text in prompts.items():  # the text in effect again is a no-op
            prompt_save(
                store=store,
                agent_id=scope.agent_id,
                kind=kind,
                text=text,
                author=author,
                scope_id=scope.id,
                session=session,
            )
        if versions:
            # Imported text passes the screen like any other (secrets redacted).
            versions[:] = [(replace(v, text=screened(v.text)), at) for v, at in versions]
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
