"""Batches of observations: up to `MAX_BATCH` added in one transaction, idempotent by
a caller-given `client_id` per item.

A caller that retries after a timeout cannot know whether its batch was stored;
the `client_id` makes the retry safe: each item is stored once per scope, and a
re-send answers with the observations the first send created. The observations,
their search postings, the scope's sequence and pending list and the client ids
all go in one transaction, so a batch is stored whole or not at all.

Long because: a batch is one transaction of per-item checks (client ids, dedup, screening) that
single adds share.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime

from bson import ObjectId

from streams.core.documents import MAX_CONTENT_CHARS, Job, Observation, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.guard.screening import WriteOrigin, origin_of
from streams.memory.add_writes import Schedule, Transact, add_transaction, added
from streams.memory.lifecycle import expires_at_check
from streams.memory.observations import MarkPrivate, duplicate_kept, observations_append
from streams.memory.window import WINDOWS
from streams.records.audit import AuditSink
from streams.store import MemoryStore, StoreSession
from streams.store.write_batch import WriteBatch

MAX_BATCH = 500
MAX_CLIENT_ID_CHARS = 128


class ClientIdReused(Conflict):
    """A `client_id` sent again with other content: the caller's mistake, not a retry, so
    it is refused (409) instead of answered with the first observation, as payment APIs
    treat their idempotency keys."""

    code = "client_id_reused"


def sent_digest(content: str) -> str:
    """What "the same content" means for a `client_id`: the caller's text as sent, with
    surrounding whitespace stripped and each run of whitespace made one space. It is taken
    before screening, so a text whose secret was redacted still matches its own retry;
    case and punctuation count (a retry sends the same text, not a similar one)."""
    return hashlib.sha256(" ".join(content.split()).encode("utf-8")).hexdigest()


def _reused(
    keyed: list[tuple[str, Observation]],
    found: dict[str, tuple[ObjectId, str | None]],
    sent: dict[str, str],
    *,
    per_item: bool,
) -> ClientIdReused | None:
    """The refusal for the keys stored before with other content (None when there are
    none). A key recorded before digests were kept has nothing to compare: a retry."""
    items = [
        {"item": n, "client_id": c, "observation_id": str(found[c][0])}
        for n, (c, _) in enumerate(keyed)
        if c in found and found[c][1] is not None and found[c][1] != sent.get(c)
    ]
    if not items:
        return None
    first = items[0]
    details: dict[str, object] = {
        "observation_id": first["observation_id"],
        "client_id": first["client_id"],
    }
    if per_item:
        details["items"] = items
    return ClientIdReused(
        f"client_id {first['client_id']!r} was used before with other content"
        + (f" ({len(items)} item(s) of the batch)" if per_item else ""),
        details=details,
    )


@dataclass(frozen=True)
class BatchItem:
    content: str
    client_id: str
    private: bool = False
    observed_at: datetime | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class BatchResult:
    """The batch's observations in the order of its items; `created[i]` is False when
    item i's `client_id` had been stored before (the earlier observation is returned)."""

    observations: list[Observation]
    created: list[bool]
    client_ids: list[str]
    # Per item: the live observation with the same text it matched (nothing new stored).
    duplicate_of: list[str | None] = field(default_factory=list)

    @property
    def created_count(self) -> int:
        return sum(self.created)


def observations_append_once(
    *,
    store: MemoryStore,
    scope_id: str,
    keyed: list[tuple[str, Observation]],
    session: StoreSession,
    now: datetime,
    duplicates: dict[str, Observation] | None = None,
) -> dict[str, ObjectId]:
    """Within the caller's transaction: append the observations whose client id the scope
    has not stored yet, and record their ids; returns the client ids already stored (with
    their observation), which were skipped. An observation whose text the scope holds
    already is not stored (`duplicates` gets its id -> the one kept), and its client id
    names the kept one, so a retry answers the same.

    This is the batch path's core, for any writer that can name its items (formation can
    key an observation by its session and source messages; the legacy migration keys by
    the legacy `_id` and calls `observations_append` directly).
    """
    known, _, found = _append_once(
        store=store, scope_id=scope_id, keyed=keyed, session=session, now=now
    )
    if duplicates is not None:
        duplicates.update(found)
    return known


