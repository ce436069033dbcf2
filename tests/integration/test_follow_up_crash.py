"""An edit, delete or merge killed right after its commit is still followed up.

What follows such a change (the propagated copies removed, the consolidations that
absorbed the old text rebuilt, the context log scrubbed of it) is a `source_change` job
written in the action's own transaction: the outbox. Here a child process runs the
action and is SIGKILLed at `action.before_dispatch` (committed, nothing sent yet); the
recovery sweep then sends the job, and the removed text leaves the copies, the
consolidations and the logged calls. Before the outbox these follow-ups ran in the
process after the commit, and a kill there left the text in all three for good.

The world is tests/streams/memory/test_derived_memory.py's (the fake model echoes its prompt, so
the text is in every version that absorbed it, and propagation copies it up).
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import retry_failed_jobs
from streams.context.assemble import context_assemble
from streams.context.log import context_calls_page
from streams.jobs import job_list
from streams.memory.scopes import scope_get
from streams.store import MemoryStore, write_behind
from tests.integration.test_action_crash import _killed_at
from tests.streams.memory.test_derived_memory import AGENT, OLD, add, seed_secret, world

__all__ = ["world"]  # a fixture, imported for this module
pytestmark = pytest.mark.django_db  # the recovery sweep queues its tasks on commit
SECRET = "zanzibar"
REACHED = ["individual", "group", "collective"]  # the secret's scope and its copies'

CHILD = """
import os, sys
from bson import ObjectId
from streams.actions import Actor
from streams.actions.observations import (
    do_observation_delete, do_observation_merge, do_observation_update,
)
from streams.store import MemoryStore
from streams.store.client import get_client

store = MemoryStore(get_client(os.environ["MEMORY_TEST_MONGODB_URI"]), sys.argv[1])
action, secret = sys.argv[2], store.observations.get(ObjectId(sys.argv[3]))
if action == "delete":
    do_observation_delete(store=store, actor=Actor.cli(), observation=secret)
elif action == "edit":
    do_observation_update(
        store=store, actor=Actor.cli(), observation=secret,
        content="Gene kiteboards in Madagascar every spring.",
    )
elif action == "private":
    do_observation_update(store=store, actor=Actor.cli(), observation=secret, private=True)
else:
    keep = store.observations.get(ObjectId(sys.argv[4]))
    do_observation_merge(store=store, actor=Actor.cli(), keep=keep, drop=secret)
print("finished")
"""


def _logged_xml(store: MemoryStore) -> list[str]:
    write_behind.flush()
    page = context_calls_page(store=store, agent_id=AGENT, user_id="u2", limit=50)
    return [call["xml"] for call in page.items]


def _live_copies(store: MemoryStore, secret_id: str) -> list[dict]:
    """Live observations holding the old text other than the secret itself (its copies)."""
    return list(
        store.observations.collection.find(
            {
                "agent_id": AGENT,
                "content": OLD,
                "_id": {"$ne": ObjectId(secret_id)},
                "deleted_at": None,
            }
        ).limit(20)
    )


def _sweep_until_settled(store: MemoryStore, run_tasks) -> None:
    """What the 15 s recovery sweep does, round after round, until no job is queued."""
    for _ in range(10):
        with run_tasks():
            retry_failed_jobs.apply().get()
        if not job_list(store=store, agent_id=AGENT, status="queued").items:
            return
    raise AssertionError("jobs stayed queued after ten sweeps")


@pytest.mark.parametrize("action", ["delete", "edit", "private", "merge"])
def test_a_change_killed_after_its_commit_is_followed_up_by_the_sweep(
    store, world, memory_db, settings, run_tasks, action
):
    store.context_log_days = 7
    settings.MEMORY_CONTEXT_LOG_DAYS = 7
    secret = seed_secret(store, world, "individual")
    keep = add(store, world["individual"], "Gene kiteboards every spring.", "u1")
    result = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u2",
        groups=[("g1", "Eden Team")],
        message="Do you remember where Gene kiteboards?",
        session_id="s-u2",
    )
    assert SECRET in result.xml.lower()  # the group's copy, quoted to another user
    assert _live_copies(store, secret.id)

    _killed_at("action.before_dispatch", memory_db, CHILD, action, secret.id, keep.id)

    # Committed: the change and its follow-up job; nothing has followed up yet.
    changed = store.observations.get(ObjectId(secret.id))
    assert changed is not None
    assert {"delete": changed.deleted, "merge": changed.deleted}.get(
        action, changed.private or changed.content != OLD
    )
    assert _live_copies(store, secret.id)  # the copies are still there

    settings.MEMORY_JOB_STALE_SECONDS = 0  # the sweep's "nobody sent it" age, reached at once
    _sweep_until_settled(store, run_tasks)

    assert _live_copies(store, secret.id) == []
    (job,) = job_list(store=store, agent_id=AGENT, kind="source_change").items
    assert (job.payload["observation_id"], job.status) == (secret.id, "succeeded")
    for name in REACHED[1:] if action == "private" else REACHED:
        scope = scope_get(store=store, scope_id=world[name])
        assert SECRET not in scope.consolidation.lower(), name
        assert not scope.rebuild_observation_ids, name
    assert all(SECRET not in xml.lower() for xml in _logged_xml(store))
