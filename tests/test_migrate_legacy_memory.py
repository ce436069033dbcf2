"""`migrate_legacy_memory`: dry run, the validation report, a rerun, bad options."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from pymongo import MongoClient

from tests.fakes.legacy_data import AGENTS, LegacyDataset, legacy_dataset_write


@pytest.fixture
def source_db(embedded_mongo) -> Iterator[tuple[str, LegacyDataset]]:
    client = MongoClient(embedded_mongo.uri)
    name = f"legacy_{uuid.uuid4().hex[:12]}"
    yield name, legacy_dataset_write(client[name])
    client.drop_database(name)
    client.close()


def migrate(*args: str) -> str:
    out = StringIO()
    call_command("migrate_legacy_memory", *args, stdout=out)
    return out.getvalue()


def table_rows(output: str) -> dict[str, list[int]]:
    rows = {}
    for line in output.splitlines():
        name, *values = line.split() or [""]
        if name.startswith("memory_") and values and all(v.isdigit() for v in values):
            rows[name] = [int(v) for v in values]
    return rows


def scope_count(store) -> int:
    return len(list(store.scopes.collection.find({"agent_id": {"$in": list(AGENTS)}}).limit(100)))


def test_dry_run_then_run_then_rerun(store, source_db):
    name, dataset = source_db
    dry = migrate("--dry-run", "--source-db", name)
    assert "dry run: nothing written" in dry and "validation: OK" in dry
    assert scope_count(store) == 0
    first = migrate("--source-db", name)
    rows = table_rows(first)
    assert {n: r[0] for n, r in rows.items()} == dataset.documents  # read = the source
    assert table_rows(dry) == rows  # the dry run announced exactly this
    assert rows["memory_user"] == [8, 8, 0, 0, 8]
    assert "memory_sessions: episode (not migrated): 16" in first
    assert "memory_agent: no valid shard_name: 1" in first
    assert scope_count(store) == 13
    second = table_rows(migrate("--source-db", name))
    for collection, (read, written, existing, skipped, consolidations) in second.items():
        assert (written, consolidations) == (0, 0)
        assert read == dataset.documents[collection] == existing + skipped


def test_json_report(store, source_db):
    name, dataset = source_db
    report = json.loads(migrate("--source-db", name, "--json", "--batch-size", "5"))
    assert report["balanced"] and not report["dry_run"] and report["source_db"] == name
    sessions = report["collections"]["memory_sessions"]
    assert sessions["read"] == dataset.documents["memory_sessions"]
    assert sessions["notes"]["pending"] == dataset.items["pending"]


def test_the_memory_database_is_the_default_source(store):
    output = migrate()
    assert table_rows(output) == {
        "memory_user": [0, 0, 0, 0, 0],
        "memory_agent": [0, 0, 0, 0, 0],
        "memory_sessions": [0, 0, 0, 0, 0],
    }
    assert f'database "{store.db.name}"' in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source-db", "bad name"], "--source-db"),
        (["--source-db", "a.b"], "--source-db"),
        (["--source-db", "x" * 64], "--source-db"),
        (["--batch-size", "0"], "--batch-size"),
    ],
)
def test_bad_options_are_refused(store, args, message):
    with pytest.raises(CommandError, match=message):
        migrate(*args)


def test_objectid_data_as_domain_md_shapes_it(store, source_db):
    """ids are ObjectIds in the legacy collections: kept as strings, the item id as the id."""
    from datetime import UTC

    from streams.memory.consolidation import consolidation_history
    from streams.memory.observations import observation_list
    from streams.memory.scopes import ScopeKey, scope_get_or_create
    from tests.fakes.legacy_data import AGENT_OIDS, USER_OIDS

    name, dataset = source_db
    output = migrate("--source-db", name)
    assert "no valid agent_id" not in output and "validation: OK" in output
    legacy_user = next(
        u for u in dataset.users if (u["agent_id"], u["user_id"]) == (AGENT_OIDS[0], USER_OIDS[0])
    )
    key = ScopeKey.individual(str(AGENT_OIDS[0]), str(USER_OIDS[0]))
    scope, created = scope_get_or_create(store=store, key=key)
    assert not created and (scope.agent_id, scope.user_id) == (key.agent_id, key.user_id)
    assert scope.consolidation == legacy_user["content"]
    [version] = consolidation_history(store=store, scope=scope).items
    assert version.created_at == legacy_user["last_updated_at"].replace(tzinfo=UTC)
    observations = observation_list(store=store, scope=scope).items
    unabsorbed = {str(oid) for oid in legacy_user["unabsorbed_memory_ids"]}
    assert unabsorbed & {o.id for o in observations}  # the legacy ObjectId is the id
    assert all(o.related_user_ids == [str(USER_OIDS[0])] for o in observations)


def test_string_and_objectid_ids_are_both_read():
    from bson import ObjectId

    from streams.legacy.documents import LegacyItem, LegacyShard, LegacyUser

    oid = ObjectId()
    for value, text in ((oid, str(oid)), ("u-1", "u-1")):
        item = LegacyItem.from_mongo(
            {"_id": ObjectId(), "agent_id": value, "related_users": [value, 7], "shard_id": value}
        )
        assert (item.agent_id, item.related_users, item.shard_id) == (text, [text], text)
        user = LegacyUser.from_mongo({"_id": oid, "agent_id": value, "user_id": value})
        assert (user.agent_id, user.user_id) == (text, text)
        shard = LegacyShard.from_mongo({"_id": oid, "agent_id": value, "facts": [value]})
        assert (shard.agent_id, shard.facts) == (text, [text])
    assert LegacyUser.from_mongo({"_id": oid, "agent_id": 12}).agent_id is None
