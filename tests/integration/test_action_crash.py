"""One transaction per action, proved with SIGKILL: a process runs an action and is killed
at a fault point (MEMORY_FAULT_PAUSE, `streams.actions.tx.fault_point`) either after the
commit and before its jobs are dispatched, or before the commit. Afterwards the change,
its audit entry and its job are all there (and the recovery sweep dispatches and runs
the job), or none of them is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import retry_failed_jobs
from streams.actions import Actor
from streams.actions.sessions import do_messages_ingest
from streams.core.exceptions import Busy
from streams.jobs import job_get, job_list
from streams.memory.formation import FormationSettings, IncomingMessage
from streams.records.audit import audit_page
from streams.store import MemoryStore
from tests.factories import ScopeFactory
from tests.fakes.openai_wire import one_fact_responder

pytestmark = pytest.mark.django_db  # the recovery sweep queues its tasks on commit
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = FormationSettings(max_messages=4)  # four messages make a formation due

MESSAGES = [IncomingMessage(id=f"m{i}", role="user", content="I prefer tea.") for i in range(4)]
WAIT_SECONDS = 60

# The child: the ingest action through the domain alone, as a script outside Django would.
CHILD = """
import os, sys
from streams.actions import Actor
from streams.actions.sessions import do_messages_ingest
from streams.store import MemoryStore
from tests.factories import ScopeFactory
from streams.store.client import get_client
from tests.integration.test_action_crash import MESSAGES, SETTINGS

store = MemoryStore(get_client(os.environ["MEMORY_TEST_MONGODB_URI"]), sys.argv[1])
do_messages_ingest(
    store=store, actor=Actor.cli(), agent_id="a1", session_id="s1", user_id="u1",
    user_name="Gene", groups=[], messages=MESSAGES, settings=SETTINGS,
)
print("finished")
"""


# The child of the add: one observation that fills its scope's threshold (1).
ADD_CHILD = """
import os, sys
from bson import ObjectId
from streams.actions import Actor
from streams.actions.observations import do_observation_add
from streams.store import MemoryStore
from tests.factories import ScopeFactory
from streams.store.client import get_client

store = MemoryStore(get_client(os.environ["MEMORY_TEST_MONGODB_URI"]), sys.argv[1])
scope = store.scopes.get(ObjectId(sys.argv[2]))
do_observation_add(store=store, actor=Actor.cli(), scope=scope, content="Gene sails on Sundays.")
print("finished")
"""


def _killed_at(point: str, memory_db: str, script: str = CHILD, *args: str) -> None:
    """Run the action in a child that stops at `point`, and SIGKILL it there."""
    env = {**os.environ, "MEMORY_FAULT_PAUSE": point, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", script, memory_db, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        seen = []
        for line in child.stderr:  # blocks until the child reaches the point (or ends)
            seen.append(line)
            if line.startswith(f"fault point {point}"):
                break
        else:
            raise AssertionError(f"the child never reached {point}: {''.join(seen)[-2000:]}")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.wait(timeout=WAIT_SECONDS)
    assert child.returncode == -signal.SIGKILL


def _ingest_entries(store: MemoryStore) -> list:
    return [e for e in audit_page(store=store, agent_id="a1").items if e.action == "session.ingest"]


def test_killed_between_commit_and_dispatch_leaves_all_and_the_sweep_runs_the_job(
    store, memory_db, fake_openai, settings, run_tasks
):
    _killed_at("action.before_dispatch", memory_db)

    buffer = store.sessions.get_buffer("a1", "s1")
    assert buffer is not None and buffer["unformed_count"] == 4  # the change
    (entry,) = _ingest_entries(store)  # its audit entry
    assert entry.actor == "cli" and entry.summary["accepted"] == 4
    (job,) = job_list(store=store, agent_id="a1").items  # its job: committed, never sent
    assert job.id == entry.summary["formation_job_id"]
    assert (job.kind, job.status, job.attempts) == ("formation", "queued", 0)

    settings.MEMORY_JOB_STALE_SECONDS = 0  # the sweep's "nobody sent it" age, reached at once
    # The model states the fact the messages hold (an empty answer to them is refused).
    fake_openai.set_responder(one_fact_responder("Gene prefers tea."))
    with run_tasks():
        assert retry_failed_jobs.apply().get() == 1
    ran = job_get(store=store, job_id=job.id)
    assert (ran.status, ran.attempts) == ("succeeded", 1)
    assert store.sessions.get_buffer("a1", "s1")["unformed_count"] == 0


def test_killed_before_commit_leaves_nothing_and_the_action_goes_through_after(store, memory_db):
    _killed_at("action.before_commit", memory_db)

    buffer = store.sessions.get_buffer("a1", "s1")
    assert buffer is None or buffer["unformed_count"] == 0  # no change
    assert _ingest_entries(store) == []  # no audit entry
    assert job_list(store=store, agent_id="a1").items == []  # no job

    # The dead child's transaction holds the session's buffer until the store reaps it;
    # then the same action, run again, commits all three.
    for _ in range(WAIT_SECONDS // 5):
        try:
            result = do_messages_ingest(
                store=store,
                actor=Actor.cli(),
                agent_id="a1",
                session_id="s1",
                user_id="u1",
                user_name="Gene",
                groups=[],
                messages=MESSAGES,
                settings=SETTINGS,
                follow_ups=[],  # kept, not run: this test is about the commit
            )
            break
        except Busy:
            continue
    else:
        raise AssertionError("the dead child's transaction was never reaped")
    assert result.accepted == 4 and result.formation_job is not None
    (entry,) = _ingest_entries(store)
    assert entry.summary["formation_job_id"] == result.formation_job.id
    assert job_get(store=store, job_id=result.formation_job.id).status == "queued"


def test_an_add_killed_between_commit_and_dispatch_leaves_its_threshold_job_queued(
    store, memory_db, fake_openai, settings, run_tasks
):
    scope = ScopeFactory.create(store=store, agent_id="a1", consolidation_threshold=1)
    _killed_at("action.before_dispatch", memory_db, ADD_CHILD, scope.id)

    (observation,) = store.observations.collection.find({"scope_id": ObjectId(scope.id)}).limit(5)
    assert observation["content"] == "Gene sails on Sundays."  # the change
    (entry,) = [
        e for e in audit_page(store=store, agent_id="a1").items if e.action == "observation.create"
    ]
    assert entry.object_id == str(observation["_id"])  # its audit entry
    (job,) = job_list(store=store, agent_id="a1").items  # its job: committed, never sent
    assert (job.kind, job.trigger, job.status, job.attempts) == (
        "consolidation",
        "threshold",
        "queued",
        0,
    )

    settings.MEMORY_JOB_STALE_SECONDS = 0
    with run_tasks():
        assert retry_failed_jobs.apply().get() == 1
    assert job_get(store=store, job_id=job.id).attempts == 1  # the sweep sent it