def _append_once(
    *,
    store: MemoryStore,
    scope_id: str,
    keyed: list[tuple[str, Observation]],
    session: StoreSession,
    now: datetime,
    origin: WriteOrigin = "extraction",
    writes: WriteBatch | None = None,
    trust_index: bool = False,
    read_before: Scope | None = None,
    sent: dict[str, str] | None = None,
    per_item: bool = True,
) -> tuple[dict[str, ObjectId], Scope | None, dict[str, Observation]]:
    """`observations_append_once`, also returning the scope as it was before the append
    (None when every item was known and nothing was appended) and the duplicates;
    `writes`, `trust_index` and `read_before` as in `observations_append`.

    `sent` (client id -> `sent_digest` of the caller's text) makes the keys a caller's
    idempotency keys: a known key whose first content differs is `ClientIdReused`, and
    nothing is written. Formation's derived keys pass none (a re-run may word it anew)."""
    oid = require_object_id(scope_id, what="scope")
    client_ids = [c for c, _ in keyed]
    if sent is None:
        known = store.client_ids.find(oid, client_ids, session=session)
    else:
        found = store.client_ids.find_with_digests(oid, client_ids, session=session)
        refusal = _reused(keyed, found, sent, per_item=per_item)
        if refusal is not None:
            raise refusal
        known = {c: observation_id for c, (observation_id, _) in found.items()}
    fresh = [(c, o) for c, o in keyed if c not in known]
    before = None
    duplicates: dict[str, Observation] = {}
    if fresh:
        before = observations_append(
            store=store,
            scope_id=scope_id,
            observations=[o for _, o in fresh],
            session=session,
            now=now,
            duplicates=duplicates,
            origin=origin,
            writes=writes,
            trust_index=trust_index,
            read_before=read_before,
            after_read=True,  # the keys' read above
        )
        store.client_ids.insert(
            oid,
            [(c, ObjectId(duplicates[o.id].id if o.id in duplicates else o.id)) for c, o in fresh],
            now=now,
            session=session,
            writes=writes,
            digests=sent,
        )
        if len(duplicates) == len(fresh):
            before = None  # nothing was appended
    return known, before, duplicates


def observation_batch_add(
    *,
    store: MemoryStore,
    scope: Scope,
    items: list[BatchItem],
    follow_ups: list[Job] | None = None,
    actor: str | None = None,
    transact: Transact | None = None,
    mark_private: MarkPrivate | None = None,
) -> BatchResult:
    """Add up to `MAX_BATCH` observations by hand in one transaction; items whose
    `client_id` the scope already holds are not stored again. Like single adds, the new
    ones go to pending and a consolidation job is queued (in `follow_ups`) when the
    pending list reaches the scope's threshold. With `actor`, the batch's audit entry
    (one per batch that stored anything) commits in the same transaction."""
    _validate(items)
    now = utcnow()
    for n, item in enumerate(items):
        expires_at_check(item.expires_at, now=now, field_name=f"items.{n}.expires_at")
    keyed = [
        (
            item.client_id,
            Observation(
                scope_id=scope.id,
                agent_id=scope.agent_id,
                content=item.content.strip(),
                observed_at=item.observed_at or now,
                created_at=now,
                private=item.private,
                related_user_ids=[scope.user_id] if scope.user_id else [],
                expires_at=item.expires_at,
                origin=origin_of(actor),
                added_by=actor,
            ),
        )
        for item in items
    ]

    def add(
        session: StoreSession, schedule: Schedule, audit: AuditSink | None
    ) -> tuple[dict[str, ObjectId], Scope | None, dict[str, Observation]]:
        # Its writes in one `bulkWrite`, as a single add's: the search postings go in as
        # pending documents that the fold takes behind. Written into the term heads here,
        # they met the background fold of the same scope's heads (a write conflict, past
        # the retry window a 503: `benchmarks concurrency`).
        writes = store.write_batch(session)
        known, before, duplicates = _append_once(
            store=store,
            scope_id=scope.id,
            keyed=keyed,
            session=session,
            now=now,
            origin=origin_of(actor),
            writes=writes,
            sent={item.client_id: sent_digest(item.content) for item in items},
        )
        added(
            store=store,
            audit=audit,
            scope=scope,
            before=before,
            fresh=[o for c, o in keyed if c not in known and o.id not in duplicates],
            now=now,
            session=session,
            schedule=schedule,
            writes=writes,
            items=len(keyed),
            duplicates=len(duplicates),
        )
        return known, before, duplicates

    known, before, duplicates = add_transaction(store, transact, add, follow_ups)
    if before is not None:
        stored = [o for c, o in keyed if c not in known and o.id not in duplicates]
        WINDOWS.added(store=store, before=before, observations=stored)
    earlier = {o.id: o for o in store.observations.get_many(list(set(known.values())))}
    observations: list[Observation] = []
    created: list[bool] = []
    duplicate_of: list[str | None] = []
    private_kept: set[str] = set()
    for (client_id, observation), item in zip(keyed, items, strict=True):
        if client_id in known:
            found = earlier.get(str(known[client_id]))
            if found is None:
                raise NotFound(f"the observation of client_id {client_id!r} is gone")
            observations.append(found)
            created.append(False)
            duplicate_of.append(None)
        elif observation.id in duplicates:
            kept = duplicates[observation.id]
            if item.private and not kept.private and kept.id not in private_kept:
                private_kept.add(kept.id)
                kept = duplicate_kept(
                    store=store,
                    kept=kept,
                    private=True,
                    follow_ups=follow_ups,
                    actor=actor,
                    mark_private=mark_private,
                )
            observations.append(replace(kept, duplicate=True))
            created.append(False)
            duplicate_of.append(kept.id)
        else:
            observations.append(observation)
            created.append(True)
            duplicate_of.append(None)
    return BatchResult(
        observations=observations,
        created=created,
        client_ids=[c for c, _ in keyed],
        duplicate_of=duplicate_of,
    )


