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

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import (
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
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.people.exchange_checks import (
    Problems,
    check_version,
    flagged_history,
    scope_key_checked,
)
from streams.people.exchange_items import check_observation
from streams.people.exchange_settings import (
    prompts_to_record,
    settings_checked,
    settings_differ,
)
from streams.people.export import FORMAT, READABLE_FORMATS
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
# -- import -------------------------------------------------------------------------------


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


Versions = list[tuple[ConsolidationVersion, datetime | None]]


@dataclass
class _Refusals:
    """What an import leaves out: users an erasure tombstone covers (nothing of them is
    stored), how many items that refused, and histories a shared scope does not take."""

    users: set[str] = field(default_factory=set)
    items: int = 0
    left_out: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _BlockPlan:
    """A checked scope block: where it goes and what it writes."""

    key: ScopeKey
    home: str  # the scope's id: the exported one, the existing scope's, or a foreign id's
    display_name: str | None
    existing: Scope | None
    new: list[Observation]
    versions: Versions
    skipped: int  # items left out by the check (deleted, expired)
    restored: dict[str, Any] | None  # the block's settings, for a scope it creates


def import_plan(*, store: MemoryStore, agent_id: str, document: Any) -> ImportPlan:
    """Check every item of the import (InvalidInput lists the bad ones, and nothing is
    written), then create the scopes it needs: their creation is its own write (a scope
    is made on first use, and racing makers agree on one), done before the transaction
    that writes the blocks, which it must not meet."""
    check_user_ids(agent_id, "-")
    problems = Problems()
    blocks = _checked_document(document, agent_id, problems)
    refusals = _Refusals()
    plans = [
        plan
        for b, block in enumerate(blocks)
        if (plan := _plan_block(store, agent_id, f"scopes[{b}]", block, problems, refusals))
    ]
    if problems.items:
        raise InvalidInput(
            f"{len(problems.items)} item(s) of the import are invalid; nothing was stored",
            details=problems.items,
        )
    planned, totals = _create_scopes(store, plans)
    totals["observations_already_there"] = (
        sum(
            1
            for block in blocks
            for item in block["observations"]
            if isinstance(item, dict) and not item.get("deleted")
        )
        - totals["observations_imported"]
        - refusals.items
    )
    totals["observations_refused"] = refusals.items
    totals["consolidations_left_out"] = refusals.left_out
    totals["refused"] = refused_entries(refusals.users)
    return ImportPlan(blocks=planned, totals=totals)


def _checked_document(document: Any, agent_id: str, problems: Problems) -> list[Any]:
    """The document's scope blocks (none when they are not a list), its fields checked."""
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
        return []
    return blocks


def _plan_block(
    store: MemoryStore,
    agent_id: str,
    where: str,
    block: Any,
    problems: Problems,
    refusals: _Refusals,
) -> _BlockPlan | None:
    """One scope block checked and planned, or None (its problems recorded, or all of it
    refused: a forgotten user's own scope)."""
    if not isinstance(block, dict):
        problems.add(where, "must be an object")
        return None
    extra = sorted(set(block) - SCOPE_FIELDS)
    if extra:
        problems.add(where, f"unknown fields: {', '.join(extra)[:200]}")
    scope_id = block.get("id")
    if not isinstance(scope_id, str) or parse_object_id(scope_id) is None:
        problems.add(where, "id must be a 24-hex id", field="id")
        return None
    key = scope_key_checked(block, agent_id, where, problems)
    if key is None or _refused_whole(store, agent_id, key, block, refusals):
        return None

    def report(field: str | None, message: str, where: str = where) -> None:
        problems.add(f"{where}.settings", message, field=field)

    probe = Scope(**key.identity())
    restored = settings_checked(block.get("settings"), store=store, probe=probe, report=report)
    existing = store.scopes.find_by_identity(**key.identity())
    home = _home(store, agent_id, scope_id, existing, where, problems)
    items = block.get("observations")
    if home is None:
        return None
    if not isinstance(items, list):
        problems.add(where, "observations must be a list", field="observations")
        return None
    new, fresh = _new_observations(store, agent_id, where, scope_id, home, items, problems)
    new = _without_erased(store, agent_id, new, refusals)
    versions = _versions(block, where, home, agent_id, existing, problems)
    if versions is None:
        return None
    consolidation = block.get("consolidation")
    if versions and (not isinstance(consolidation, str) or consolidation != versions[-1][0].text):
        problems.add(where, "consolidation must be the last version's text")
    flags = flagged_history(key, versions)
    if flags:
        refusals.left_out.append({"item": where, "reason": "flagged", "flags": flags})
        versions = []
    display_name = block.get("display_name")
    if display_name is not None and (
        not isinstance(display_name, str) or not 1 <= len(display_name.strip()) <= 200
    ):
        problems.add(where, "display_name must be 1..200 characters or null")
    return _BlockPlan(
        key, home, display_name, existing, new, versions, len(items) - fresh, restored
    )


def _refused_whole(
    store: MemoryStore, agent_id: str, key: ScopeKey, block: dict[str, Any], refusals: _Refusals
) -> bool:
    """Whether the block is a forgotten user's own scope: nothing of theirs comes back."""
    if key.scope_type != "individual" or not erased_users(
        store=store, agent_id=agent_id, user_ids=[key.user_id]
    ):
        return False
    refusals.users.add(str(key.user_id))
    items = block.get("observations")
    refusals.items += sum(
        1
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and not item.get("deleted")
    )
    return True


def _home(
    store: MemoryStore,
    agent_id: str,
    scope_id: str,
    existing: Scope | None,
    where: str,
    problems: Problems,
) -> str | None:
    """The id the block's scope has here: the existing scope's, the exported one, or for
    an id another agent's scope holds, a foreign id (answered as an id that exists
    nowhere: no oracle). None when the id is another scope's of this agent."""
    home = existing.id if existing is not None else scope_id
    holder = store.scopes.get(ObjectId(scope_id)) if existing is None else None
    if holder is not None and holder.agent_id != agent_id:
        home = foreign_id(agent_id=agent_id, original=scope_id)
        holder = store.scopes.get(ObjectId(home))
    if holder is not None and holder.agent_id == agent_id:
        problems.add(where, "id is another scope's", field="id", id=scope_id)
        return None
    return home


def _new_observations(
    store: MemoryStore,
    agent_id: str,
    where: str,
    scope_id: str,
    home: str,
    items: list[Any],
    problems: Problems,
) -> tuple[list[Observation], int]:
    """The block's valid items not stored yet, moved to `home`; and how many were valid."""
    exchange = store.exchange
    observations = [
        check_observation(item, f"{where}.observations[{i}]", scope_id, problems)
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
    return new, len(fresh)


def _without_erased(
    store: MemoryStore, agent_id: str, new: list[Observation], refusals: _Refusals
) -> list[Observation]:
    """Leave out the observations that name a forgotten user."""
    named = erased_users(
        store=store, agent_id=agent_id, user_ids=[u for o in new for u in o.related_user_ids]
    )
    if not named:
        return new
    refusals.users.update(named)
    kept = [o for o in new if not named & set(o.related_user_ids)]
    refusals.items += len(new) - len(kept)
    return kept


def _versions(
    block: dict[str, Any],
    where: str,
    home: str,
    agent_id: str,
    existing: Scope | None,
    problems: Problems,
) -> Versions | None:
    """The consolidation history to write: none when the scope has one already (imported
    before); None when the history is not a list (the block is skipped)."""
    history = block.get("history")
    versions: Versions = []
    if history is None:
        return versions
    if not isinstance(history, list):
        problems.add(where, "history must be a list or null", field="history")
        return None
    for n, item in enumerate(history, start=1):
        checked = check_version(item, f"{where}.history[{n - 1}]", home, n, problems)
        if checked is not None:
            checked[0].agent_id = agent_id
            versions.append(checked)
    had = existing.consolidation_version if existing is not None else 0
    if had and had != len(history):
        problems.add(where, "the scope has a consolidation history of its own")
    return [] if had else versions


def _create_scopes(
    store: MemoryStore, plans: list[_BlockPlan]
) -> tuple[list[tuple[Scope, list[Observation], Versions, dict[str, str]]], dict[str, Any]]:
    """Make the scopes the plans need (a restored scope with its settings, in its one
    insert); the blocks to write and the import's totals so far."""
    totals: dict[str, Any] = {
        "scopes_created": 0,
        "observations_imported": 0,
        "versions_imported": 0,
        "observations_already_there": 0,
        "deleted_skipped": 0,
        "settings_applied": 0,
        "settings_skipped": 0,
    }
    planned = []
    for plan in plans:
        scope, created = plan.existing, False
        if scope is None:
            scope, created = scope_get_or_create(
                store=store,
                key=plan.key,
                display_name=plan.display_name,
                defaults={"id": plan.home, **(plan.restored or {})},
            )
            totals["scopes_created"] += int(created)
        if plan.restored and created:
            totals["settings_applied"] += 1
        elif plan.restored and settings_differ(scope, plan.restored):
            totals["settings_skipped"] += 1
        planned.append((scope, plan.new, plan.versions, prompts_to_record(scope, plan.restored)))
        totals["observations_imported"] += len(plan.new)
        totals["versions_imported"] += len(plan.versions)
        totals["deleted_skipped"] += plan.skipped
    return planned, totals


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
