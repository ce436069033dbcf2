"""Every path that could bring a forgotten user back meets the tombstone at its lowest
common point (issue 37): legacy migration skips them and says why, the observation write
that every path goes through (`observations_append`) stores nothing a tombstone covers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from bson import ObjectId
from pymongo import MongoClient

from streams.core.documents import Observation, utcnow
from streams.legacy.migration import FORGOTTEN, legacy_migrate
from streams.memory.observations import observations_append
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.fakes.legacy_data import AGENTS, USERS, legacy_dataset_write

AGENT = "a1"


def _tombstone(store: MemoryStore, agent_id: str, user_id: str) -> None:
    store.tombstones.put(agent_id=agent_id, user_id=user_id, now=utcnow(), job_id=None)


def test_no_path_writes_an_observation_a_tombstone_covers(store: MemoryStore) -> None:
    _tombstone(store, AGENT, "gene")
    own, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "gene"))
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    for origin in ("extraction", "import", "propagation"):
        store.in_transaction(
            lambda session, o=origin: observations_append(
                store=store,
                scope_id=own.id,
                observations=[Observation(scope_id=own.id, agent_id=AGENT, content=f"Own {o}.")],
                session=session,
                now=utcnow(),
                origin=o,
            )
        )
        store.in_transaction(
            lambda session, o=origin: observations_append(
                store=store,
                scope_id=group.id,
                observations=[
                    Observation(
                        scope_id=group.id,
                        agent_id=AGENT,
                        content=f"Gene said {o}.",
                        related_user_ids=["gene"],
                    ),
                    Observation(scope_id=group.id, agent_id=AGENT, content=f"Team {o}."),
                ],
                session=session,
                now=utcnow(),
                origin=o,
            )
        )
    texts = sorted(
        d["content"]
        for d in store.db["memory_observations"]
        .find({"scope_id": {"$in": [ObjectId(own.id), ObjectId(group.id)]}})
        .limit(50)
    )
    assert texts == ["Team extraction.", "Team import.", "Team propagation."]


@pytest.fixture
def legacy_db(embedded_mongo) -> Iterator[tuple[MongoClient, str]]:
    client = MongoClient(embedded_mongo.uri)
    name = f"legacy_{uuid.uuid4().hex[:12]}"
    yield client, name
    client.drop_database(name)
    client.close()


def test_legacy_migration_skips_a_forgotten_user_and_says_why(
    store: MemoryStore, legacy_db: tuple[MongoClient, str]
) -> None:
    client, name = legacy_db
    legacy_dataset_write(client[name])
    _tombstone(store, AGENTS[0], USERS[0])

    report = legacy_migrate(store=store, source_db=name)

    assert report.collections["memory_user"].skipped.get(FORGOTTEN) == 1
    assert report.collections["memory_sessions"].skipped.get(FORGOTTEN, 0) >= 1
    assert (
        store.scopes.find_by_identity(
            agent_id=AGENTS[0], scope_type="individual", user_id=USERS[0], group_id=None, name=None
        )
        is None
    )
    left = store.db["memory_observations"].count_documents(
        {"agent_id": AGENTS[0], "related_user_ids": USERS[0]}
    )
    assert left == 0
