"""The legacy migration against the real store: mapping, idempotency, dry run, the report."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import MongoClient

from streams.actions import Actor
from streams.actions.legacy import do_legacy_migrate
from streams.legacy.documents import LegacyItem
from streams.legacy.migration import legacy_migrate
from streams.memory.consolidation import consolidation_edit, consolidation_history
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store.legacy import LEGACY_COLLECTIONS, LegacyReader
from tests.fakes.legacy_data import AGENTS, USERS, LegacyDataset, legacy_dataset_write
from tests.streams.memory.test_consolidation_runs import (
    assert_each_observation_pending_or_absorbed_once,
)

RAW = CodecOptions(document_class=RawBSONDocument)
NEW_COLLECTIONS_UNCHANGED_BY_A_RERUN = (
    "memory_scopes",
    "memory_observations",
    "memory_consolidations",
    "memory_agents",
    "memory_search_terms",
)


@pytest.fixture
def raw_client(embedded_mongo) -> Iterator[MongoClient]:
    """A client without the query guard: the tests read whole collections to compare them."""
    client = MongoClient(embedded_mongo.uri)
    yield client
    client.close()


@pytest.fixture
def source_db(raw_client) -> Iterator[str]:
    name = f"legacy_{uuid.uuid4().hex[:12]}"
    yield name
    raw_client.drop_database(name)


@pytest.fixture
def dataset(raw_client, source_db) -> LegacyDataset:
    return legacy_dataset_write(raw_client[source_db])


def raw_documents(client: MongoClient, db_name: str, names) -> dict[str, list[bytes]]:
    db = client[db_name]
    return {
        name: sorted(d.raw for d in db.get_collection(name, codec_options=RAW).find())
        for name in names
    }


def test_the_report_counts_every_legacy_document_once(store, dataset, source_db):
    report = legacy_migrate(store=store, source_db=source_db)
    assert report.balanced
    counts = {name: c.read for name, c in report.collections.items()}
    assert counts == dataset.documents
    sessions = report.collections["memory_sessions"]
    expected_skips = {
        k: v for k, v in dataset.items.items() if k not in {"pending", "consolidated"}
    }
    assert sessions.skipped == expected_skips
    assert sessions.notes["pending"] == dataset.items["pending"]
    assert sessions.notes["consolidated"] == dataset.items["consolidated"]
    assert sessions.written == dataset.documents["memory_sessions"] - sum(expected_skips.values())
    users = report.collections["memory_user"]
    assert (users.written, users.consolidations) == (len(AGENTS) * len(USERS),) * 2
    assert users.notes == {"listed item ids with no memory_sessions document": 1}
    shards = report.collections["memory_agent"]
    assert shards.skipped == {"no valid shard_name": 1}
    assert (shards.written, shards.consolidations) == (4, 4)


def test_users_become_individual_scopes_with_their_directives(store, dataset, source_db):
    legacy_migrate(store=store, source_db=source_db)
    scope, created = scope_get_or_create(store=store, key=ScopeKey.individual(AGENTS[0], USERS[0]))
    assert not created
    legacy = next(
        u for u in dataset.users if (str(u["agent_id"]), str(u["user_id"])) == scope_key(scope)
    )
    assert scope.consolidation == legacy["content"] and scope.consolidation_version == 1
    observations = observation_list(store=store, scope=scope).items
    assert len(observations) == 3
    pending = [o for o in observations if o.status == "pending"]
    assert [o.id for o in pending] == [str(legacy["unabsorbed_memory_ids"][0])]
    assert scope.pending_observation_ids == [pending[0].id]
    assert all(o.related_user_ids == [USERS[0]] and o.source_session_id for o in observations)
    assert all(len(o.source_message_ids) == 2 and o.observed_at.tzinfo for o in observations)
    [version] = consolidation_history(store=store, scope=scope).items
    assert (version.version, version.trigger, version.actor) == (1, "legacy", "cli")
    assert sorted(version.absorbed_observation_ids) == sorted(
        o.id for o in observations if o.status == "consolidated"
    )
    assert_each_observation_pending_or_absorbed_once(store, scope.id)


def scope_key(scope) -> tuple[str, str | None]:
    return scope.agent_id, scope.user_id


def test_shards_keep_their_prompt_activity_text_and_facts_stay_pending(store, dataset, source_db):
    legacy_migrate(store=store, source_db=source_db)
    for legacy in dataset.shards[:-1]:
        key = ScopeKey.collective(str(legacy["agent_id"]), legacy["shard_name"])
        shard, created = scope_get_or_create(store=store, key=key)
        assert not created and shard.is_shard
        assert shard.extraction_prompt == legacy["extraction_prompt"]
        assert shard.is_active == legacy["is_active"]
        assert shard.consolidation == legacy["content"]
        observations = observation_list(store=store, scope=shard).items
        pending = {o.id for o in observations if o.status == "pending"}
        facts = {str(i) for i in legacy["facts"]}
        assert facts | {str(i) for i in legacy["unabsorbed_memory_ids"]} == pending
        assert len(observations) == 6
        assert_each_observation_pending_or_absorbed_once(store, shard.id)
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective(AGENTS[1]))
    [orphan] = observation_list(store=store, scope=collective).items
    assert orphan.status == "pending" and collective.consolidation_version == 0


def test_a_second_run_changes_nothing(store, dataset, source_db, raw_client, memory_db):
    # The action (the command's): each run records its one entry.
    do_legacy_migrate(store=store, actor=Actor.cli(), source_db=source_db)
    before = raw_documents(raw_client, memory_db, NEW_COLLECTIONS_UNCHANGED_BY_A_RERUN)
    again = do_legacy_migrate(store=store, actor=Actor.cli(), source_db=source_db)
    assert raw_documents(raw_client, memory_db, NEW_COLLECTIONS_UNCHANGED_BY_A_RERUN) == before
    assert again.balanced and again.written == 0
    for name, collection in again.collections.items():
        assert collection.read == dataset.documents[name]
        assert collection.written == collection.consolidations == 0
    audit = store.audit.collection.find({"action": "legacy.migrate"}).limit(5)
    assert [entry["actor"] for entry in audit] == ["cli", "cli"]  # one entry per run


def test_the_old_collections_are_byte_identical_afterwards(store, dataset, source_db, raw_client):
    before = raw_documents(raw_client, source_db, LEGACY_COLLECTIONS)
    legacy_migrate(store=store, source_db=source_db)
    legacy_migrate(store=store, source_db=source_db)
    assert raw_documents(raw_client, source_db, LEGACY_COLLECTIONS) == before
    assert set(raw_client[source_db].list_collection_names()) == set(LEGACY_COLLECTIONS)
    for name in LEGACY_COLLECTIONS:  # the one addition: the index the `_id` windows read by
        indexes = raw_client[source_db][name].index_information()
        assert sorted(indexes) == ["_id_", "_id_1_agent_id_1"]


def test_a_dry_run_writes_nothing_and_reports_what_a_run_would(
    store, dataset, source_db, raw_client, memory_db
):
    names = [*NEW_COLLECTIONS_UNCHANGED_BY_A_RERUN, "memory_audit"]
    before = raw_documents(raw_client, memory_db, names)
    dry = legacy_migrate(store=store, source_db=source_db, dry_run=True)
    assert raw_documents(raw_client, memory_db, names) == before
    real = legacy_migrate(store=store, source_db=source_db)
    assert dry.dry_run and dry.as_dict()["collections"] == real.as_dict()["collections"]


def test_a_scope_edited_since_the_first_run_keeps_its_text(store, dataset, source_db):
    legacy_migrate(store=store, source_db=source_db, batch_size=7)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENTS[0], USERS[1]))
    consolidation_edit(store=store, scope=scope, text="Edited.", expected_version=1, actor="op")
    legacy_migrate(store=store, source_db=source_db, batch_size=7)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENTS[0], USERS[1]))
    assert (scope.consolidation, scope.consolidation_version) == ("Edited.", 2)


def test_the_legacy_collections_may_live_in_the_memory_database(store, raw_client, memory_db):
    dataset = legacy_dataset_write(raw_client[memory_db])
    report = legacy_migrate(store=store, source_db=memory_db)
    assert report.balanced
    assert {n: c.read for n, c in report.collections.items()} == dataset.documents


def test_batches_follow_id_order_through_crowded_and_empty_windows(raw_client, source_db):
    dataset = legacy_dataset_write(raw_client[source_db])
    reader = LegacyReader(raw_client[source_db])
    reader.prepare()
    for batch_size in (1, 3, 500):
        ids = [
            d["_id"] for b in reader.batches("memory_sessions", batch_size=batch_size) for d in b
        ]
        assert len(ids) == dataset.documents["memory_sessions"] and ids == sorted(ids)
    with pytest.raises(ValueError):
        next(reader.batches("memory_scopes", batch_size=10))


def test_odd_legacy_documents_are_read_leniently():
    item = LegacyItem.from_mongo({"_id": "x", "content": 5, "related_users": "u1"})
    assert (item.content, item.related_users, item.created_at) == (None, [], None)


def test_the_migration_goes_through_the_write_guard(store, raw_client, dataset, source_db):
    """Flags and redaction on migrated items; flagged pending items of a shard wait."""
    sessions = raw_client[source_db]["memory_sessions"]
    fact = sessions.find_one({"memory_type": "fact"})
    directive = sessions.find_one({"memory_type": "directive"})
    sessions.update_one({"_id": fact["_id"]}, {"$set": {"content": "Mail help@acme.example."}})
    sessions.update_one(
        {"_id": directive["_id"]}, {"$set": {"content": 'VPN password = "Hunter22!" for now.'}}
    )

    legacy_migrate(store=store, source_db=source_db)

    migrated_fact = store.observations.get(fact["_id"])
    assert migrated_fact.flags == ["pii:email"]
    assert migrated_fact.status == "in_review"  # a pending fact of a shard, flagged
    migrated_directive = store.observations.get(directive["_id"])
    assert migrated_directive.flags == ["secret"] and "Hunter22" not in migrated_directive.content
    assert migrated_directive.status in ("pending", "consolidated")  # individual: not held
