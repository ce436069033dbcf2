"""The `source_change` job: what follows an edit, a delete or marking private.

It is written in the change's transaction (the outbox) and sent after the commit; here
it is held back to look at what the commit alone left, then run, then run again: a job
that runs twice (a retry after a crash mid-way) changes nothing the second time.

The world is tests/streams/memory/test_derived_memory.py's (copies reach the group and the
collective; the fake model echoes its prompt).
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId

from memory_admin.integrations.llm import get_llm_provider
from streams.actions import Actor
from streams.actions.observations import (
    do_observation_add,
    do_observation_delete,
    do_observation_update,
)
from streams.jobs import CountingLLM, JobRun, job_get, job_list
from streams.memory.rebuild import rebuild_run
from streams.memory.scopes import scope_get
from streams.memory.source_change import source_change_run
from streams.store import MemoryStore
from tests.streams.memory.test_derived_memory import AGENT, NEW, OLD, drain, seed_secret, world

__all__ = ["world"]  # a fixture, imported for this module
CLI = Actor.cli()


@pytest.fixture
def held(monkeypatch) -> list[Any]:
    """The jobs actions send, kept here instead of run."""
    sent: list[Any] = []
    monkeypatch.setattr("streams.actions.base._dispatcher", sent.extend)
    return sent


def _state(store: MemoryStore) -> dict[str, Any]:
    observations = store.observations.collection.find({"agent_id": AGENT}).limit(200)
    jobs = store.jobs.collection.find({"agent_id": AGENT}).limit(200)
    scopes = store.scopes.collection.find({"agent_id": AGENT}).limit(20)
    return {
        "observations": sorted(
            (str(o["_id"]), o["content"], o.get("deleted_at") is None) for o in observations
        ),
        "jobs": sorted((str(j["_id"]), j["kind"], j["status"]) for j in jobs),
        "flags": sorted((str(s["_id"]), s.get("rebuild_observation_ids", [])) for s in scopes),
    }


def _live_copies(store: MemoryStore, secret_id: str) -> int:
    return len(
        list(
            store.observations.collection.find(
                {"agent_id": AGENT, "propagated_from": ObjectId(secret_id)}
            ).limit(20)
        )
    )


@pytest.mark.parametrize("change", ["delete", "edit"])
def test_the_commit_flags_and_queues_and_the_job_follows_up_once(
    store, world, held, change
) -> None:
    secret = seed_secret(store, world, "individual")
    copies = _live_copies(store, secret.id)
    assert copies
    if change == "delete":
        rebuilds = do_observation_delete(store=store, actor=CLI, observation=secret)
    else:
        _, rebuilds = do_observation_update(store=store, actor=CLI, observation=secret, content=NEW)

    # The commit: every scope that absorbed it flagged, its rebuild queued (waiting for
    # the job), and the job itself, the one thing sent; nothing removed yet.
    (job,) = held
    assert job.kind == "source_change" and job.payload["observation_id"] == secret.id
    assert OLD not in str(job.payload)  # a job document never holds memory text
    assert sorted(r.scope_id for r in rebuilds) == sorted(
        world[n] for n in ("individual", "group", "collective")
    )
    for rebuild in rebuilds:
        assert job_get(store=store, job_id=rebuild.id).payload["after"] == [job.id]
        assert scope_get(store=store, scope_id=rebuild.scope_id).needs_rebuild
    assert _live_copies(store, secret.id) == copies

    # A rebuild sent before the job (the sweep sends all it finds) waits for it.
    with pytest.raises(Exception, match="waits for job"):
        rebuild_run(store=store, run=_run(rebuilds[0].id, store))

    first = _run(job.id, store)
    source_change_run(store=store, run=first)
    assert _live_copies(store, secret.id) == 0
    assert sorted(j.id for j in first.follow_ups) == sorted(r.id for r in rebuilds)
    after_first = _state(store)

    again = _run(job.id, store)
    source_change_run(store=store, run=again)
    assert _state(store) == after_first  # nothing changed twice
    assert again.result["copies_removed"] == 0

    drain(store, [job])  # as the runner runs it (a third time), then the rebuilds it sends
    for name in ("individual", "group", "collective"):
        scope = scope_get(store=store, scope_id=world[name])
        assert not scope.needs_rebuild and OLD not in (scope.consolidation or "")
    assert not job_list(store=store, agent_id=AGENT, status="queued").items


def _run(job_id: str, store: MemoryStore) -> JobRun:
    return JobRun(job=job_get(store=store, job_id=job_id), llm=CountingLLM(get_llm_provider()))


def test_a_duplicate_add_marks_the_kept_one_private_with_its_entry_or_not_at_all(
    store, world, held, monkeypatch
) -> None:
    """The mark and its audit entry are one transaction: an entry that fails to be written
    leaves the kept observation as it was (before, the mark had committed alone)."""
    from streams.records.audit import audit_page

    scope = scope_get(store=store, scope_id=world["individual"])
    kept = do_observation_add(store=store, actor=CLI, scope=scope, content="Gene likes tea.")
    writer = store.audit.insert

    def failing(entry, **kwargs):
        if entry.action == "observation.update":
            raise RuntimeError("the entry failed")
        return writer(entry, **kwargs)

    monkeypatch.setattr(store.audit, "insert", failing)
    with pytest.raises(RuntimeError, match="the entry failed"):
        do_observation_add(
            store=store, actor=CLI, scope=scope, content="Gene likes tea.", private=True
        )
    assert not store.observations.get(ObjectId(kept.id)).private
    monkeypatch.setattr(store.audit, "insert", writer)

    again = do_observation_add(
        store=store, actor=CLI, scope=scope, content="Gene likes tea.", private=True
    )
    assert again.id == kept.id and again.duplicate and again.private
    (entry,) = [
        e for e in audit_page(store=store, actor="cli").items if e.action == "observation.update"
    ]
    assert entry.summary["reason"] == "duplicate add"
