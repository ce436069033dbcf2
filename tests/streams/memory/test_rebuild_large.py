"""A rebuild after a bulk delete of more ids than one `$pull {$in}` takes (`PULL_INLINE`):
the scope's lists and the versions' absorbed lists lose exactly the deleted ids, in the
commit's transaction; a commit that dies leaves everything as it was, and the retry
finishes it once."""

from __future__ import annotations

import re

import pytest
from bson import ObjectId

import streams.memory.consolidation
import streams.memory.supersession
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.bulk import BulkFilter, bulk_match
from streams.memory.bulk_job import bulk_payload, bulk_run
from streams.memory.consolidation import consolidation_commit
from streams.memory.consolidation_chunks import chunk_plan
from streams.memory.observations import observation_add
from streams.memory.rebuild import REBUILT, rebuild_run
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from streams.store.scope_lists import PULL_INLINE

AGENT = "a1"
ABSORBED = 90
DELETED = 80  # of the absorbed: more than PULL_INLINE
PENDING = 6


@pytest.fixture(autouse=True)
def _no_supersession(monkeypatch):
    """The numbered notes read as one subject with other values: in an individual scope the
    newer would supersede the older at once and leave the pending list, which these lists'
    counts do not test (tests/api/test_supersession_api.py does)."""
    monkeypatch.setattr(streams.memory.supersession, "ENABLED", False)


def _world(store: MemoryStore):
    # An individual scope: a contradiction between two notes flags them, never holds them.
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "alice"))
    added = [
        observation_add(
            store=store, scope=scope_get(store=store, scope_id=scope.id),
            content=f"Team note number {i} about room {i}",
            source_session_id="s-bad" if i < DELETED else "s-ok", related_user_ids=["bob"],
        )
        for i in range(ABSORBED + PENDING)
    ]  # fmt: skip
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="The team keeps notes.", absorbed_ids=[o.id for o in added[:ABSORBED]],
        trigger="threshold", actor=None,
    )  # fmt: skip
    return scope, added


def _bulk_delete(store: MemoryStore, scope_id: str):
    bulk_filter = BulkFilter(scope_id=scope_id, session_id="s-bad")
    match = bulk_match(store=store, agent_id=AGENT, bulk_filter=bulk_filter, action="delete")
    assert match.matched == DELETED
    payload = bulk_payload(
        bulk_filter=bulk_filter, action="delete", target=None, match=match, batch_size=25
    )
    job = job_create(store=store, kind="bulk", agent_id=AGENT, actor="cli", payload=payload)
    done = job_execute(
        store=store, job_id=job.id, llm=OfflineProvider(),
        work=lambda r: bulk_run(store=store, run=r),
    )  # fmt: skip
    assert done is not None
    [rebuild] = done.follow_ups
    return rebuild


def _rebuild(store: MemoryStore, job_id: str):
    return job_execute(
        store=store, job_id=job_id, llm=OfflineProvider(),
        work=lambda r: rebuild_run(store=store, run=r),
    )  # fmt: skip


def test_a_rebuild_after_a_large_bulk_delete_drops_exactly_the_deleted(store):
    assert DELETED > PULL_INLINE
    scope, added = _world(store)
    rebuild = _bulk_delete(store, scope.id)
    flagged = scope_get(store=store, scope_id=scope.id)
    assert sorted(flagged.rebuild_observation_ids) == sorted(o.id for o in added[:DELETED])
    assert flagged.pending_observation_ids == [o.id for o in added[ABSORBED:]]

    run = _rebuild(store, rebuild.id)
    assert run is not None and run.result["absorbed"] == ABSORBED - DELETED
    after = scope_get(store=store, scope_id=scope.id)
    assert after.rebuild_observation_ids == [] and after.consolidation_version == 2
    assert after.pending_observation_ids == [o.id for o in added[ABSORBED:]]  # untouched
    first = store.consolidations.get(ObjectId(scope.id), 1)
    assert first is not None and first.text == REBUILT
    assert first.absorbed_observation_ids == [o.id for o in added[DELETED:ABSORBED]]
    second = store.consolidations.get(ObjectId(scope.id), 2)
    assert second is not None
    assert sorted(second.absorbed_observation_ids) == sorted(o.id for o in added[DELETED:ABSORBED])


