"""Migration from the earlier collections (`memory_user`, `memory_agent`, `memory_sessions`).

domain.md "Legacy data" is the mapping. How this code keeps its promises:

- Never changes the old collections: they are only read (streams/store/legacy.py).
- Idempotent: observations keep their legacy `_id`, scopes are found by their key, and
  a legacy consolidation becomes version 1 only of a scope still at version 0; a second
  run finds everything present and writes nothing.
- Observations go through `observations_append` (one transaction per batch of legacy
  items), so pending lists, sequence numbers and the search index are kept as for any
  other observation.
- The report counts every legacy document once: written, already present, or skipped
  with the reason, per collection.

Where the mapping is silent: a directive goes to the user whose `unabsorbed_memory_ids`
lists it, else to its first `related_users` entry; a suggestion or fact to its
`shard_id` shard, else to the shard that lists it, else to the agent's unnamed
collective scope. An item whose scope has no legacy document (so no consolidated text
that could have absorbed it) stays pending rather than being marked consolidated.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeGuard

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.core.exceptions import Conflict
from streams.guard.erasure import erased_users
from streams.legacy.documents import (
    LEGACY_MEMORY_TYPES,
    CollectionReport,
    LegacyItem,
    LegacyReport,
    LegacyShard,
    LegacyUser,
)
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import APPEND_ATTEMPTS, observations_append
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore, StoreSession
from streams.store.legacy import AGENTS, SESSIONS, USERS, LegacyReader

BATCH_SIZE = 500
MAX_ID_CHARS = 128
LEGACY_TRIGGER = "legacy"

FORGOTTEN = "forgotten: the user's erasure tombstone refuses it"


@dataclass
class _ScopePlan:
    """One target scope: its legacy consolidation (if any) and what that text absorbed."""

    key: ScopeKey
    scope: Scope | None  # None only in a dry run, for a scope that does not exist yet
    report: CollectionReport | None = None  # the collection whose document owns the text
    content: str | None = None
    absorbed: list[str] = field(default_factory=list)
    updated_at: datetime | None = None  # the legacy `last_updated_at`: the version's time

    @property
    def has_legacy_text(self) -> bool:
        return self.report is not None


def _valid_id(value: str | None) -> TypeGuard[str]:
    return value is not None and 1 <= len(value) <= MAX_ID_CHARS


class _Migration:
    """The state of one run: target scopes by key, and who lists which legacy item."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        reader: LegacyReader,
        dry_run: bool,
        batch_size: int,
        actor: str,
    ) -> None:
        self.store = store
        self.actor = actor
        self.reader = reader
        self.dry_run = dry_run
        self.batch_size = batch_size
        self.now = utcnow()
        self.users = CollectionReport()
        self.shards = CollectionReport()
        self.items = CollectionReport()
        self.plans: dict[ScopeKey, _ScopePlan] = {}
        self.shard_keys: dict[str, ScopeKey] = {}  # memory_agent _id -> its shard
        self.unabsorbed: dict[str, ScopeKey] = {}  # item id -> the scope listing it unabsorbed
        self.fact_shards: dict[str, ScopeKey] = {}  # item id -> the shard listing it in `facts`
        self.listed_by: dict[str, CollectionReport] = {}  # item id -> the report to note for
        self.item_ids: set[str] = set()

    def documents(self, collection: str) -> Iterator[dict]:
        for batch in self.reader.batches(collection, batch_size=self.batch_size):
            yield from batch

    def plan_for(self, key: ScopeKey, *, defaults: dict | None = None) -> tuple[_ScopePlan, bool]:
        """The plan of `key`'s scope, finding or (unless dry) creating it; True if created."""
        if key in self.plans:
            return self.plans[key], False
        if self.dry_run:
            scope = self.store.scopes.find_by_identity(**key.identity())
            created = scope is None
        else:
            scope, created = scope_get_or_create(store=self.store, key=key, defaults=defaults)
        self.plans[key] = _ScopePlan(key=key, scope=scope)
        return self.plans[key], created

    def claim(
        self,
        report: CollectionReport,
        key: ScopeKey,
        content: str | None,
        defaults: dict,
        updated_at: datetime | None = None,
    ) -> _ScopePlan | None:
        """A legacy consolidation document's scope; None (skipped) if another claimed it."""
        existing = self.plans.get(key)
        if existing is not None and existing.has_legacy_text:
            report.skip("duplicate of an earlier document for the same scope")
            return None
        plan, created = self.plan_for(key, defaults=defaults)
        plan.report, plan.content = report, (content or "").strip() or None
        plan.updated_at = updated_at
        if created:
            report.written += 1
        else:
            report.existing += 1
        return plan

    def read_users(self) -> None:
        for doc in self.documents(USERS):
            self.users.read += 1
            user = LegacyUser.from_mongo(doc)
            if not _valid_id(user.agent_id):
                self.users.skip("no valid agent_id")
                continue
            if not _valid_id(user.user_id):
                self.users.skip("no valid user_id")
                continue
            if erased_users(store=self.store, agent_id=user.agent_id, user_ids=[user.user_id]):
                self.users.skip(FORGOTTEN)  # an erasure tombstone: nothing of them comes back
                continue
            key = ScopeKey.individual(user.agent_id, user.user_id)
            if self.claim(self.users, key, user.content, {}, user.last_updated_at) is None:
                continue
            for item_id in user.unabsorbed_memory_ids:
                self.unabsorbed[item_id] = key
                self.listed_by[item_id] = self.users

    def read_shards(self) -> None:
        for doc in self.documents(AGENTS):
            self.shards.read += 1
            shard = LegacyShard.from_mongo(doc)
            if not _valid_id(shard.agent_id):
                self.shards.skip("no valid agent_id")
                continue
            name = (shard.shard_name or "").strip()
            if not _valid_id(name):
                self.shards.skip("no valid shard_name")
                continue
            key = ScopeKey.collective(shard.agent_id, name)
            defaults = {"extraction_prompt": shard.extraction_prompt, "is_active": shard.is_active}
            claimed = self.claim(self.shards, key, shard.content, defaults, shard.last_updated_at)
            if claimed is None:
                continue
            self.shard_keys[shard.id] = key
            for item_id in shard.unabsorbed_memory_ids:
                self.unabsorbed[item_id] = key
                self.listed_by[item_id] = self.shards
            for item_id in shard.facts:
                self.fact_shards[item_id] = key
                self.listed_by[item_id] = self.shards

    def target(self, item: LegacyItem) -> tuple[ScopeKey, bool] | str:
        """(the item's scope, whether it is pending), or why it is skipped."""
        assert item.agent_id is not None
        listed = self.unabsorbed.get(item.id)
        if item.memory_type == "directive":
            if listed is not None and listed.scope_type == "individual":
                return listed, True
            if not item.related_users:
                return "directive without a user"
            if not _valid_id(item.related_users[0]):
                return "directive with an invalid user id"
            return ScopeKey.individual(item.agent_id, item.related_users[0]), False
        key = self.shard_keys.get(item.shard_id or "")
        if key is None and listed is not None and listed.scope_type == "collective":
            key = listed
        if key is None:
            key = self.fact_shards.get(item.id)
        if key is None:
            self.items.note("no known shard: to the collective scope")
            key = ScopeKey.collective(item.agent_id)
        return key, item.memory_type == "fact" or listed == key

    def observation(self, item: LegacyItem, plan: _ScopePlan, pending: bool) -> Observation:
        observed_at: datetime = item.created_at or self.now
        return Observation(
            id=item.id,
            scope_id=plan.scope.id if plan.scope else str(ObjectId()),
            agent_id=plan.key.agent_id,
            content=(item.content or "").strip(),
            origin="migration",
            observed_at=observed_at,
            created_at=observed_at,
            source_session_id=item.source_session_id,
            source_message_ids=item.source_message_ids,
            related_user_ids=item.related_users,
            consolidated=not pending,
        )

    def read_items(self) -> None:
        for batch in self.reader.batches(SESSIONS, batch_size=self.batch_size):
            self.migrate_batch([LegacyItem.from_mongo(doc) for doc in batch])

    def migrate_batch(self, items: list[LegacyItem]) -> None:
        present = {o.id for o in self.store.observations.get_many([ObjectId(i.id) for i in items])}
        new: dict[ScopeKey, list[Observation]] = {}
        erased: dict[str, set[str]] = {}  # per agent: the batch's forgotten users
        for agent_id in {i.agent_id for i in items if i.agent_id}:
            erased[agent_id] = erased_users(
                store=self.store,
                agent_id=agent_id,
                user_ids=[u for i in items if i.agent_id == agent_id for u in i.related_users],
            )
        for item in items:
            self.items.read += 1
            self.item_ids.add(item.id)
            reason = self.skip_reason(item)
            if reason:
                self.items.skip(reason)
                continue
            found = self.target(item)
            if isinstance(found, str):
                self.items.skip(found)
                continue
            key, pending = found
            # Their own scope's users were refused in `read_users`; what names them, here.
            if set(item.related_users) & erased.get(key.agent_id, set()):
                self.items.skip(FORGOTTEN)
                continue
            plan, _ = self.plan_for(key)
            if not pending and not plan.has_legacy_text:
                pending = True  # no legacy text could have absorbed it
                self.items.note("pending: its scope had no legacy consolidation")
            self.items.note("pending" if pending else "consolidated")
            if not pending:
                plan.absorbed.append(item.id)
            if item.id in present:
                self.items.existing += 1
                continue
            self.items.written += 1
            new.setdefault(key, []).append(self.observation(item, plan, pending))
        if new and not self.dry_run:
            self.append(new)

    @staticmethod
    def skip_reason(item: LegacyItem) -> str | None:
        if not _valid_id(item.agent_id):
            return "no valid agent_id"
        if item.memory_type == "episode":
            return "episode (not migrated)"
        if item.memory_type not in LEGACY_MEMORY_TYPES:
            return "unknown memory_type"
        if not (item.content or "").strip():
            return "empty content"
        return None

    def append(self, new: dict[ScopeKey, list[Observation]]) -> None:
        """One transaction for the batch: every scope's observations, or none of them."""

        duplicates: dict[str, Observation] = {}  # the same fact, stored once per scope

        def work(session: StoreSession) -> None:
            duplicates.clear()
            for key, observations in new.items():
                scope = self.plans[key].scope
                assert scope is not None
                found: dict[str, Observation] = {}
                observations_append(
                    store=self.store,
                    scope_id=scope.id,
                    observations=observations,
                    session=session,
                    now=self.now,
                    duplicates=found,
                    origin="migration",
                )
                duplicates.update(found)

        self.store.in_transaction(work, attempts=APPEND_ATTEMPTS)
        by_agent: dict[str, list[int]] = {}
        for key, all_observations in new.items():
            observations = [o for o in all_observations if o.id not in duplicates]
            counts = by_agent.setdefault(key.agent_id, [0, 0])
            counts[0] += len(observations)
            counts[1] += sum(1 for o in observations if not o.consolidated)
        for agent_id, (written, pending) in by_agent.items():
            self.store.agents.adjust_counters(
                agent_id, now=self.now, observations=written, pending=pending
            )

    def write_consolidations(self) -> None:
        for plan in self.plans.values():
            if plan.report is None:
                continue
            if plan.content is None:
                if plan.absorbed:
                    plan.report.note("consolidated items but no legacy text: no version 1")
                continue
            if plan.scope is not None and plan.scope.consolidation_version > 0:
                plan.report.note("consolidation already present: kept")
                continue
            plan.report.consolidations += 1
            if self.dry_run:
                continue
            assert plan.scope is not None
            try:
                consolidation_commit(
                    store=self.store,
                    scope=plan.scope,
                    expected_version=0,
                    text=plan.content,
                    absorbed_ids=plan.absorbed,
                    trigger=LEGACY_TRIGGER,
                    actor=self.actor,
                    absorbed_were_pending=False,
                    at=plan.updated_at,
                )
            except Conflict:  # someone committed a version since we read the scope
                plan.report.consolidations -= 1
                plan.report.note("consolidation already present: kept")

    def note_dangling_lists(self) -> None:
        for item_id, report in self.listed_by.items():
            if item_id not in self.item_ids:
                report.note("listed item ids with no memory_sessions document")


def legacy_migrate(
    *,
    store: MemoryStore,
    source_db: str,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    actor: str = "cli",
) -> LegacyReport:
    """Migrate the legacy collections of `source_db` into `store`; the validation report.

    A dry run reads everything and reports what a real run would write, writing nothing.
    The run's audit entry is its action's (`streams.actions.legacy.do_legacy_migrate`).
    """
    reader = store.legacy_reader(source_db)
    reader.prepare()
    migration = _Migration(
        store=store,
        reader=reader,
        dry_run=dry_run,
        batch_size=batch_size,
        actor=actor,
    )
    migration.read_users()
    migration.read_shards()
    migration.read_items()
    migration.write_consolidations()
    migration.note_dangling_lists()
    report = LegacyReport(
        source_db=source_db,
        dry_run=dry_run,
        collections={USERS: migration.users, AGENTS: migration.shards, SESSIONS: migration.items},
    )
    return report
