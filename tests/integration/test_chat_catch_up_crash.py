"""A chat call filed after a removal it missed, killed right after its commit, is still
scrubbed: the check is a `chat_catch_up` job written with the record in the filing's
transaction (ids and digests, never the quoted words). Before, the check ran in the
proxy's thread after the commit, and a kill there left the removed text in the record.

The parent prepares the turn (its context quotes the group's copy of a secret), deletes
the secret while "the upstream answers" (the rebuild redacting its versions runs to the
end), then a child files the turn and is SIGKILLed at `action.before_dispatch`; the
recovery sweep then sends the job.
"""

from __future__ import annotations

import pickle

import pytest

from streams.jobs import job_list
from streams.store import MemoryStore
from tests.integration.test_action_crash import _killed_at
from tests.integration.test_follow_up_crash import _sweep_until_settled
from tests.streams.context.test_chat_calls_scrub import QUESTION, _prepare, _stored
from tests.streams.memory.test_derived_memory import AGENT, SECRET, act, seed_secret, world

__all__ = ["world"]  # a fixture, imported for this module
pytestmark = pytest.mark.django_db  # the recovery sweep queues its tasks on commit

CHILD = """
import os, pickle, sys
from streams.actions.chat import do_chat_turn_finish
from streams.context.chat import ChatOutcome
from streams.store import MemoryStore
from streams.store.client import get_client

store = MemoryStore(get_client(os.environ["MEMORY_TEST_MONGODB_URI"]), sys.argv[1])
with open(sys.argv[2], "rb") as f:
    turn = pickle.load(f)
outcome = ChatOutcome(
    outcome="upstream_error", stream=False, model="m", upstream_model="m", upstream_status=500
)
do_chat_turn_finish(store=store, turn=turn, outcome=outcome, also=[])
print("finished")
"""


def test_a_chat_call_killed_after_its_commit_is_still_caught_up(
    store: MemoryStore, world, memory_db, settings, run_tasks, tmp_path
):
    store.context_log_days = 0
    removed = seed_secret(store, world, "group")
    turn = _prepare(store, "u2", QUESTION)
    assert turn.context is not None and SECRET in turn.context.lower()
    act(store, "delete", removed, world)  # while the upstream answers
    path = tmp_path / "turn.pickle"
    path.write_bytes(pickle.dumps(turn))

    _killed_at("action.before_dispatch", memory_db, CHILD, str(path))

    # Committed: the record (holding the removed text) and its catch-up job, not sent.
    (context,) = _stored(store, "u2")
    assert SECRET in context.lower()
    (job,) = job_list(store=store, agent_id=AGENT, kind="chat_catch_up").items
    assert job.status == "queued" and job.payload["call_id"] == turn.call_id
    assert SECRET not in repr(job.payload).lower()  # ids and digests, no words

    settings.MEMORY_JOB_STALE_SECONDS = 0  # the sweep's "nobody sent it" age, reached at once
    _sweep_until_settled(store, run_tasks)

    (context,) = _stored(store, "u2")
    assert SECRET not in context.lower() and "[removed]" in context
    (job,) = job_list(store=store, agent_id=AGENT, kind="chat_catch_up").items
    assert job.status == "succeeded"
