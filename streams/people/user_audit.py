"""What is remembered about one user of one agent: the user audit and the JSON export.

The individual scope with its consolidation versions and observations (with their
provenance: session, message ids, date), and the observations in group and
collective scopes that came from the user (`related_user_ids`, propagated copies).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Observation, Scope, utcnow
from streams.core.exceptions import InvalidInput
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.core.visibility import removal
from streams.memory.consolidation import consolidation_history
from streams.store import MemoryStore
from streams.store.privacy import BATCH, PrivacyRepository

MAX_EXTERNAL_ID = 128
HISTORY_CHUNK = 200


def _repo(store: MemoryStore) -> PrivacyRepository:
    return store.privacy


def check_user_ids(agent_id: str, user_id: str) -> None:
    for name, value in (("agent_id", agent_id), ("user_id", user_id)):
        if not value or len(value) > MAX_EXTERNAL_ID:
            raise InvalidInput(
                f"{name} must be 1..{MAX_EXTERNAL_ID} chars", details=[{"field": name}]
            )


@dataclass(frozen=True)
class UserAudit:
    agent_id: str
    user_id: str
    individual: Scope | None
    versions: Page[ConsolidationVersion]
    related: Page[Observation]  # observations in other scopes that came from this user
    scopes: dict[str, Scope]  # the scopes the related observations belong to, by id


def user_individual_scope(*, store: MemoryStore, agent_id: str, user_id: str) -> Scope | None:
    check_user_ids(agent_id, user_id)
    return store.scopes.find_by_identity(
        agent_id=agent_id, scope_type="individual", user_id=user_id, group_id=None, name=None
    )


def user_related_observations(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[Observation]:
    """Observations outside the user's individual scope that came from them, oldest first."""
    check_user_ids(agent_id, user_id)
    page_size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("after",))
    after = _object_id(position["after"]) if position else None
    individual = user_individual_scope(store=store, agent_id=agent_id, user_id=user_id)
    found: list[Observation] = []
    # The individual scope's own observations hold the user too: skip them, a few
    # batches at most, then hand back a cursor where the search stopped.
    for _ in range(4):
        wanted = page_size - len(found)
        batch = _repo(store).related_observations(agent_id, user_id, after=after, limit=wanted)
        found += [o for o in batch if individual is None or o.scope_id != individual.id]
        if len(batch) < wanted:
            return Page(items=found, next_cursor=None)
        after = ObjectId(batch[-1].id)
        if len(found) >= page_size:
            break
    return Page(items=found, next_cursor=encode_cursor({"after": str(after)}))


def user_audit(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    versions_limit: int = 10,
    related_cursor: str | None = None,
    related_limit: int | None = None,
) -> UserAudit:
    """Everything remembered about one user of one agent, with where it came from."""
    individual = user_individual_scope(store=store, agent_id=agent_id, user_id=user_id)
    versions: Page[ConsolidationVersion] = Page(items=[], next_cursor=None)
    if individual is not None and individual.consolidation_version:
        versions = consolidation_history(store=store, scope=individual, limit=versions_limit)
    related = user_related_observations(
        store=store, agent_id=agent_id, user_id=user_id, cursor=related_cursor, limit=related_limit
    )
    scope_ids = sorted({o.scope_id for o in related.items})
    scopes = {s.id: s for s in store.scopes.get_many([ObjectId(i) for i in scope_ids])}
    return UserAudit(
        agent_id=agent_id,
        user_id=user_id,
        individual=individual,
        versions=versions,
        related=related,
        scopes=scopes,
    )


def user_export(*, store: MemoryStore, agent_id: str, user_id: str) -> dict[str, Any]:
    """Everything about the user as JSON-ready data (the "what do you remember" answer)."""
    individual = user_individual_scope(store=store, agent_id=agent_id, user_id=user_id)
    export: dict[str, Any] = {
        "agent_id": agent_id,
        "user_id": user_id,
        "exported_at": utcnow().isoformat(),
        "individual_scope": None,
        "related_observations": [],
    }
    repo = _repo(store)
    if individual is not None:
        oid = ObjectId(individual.id)
        history = [_version_json(v) for v in version_pages(store=store, scope=individual)]
        observations = [
            _observation_json(o)
            for low in range(0, individual.observation_seq, BATCH)
            for o in repo.scope_observations(
                oid, low_seq=low, high_seq=min(low + BATCH, individual.observation_seq)
            )
        ]
        export["individual_scope"] = {
            "id": individual.id,
            "display_name": individual.display_name,
            "consolidation": individual.consolidation,
            "consolidation_version": individual.consolidation_version,
            "groups": individual.groups,
            "history": sorted(history, key=lambda v: v["version"]),
            "observations": observations,
        }
    after: ObjectId | None = None
    while True:
        batch = repo.related_observations(agent_id, user_id, after=after)
        export["related_observations"] += [
            _observation_json(o) for o in batch if individual is None or o.scope_id != individual.id
        ]
        if len(batch) < BATCH:
            return export
        after = ObjectId(batch[-1].id)


def version_pages(*, store: MemoryStore, scope: Scope) -> list[ConsolidationVersion]:
    """Every version of the scope's history, oldest first, read in pages."""
    oid = ObjectId(scope.id)
    versions = [
        v
        for low in range(0, scope.consolidation_version, HISTORY_CHUNK)
        for v in store.consolidations.page(
            scope_id=oid,
            below_version=min(low + HISTORY_CHUNK, scope.consolidation_version) + 1,
            limit=HISTORY_CHUNK,
        )
    ]
    return sorted(versions, key=lambda v: v.version)


def observation_json(o: Observation) -> dict[str, Any]:
    """An observation as the exports show it (the API's and the UI's)."""
    return _observation_json(o)


def _observation_json(o: Observation) -> dict[str, Any]:
    removed = removal(o) is not None  # deleted or expired: listed, without its words
    return {
        "id": o.id,
        "scope_id": o.scope_id,
        # A removed observation is listed (it was remembered once) without its text.
        "content": None if removed else o.content,
        "observed_at": o.observed_at.isoformat(),
        "created_at": o.created_at.isoformat(),
        "source_session_id": o.source_session_id,
        "source_message_ids": o.source_message_ids,
        "related_user_ids": o.related_user_ids,
        "status": o.status,
        "private": o.private,
        "propagated_from": o.propagated_from,
        "deleted": o.deleted,
        # The review and dedup state, so an import brings every status back as it was.
        "flags": list(o.flags),
        "similar_to": o.similar_to,
        "contradicts": list(o.contradicts),
        "review": None if removed else _review_json(o.review),
        "expires_at": o.expires_at.isoformat() if o.expires_at is not None else None,
    }


def _review_json(review: dict[str, Any] | None) -> dict[str, Any] | None:
    """An observation's review record with its times as ISO 8601 text."""
    if review is None:
        return None
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in review.items()}


def _version_json(v: ConsolidationVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "text": v.text,
        "trigger": v.trigger,
        "actor": v.actor,
        "created_at": v.created_at.isoformat(),
        "absorbed_observation_ids": v.absorbed_observation_ids,
    }


def _object_id(value: Any) -> ObjectId:
    try:
        return ObjectId(str(value))
    except Exception as exc:  # bson raises InvalidId or TypeError
        raise InvalidInput("malformed cursor", details=[{"field": "cursor"}]) from exc