def test_a_rebuild_whose_commit_dies_changes_nothing_and_its_retry_finishes(store, monkeypatch):
    scope, added = _world(store)
    rebuild = _bulk_delete(store, scope.id)
    before = store.scopes.collection.find_one({"_id": ObjectId(scope.id)})
    history = store.consolidations.get(ObjectId(scope.id), 1)

    def dies(**_kwargs):  # the last write of the commit's transaction
        raise RuntimeError("worker lost")

    monkeypatch.setattr(streams.memory.consolidation, "consolidation_versioned", dies)
    with pytest.raises(RuntimeError):
        _rebuild(store, rebuild.id)
    still = store.scopes.collection.find_one({"_id": ObjectId(scope.id)})
    for name in ("rebuild_observation_ids", "pending_observation_ids", "consolidation_version"):
        assert still[name] == before[name]
    assert store.consolidations.get(ObjectId(scope.id), 1) == history  # nothing redacted

    monkeypatch.undo()
    run = _rebuild(store, rebuild.id)
    assert run is not None and run.result["version"] == 2
    after = scope_get(store=store, scope_id=scope.id)
    assert after.rebuild_observation_ids == [] and after.consolidation_version == 2
    assert after.pending_observation_ids == [o.id for o in added[ABSORBED:]]


def test_ids_leave_the_pending_list_in_bulk_and_one_by_one(store):
    scope, added = _world(store)
    oid = ObjectId(scope.id)
    pending = [ObjectId(o.id) for o in added[ABSORBED:]]
    store.scopes.push_pending(oid, [ObjectId() for _ in range(PULL_INLINE)])
    many = scope_get(store=store, scope_id=scope.id).pending_observation_ids
    extra = [ObjectId(i) for i in many if ObjectId(i) not in pending]
    assert store.scopes.pull_pending(oid, extra) == 1  # more than PULL_INLINE: read and set
    assert store.scopes.pull_pending(oid, extra) == 0  # gone already
    assert store.scopes.pull_pending(oid, pending[:1]) == 1  # one: a `$pull`
    assert scope_get(store=store, scope_id=scope.id).pending_observation_ids == [
        str(i) for i in pending[1:]
    ]


def test_a_rebuild_folds_in_chunks_within_the_budget(store):
    """A rebuild refolds everything its versions absorbed since the first tainted one: past
    the chunk budget it folds chunk after chunk, as a consolidation does, each call within
    the budget, and the version states what is left and nothing removed."""
    scope, added = _world(store)
    rebuild = _bulk_delete(store, scope.id)
    left = added[DELETED:ABSORBED]
    whole = chunk_plan(store=store, scope=scope_get(store=store, scope_id=scope.id),
                       observations=left, budget=10**9)  # fmt: skip
    budget = whole.fixed_tokens + whole.line_tokens[0] * 3 // len(left)
    sent: list[str] = []

    class Counting(OfflineProvider):
        def complete(self, request):
            sent.append(request.prompt)
            return super().complete(request)

    run = job_execute(
        store=store, job_id=rebuild.id, llm=Counting(),
        work=lambda r: rebuild_run(store=store, run=r, chunk_tokens=budget),
    )  # fmt: skip
    assert run is not None and run.result["chunks"] >= 3 and len(sent) == run.result["chunks"]
    text = scope_get(store=store, scope_id=scope.id).consolidation or ""
    # The offline rules keep the newest of these same-subject notes (chaining the chunks
    # is tested with the consolidation's: tests/streams/memory/test_consolidation_chunks.py).
    assert f"room {ABSORBED - 1}" in text, text
    assert not any(re.search(rf"\broom {i}\b", text) for i in range(DELETED)), text
    # Each call carried its chunk only: no call saw every line that is left.
    assert not any(all(f"room {i}" in prompt for i in range(DELETED, ABSORBED)) for prompt in sent)
