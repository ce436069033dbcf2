"""A delete that commits while a consolidation run waits for its model never leaves the
deleted words in the memory.

Found by the multi-host rehearsal's short run (docs/rehearsal.md): a context answer
quoted an observation deleted before it was asked. The run read the observation while
it was pending; the delete took it out of pending (nothing had absorbed it, so nothing
was flagged for a rebuild); then the run committed a version stating it, and marked it
consolidated. Now the commit, in its transaction, finds the absorbed observation
deleted and is a Conflict: the job fails and its retry folds what is pending then.
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.actions import Actor
from streams.actions.observations import do_observation_delete
from streams.core.exceptions import Conflict
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.scopes import scope_get
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_wire import faithful_memory
from tests.streams.memory.test_consolidation_runs import (
    assert_each_observation_pending_or_absorbed_once,
    run_consolidation,
)

DELETED = "Gene keeps the spare key under the blue pot."


def test_an_observation_deleted_during_the_run_is_not_in_the_version(
    store, fake_openai, monkeypatch
):
    monkeypatch.setattr("streams.actions.base._dispatcher", lambda jobs: None)  # held
    scope = ScopeFactory.create(store=store)
    kept = [
        ObservationFactory.create(store=store, scope=scope, content=text)
        for text in ("Gene likes tea.", "Gene likes short answers.")
    ]
    doomed = ObservationFactory.create(store=store, scope=scope, content=DELETED)

    def delete_then_answer(request):
        """The delete commits while the model is answering (the run has read it)."""
        if not store.observations.get_many([ObjectId(doomed.id)])[0].deleted:
            fresh = store.observations.get_many([ObjectId(doomed.id)])[0]
            do_observation_delete(store=store, actor=Actor.cli(), observation=fresh)
        return faithful_memory(request)

    fake_openai.set_responder(delete_then_answer)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="op"
    )
    with pytest.raises(Conflict):
        run_consolidation(store, job.id)
    after = scope_get(store=store, scope_id=scope.id)
    assert "spare key" not in (after.consolidation or "")
    assert after.consolidation_version == 0
    assert sorted(after.pending_observation_ids) == sorted(o.id for o in kept)

    again = consolidation_request(store=store, scope=after, trigger="manual", actor="op")
    run_consolidation(store, again.id)  # the retry: what is pending now
    done = scope_get(store=store, scope_id=scope.id)
    assert done.consolidation_version == 1 and "tea" in (done.consolidation or "")
    assert "spare key" not in (done.consolidation or "")
    assert_each_observation_pending_or_absorbed_once(store, scope.id)