def observation_add_once(
    *,
    store: MemoryStore,
    scope: Scope,
    content: str,
    client_id: str,
    private: bool = False,
    observed_at: datetime | None = None,
    follow_ups: list[Job] | None = None,
    actor: str | None = None,
    transact: Transact | None = None,
    mark_private: MarkPrivate | None = None,
) -> tuple[Observation, bool]:
    """A single add keyed by the caller's `client_id`, through the batch's mechanism (its
    keys collection, whose `_id` is unique per scope and key): stored once per scope.
    Returns (observation, created); a repeat with the same content (`sent_digest`)
    returns the first observation and writes nothing (no audit entry, no counter); with
    other content it is `ClientIdReused`. The audit entry of a
    new one is the single add's (`observation.create`), with the key."""
    _validate([BatchItem(content=content, client_id=client_id)], field_prefix="")
    now = utcnow()
    observation = Observation(
        scope_id=scope.id,
        agent_id=scope.agent_id,
        content=content.strip(),
        observed_at=observed_at or now,
        created_at=now,
        private=private,
        related_user_ids=[scope.user_id] if scope.user_id else [],
        origin=origin_of(actor),
        added_by=actor,
    )

    duplicates: dict[str, Observation] = {}

    attempts = [0]

    def add(
        session: StoreSession, schedule: Schedule, audit: AuditSink | None
    ) -> tuple[dict[str, ObjectId], Scope | None]:
        # Like a single add: its writes (the key's too) in one `bulkWrite`, and the first
        # attempt trusts the caller's read of the scope and leaves an exact duplicate to
        # the unique index; a retry reads both.
        attempts[0] += 1
        writes = store.write_batch(session)
        known, before, found = _append_once(
            store=store,
            scope_id=scope.id,
            keyed=[(client_id, observation)],
            session=session,
            now=now,
            origin=origin_of(actor),
            writes=writes,
            trust_index=attempts[0] == 1,
            read_before=scope if attempts[0] == 1 else None,
            sent={client_id: sent_digest(content)},
            per_item=False,
        )
        duplicates.clear()
        duplicates.update(found)
        added(
            store=store,
            audit=audit,
            scope=scope,
            before=before,
            fresh=[] if known or found else [observation],  # the key, or the fact, is stored
            now=now,
            session=session,
            schedule=schedule,
            writes=writes,
            client_id=client_id,
        )
        return known, before

    known, before = add_transaction(store, transact, add, follow_ups)
    if before is not None and not known and not duplicates:
        WINDOWS.added(store=store, before=before, observations=[observation])
    if known:
        earlier = store.observations.get_many([known[client_id]])
        if not earlier:
            raise NotFound(f"the observation of client_id {client_id!r} is gone")
        return earlier[0], False
    if duplicates:
        kept = duplicate_kept(
            store=store,
            kept=duplicates[observation.id],
            private=private,
            follow_ups=follow_ups,
            actor=actor,
            mark_private=mark_private,
        )
        return kept, False
    return observation, True


def _validate(items: list[BatchItem], *, field_prefix: str = "items.{n}.") -> None:
    """What the API schema checks too, so every caller of the domain gets the same rules."""
    if not items:
        raise InvalidInput("items must not be empty", details=[{"field": "items"}])
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"a batch holds at most {MAX_BATCH} items", details=[{"field": "items"}])
    seen: dict[str, int] = {}
    for n, item in enumerate(items):
        content = item.content.strip()
        if not content or len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(
                f"content must hold 1 to {MAX_CONTENT_CHARS} characters",
                details=[{"field": field_prefix.format(n=n) + "content"}],
            )
        if not item.client_id or len(item.client_id) > MAX_CLIENT_ID_CHARS:
            raise InvalidInput(
                f"client_id must hold 1 to {MAX_CLIENT_ID_CHARS} characters",
                details=[{"field": field_prefix.format(n=n) + "client_id"}],
            )
        if item.client_id in seen:
            raise InvalidInput(
                f"client_id {item.client_id!r} appears twice in the batch "
                f"(items {seen[item.client_id]} and {n})",
                details=[{"field": f"items.{n}.client_id"}],
            )
        seen[item.client_id] = n
