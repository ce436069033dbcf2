"""The `bulk` job: batches commit with the job's progress, so a run that dies halfway (an
error inside a batch's transaction, or the process killed between batches) resumes where
it stopped, and nothing is applied twice or lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from bson import ObjectId

import streams.memory.bulk_job
from streams.core.documents import Job, Observation, Scope
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.bulk import BulkFilter, bulk_match, bulk_target
from streams.memory.bulk_job import bulk_payload, bulk_run
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from streams.store.bulk import BulkRepository

ROOT = Path(__file__).resolve().parents[3]
AGENT = "a1"
TOTAL = 60
BATCH = 10


def _scopes(store: MemoryStore) -> tuple[Scope, Scope]:
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g-1"))
    alice, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "alice"))
    return group, alice


def _fill(store: MemoryStore, group: Scope) -> list[Observation]:
    added = [
        observation_add(
            store=store,
            scope=group,
            content=f"Alice note {i}",
            source_session_id="s-1",
            source_message_ids=[str(ObjectId())],
            related_user_ids=["alice", "bob"] if i % 2 else ["alice"],
        )
        for i in range(TOTAL)
    ]
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=group.id), expected_version=0,
        text="Alice notes.", absorbed_ids=[o.id for o in added[:25]], trigger="threshold",
        actor=None,
    )  # fmt: skip
    return added


def _move_job(store: MemoryStore, group: Scope, alice: Scope) -> Job:
    target = bulk_target(store=store, agent_id=AGENT, action="move", target_scope_id=alice.id)
    bulk_filter = BulkFilter(scope_id=group.id, q="alice note")
    match = bulk_match(
        store=store, agent_id=AGENT, bulk_filter=bulk_filter, action="move", target=target
    )
    assert match.matched == TOTAL
    payload = bulk_payload(
        bulk_filter=bulk_filter, action="move", target=target, match=match, batch_size=BATCH
    )
    return job_create(store=store, kind="bulk", agent_id=AGENT, actor="cli", payload=payload)


def _assert_moved_exactly_once(store: MemoryStore, group: Scope, alice: Scope, added) -> None:
    group_now = scope_get(store=store, scope_id=group.id)
    alice_now = scope_get(store=store, scope_id=alice.id)
    assert (group_now.observation_count, group_now.pending_count) == (0, 0)
    assert (alice_now.observation_count, alice_now.pending_count) == (TOTAL, TOTAL)
    assert alice_now.observation_seq == TOTAL  # no place in her log claimed twice
    moved = BulkRepository(store.db).at_seqs(ObjectId(alice.id), list(range(1, TOTAL + 1)))
    assert sorted(o.id for o in moved) == sorted(o.id for o in added)
    assert sorted(group_now.rebuild_observation_ids) == sorted(o.id for o in added[:25])
    agent = store.agents.get(AGENT)
    assert agent is not None and agent.pending_count == TOTAL
    assert agent.observation_count == TOTAL


def test_an_error_inside_a_batch_rolls_it_back_and_the_retry_resumes_there(store, monkeypatch):
    group, alice = _scopes(store)
    added = _fill(store, group)
    job = _move_job(store, group, alice)
    real_advance = BulkRepository.advance
    calls = {"n": 0}

    def dies_on_the_third(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the third batch's writes are made, its commit never comes
            raise RuntimeError("worker lost")
        return real_advance(self, *args, **kwargs)

    monkeypatch.setattr(BulkRepository, "advance", dies_on_the_third)
    work = lambda run: bulk_run(store=store, run=run)  # noqa: E731
    with pytest.raises(RuntimeError):
        job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert store.jobs.get(ObjectId(job.id)).status == "failed"
    progress = BulkRepository(store.db).progress(ObjectId(job.id))
    assert (progress["done"], progress["applied"]) == (2 * BATCH, 2 * BATCH)
    assert scope_get(store=store, scope_id=alice.id).observation_count == 2 * BATCH
    assert scope_get(store=store, scope_id=group.id).observation_count == TOTAL - 2 * BATCH

    run = job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert run is not None
    assert run.result["resumed_at"] == 2 * BATCH and run.result["applied"] == TOTAL
    assert run.result["rebuild_scope_ids"] == [group.id]
    assert [j.kind for j in run.follow_ups] == ["rebuild", "consolidation"]
    _assert_moved_exactly_once(store, group, alice, added)


def test_slow_batches_shrink_the_next_and_a_resumed_run_lines_up(store, monkeypatch):
    """Every batch "too slow": each next one is half the size; the third dies, and the
    resumed run (starting again at the full size) begins exactly where the progress stands."""
    group, alice = _scopes(store)
    added = _fill(store, group)
    job = _move_job(store, group, alice)
    monkeypatch.setattr(streams.memory.bulk_job, "BATCH_SECONDS", -1.0)
    monkeypatch.setattr(streams.memory.bulk_job, "MIN_BATCH", 1)
    real_advance = BulkRepository.advance
    sizes: list[int] = []

    def dies_on_the_third(self, job_oid, *, expected_done, done, **kwargs):
        sizes.append(done - expected_done)
        if len(sizes) == 3:
            raise RuntimeError("worker lost")
        return real_advance(self, job_oid, expected_done=expected_done, done=done, **kwargs)

    monkeypatch.setattr(BulkRepository, "advance", dies_on_the_third)
    work = lambda run: bulk_run(store=store, run=run)  # noqa: E731
    with pytest.raises(RuntimeError):
        job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert sizes == [BATCH, BATCH // 2, BATCH // 4]
    assert BulkRepository(store.db).progress(ObjectId(job.id))["done"] == BATCH + BATCH // 2
    run = job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert run is not None and run.result["applied"] == TOTAL
    assert sizes[3] == BATCH and sum(sizes[3:]) == TOTAL - BATCH - BATCH // 2
    _assert_moved_exactly_once(store, group, alice, added)


def test_a_killed_run_resumes_from_its_progress(store):
    """A real process applies the batches (slowly) and is killed with SIGKILL between
    two of them; another run takes the job over once its lease is stale."""
    group, alice = _scopes(store)
    added = _fill(store, group)
    job = _move_job(store, group, alice)
    uri = os.environ["MEMORY_TEST_MONGODB_URI"]
    script = textwrap.dedent(
        f"""
        import time
        from datetime import timedelta
        import streams.memory.bulk_job as bulk
        from streams.jobs import job_execute
        from streams.llm.offline import OfflineProvider
        from streams.store import MemoryStore
        from streams.store.client import get_client

        real = bulk.bulk_apply_batch
        def slow(**kwargs):
            real(**kwargs)
            time.sleep(0.4)
        bulk.bulk_apply_batch = slow
        store = MemoryStore(get_client({uri!r}), {store.db.name!r})
        job_execute(
            store=store, job_id={job.id!r}, llm=OfflineProvider(),
            work=lambda run: bulk.bulk_run(store=store, run=run),
            stale_after=timedelta(seconds=1),
        )
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    repo = BulkRepository(store.db)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if int(repo.progress(ObjectId(job.id)).get("done") or 0) >= 2 * BATCH:
                break
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    killed_at = int(repo.progress(ObjectId(job.id))["done"])
    assert 2 * BATCH <= killed_at < TOTAL
    assert store.jobs.get(ObjectId(job.id)).status == "running"  # its worker is gone
    moved_so_far = scope_get(store=store, scope_id=alice.id).observation_count
    assert moved_so_far == killed_at  # a partial result: exactly the committed batches

    time.sleep(1.5)  # the dead run's lease goes stale
    run = job_execute(
        store=store,
        job_id=job.id,
        llm=OfflineProvider(),
        work=lambda run: bulk_run(store=store, run=run),
        stale_after=timedelta(seconds=1),
    )
    assert run is not None and run.result["resumed_at"] == killed_at
    assert run.result["applied"] == TOTAL
    _assert_moved_exactly_once(store, group, alice, added)


