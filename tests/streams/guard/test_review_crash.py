"""A process killed with SIGKILL around a review decision leaves nothing half done.

Killed inside the decision's transaction: nothing is decided (still waiting, no audit
entry, not pending). Killed after the commit, before its follow-up job is dispatched:
the decision, its audit entry and its consolidation job are all there (the job queued,
which the recovery sweep dispatches), and running that job consolidates the approval.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from bson import ObjectId

from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.task_mode import run_job

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from streams.store import MemoryStore
    from streams.store.client import get_client
    from streams.actions import Actor, register_dispatcher
    from streams.actions.review import do_review_decide
    import streams.actions.tx as tx

    store = MemoryStore(get_client(os.environ["URI"]), os.environ["DB"])
    where = sys.argv[2]

    def die(*_args, **_kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "in_transaction":
        # the decision and its entry are written, the commit never comes
        tx.fault_point = lambda point: die() if point == "action.before_commit" else None
    else:
        register_dispatcher(die)  # committed; killed before the job reaches a worker
    observation = store.observations.get(__import__("bson").ObjectId(sys.argv[1]))
    do_review_decide(store=store, actor=Actor.ui("ann"), observation=observation,
                     decision="approve")
    print("not killed")
    """
)


def decide_and_die(store, embedded_mongo, observation_id: str, where: str) -> int:
    env = {**os.environ, "URI": embedded_mongo.uri, "DB": store.db.name, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, observation_id, where],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "not killed" not in done.stdout, done.stderr
    return done.returncode


@pytest.fixture
def waiting(store):
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group("a1", "g1"), defaults={"consolidation_threshold": 1}
    )
    observation = observation_add(store=store, scope=group, content="Ops: +1 415 555 2671.")
    assert observation.status == "in_review"
    return group, observation


def review_entries(store, observation_id):
    return list(
        store.audit.collection.find(
            {"object_id": observation_id, "action": "observation.review_approve"}
        ).limit(5)
    )


def consolidation_jobs(store):
    found = store.jobs.page(status=None, agent_id="a1", before=None, limit=20)
    return [j for j in found if j.kind == "consolidation"]


def test_killed_inside_the_decision_nothing_is_decided(store, embedded_mongo, waiting):
    group, observation = waiting
    assert (
        decide_and_die(store, embedded_mongo, observation.id, "in_transaction") == -signal.SIGKILL
    )
    # The dead client's transaction is still open on the server (a real mongod aborts it
    # after transactionLifetimeLimitSeconds): end it first, so that a failed assertion
    # below cannot leave the database's drop waiting on it. Aborting changes nothing
    # committed, which is what the assertions read.
    store.client.admin.command("killAllSessions", [])

    fresh = store.observations.get(ObjectId(observation.id))
    assert fresh.status == "in_review" and "decision" not in (fresh.review or {})
    assert review_entries(store, observation.id) == []
    assert scope_get(store=store, scope_id=group.id).pending_count == 0
    assert consolidation_jobs(store) == []


def test_killed_before_the_follow_up_is_dispatched_the_job_is_queued(
    store, embedded_mongo, fake_openai, waiting
):
    group, observation = waiting
    assert decide_and_die(store, embedded_mongo, observation.id, "after_commit") == -signal.SIGKILL

    assert store.observations.get(ObjectId(observation.id)).status == "pending"
    assert len(review_entries(store, observation.id)) == 1
    assert scope_get(store=store, scope_id=group.id).pending_observation_ids == [observation.id]
    [job] = consolidation_jobs(store)
    assert job.status == "queued" and job.scope_id == group.id  # the sweep dispatches it
    run_job(store=store, job_id=job.id, work=lambda run: consolidation_run(store=store, run=run))
    fresh = scope_get(store=store, scope_id=group.id)
    assert fresh.pending_count == 0 and fresh.consolidation_version == 1