def test_a_finished_job_run_again_changes_nothing(store):
    group, alice = _scopes(store)
    added = _fill(store, group)
    job = _move_job(store, group, alice)
    work = lambda run: bulk_run(store=store, run=run)  # noqa: E731
    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    assert job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work) is None
    # Even the work itself, called on the finished job, finds every batch done.
    run_again = type("Run", (), {"job": store.jobs.get(ObjectId(job.id)), "follow_ups": []})()
    bulk_run(store=store, run=run_again)  # type: ignore[arg-type]
    _assert_moved_exactly_once(store, group, alice, added)


def test_a_bulk_delete_taints_what_a_run_absorbed_after_the_batch_read_it(store, monkeypatch):
    """As a single delete (tests/streams/memory/test_consolidation_delete_race.py): the
    batch read its observations pending, a consolidation absorbed them, then the batch
    deleted them. Its transaction decides what it taints, so the scope waits for a
    rebuild without their words."""
    group, _ = _scopes(store)
    added = _fill(store, group)
    real_at_seqs = BulkRepository.at_seqs

    def absorbed_after_the_read(self, scope_id, seqs):
        read = real_at_seqs(self, scope_id, seqs)
        now = scope_get(store=store, scope_id=group.id)
        if now.pending_observation_ids:  # the run commits between the read and the write
            consolidation_commit(
                store=store, scope=now, expected_version=now.consolidation_version,
                text="Alice notes, all of them.", absorbed_ids=list(now.pending_observation_ids),
                trigger="threshold", actor=None,
            )  # fmt: skip
        return read

    monkeypatch.setattr(BulkRepository, "at_seqs", absorbed_after_the_read)
    bulk_filter = BulkFilter(scope_id=group.id, q="alice note")
    match = bulk_match(store=store, agent_id=AGENT, bulk_filter=bulk_filter, action="delete")
    payload = bulk_payload(
        bulk_filter=bulk_filter, action="delete", target=None, match=match, batch_size=TOTAL
    )
    job = job_create(store=store, kind="bulk", agent_id=AGENT, actor="cli", payload=payload)
    work = lambda run: bulk_run(store=store, run=run)  # noqa: E731
    job_execute(store=store, job_id=job.id, llm=OfflineProvider(), work=work)
    after = scope_get(store=store, scope_id=group.id)
    assert sorted(after.rebuild_observation_ids) == sorted(o.id for o in added)
    assert after.pending_observation_ids == [] and after.pending_count == 0
