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
from streams.actions.observations import do_observation_delete, do_observation_update
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


def test_a_delete_of_an_observation_read_pending_but_absorbed_since_flags_the_rebuild(
    store, fake_openai, monkeypatch
):
    """The other order, found by the short rehearsal in CI: the API read the observation
    while it was pending, the run committed a version absorbing it, then the delete
    committed with what the API had read. The delete's own transaction decides what it
    taints (the observation as it is there), so the version waits for its rebuild and
    context leaves it out until then."""
    monkeypatch.setattr("streams.actions.base._dispatcher", lambda jobs: None)  # held
    scope = ScopeFactory.create(store=store)
    ObservationFactory.create(store=store, scope=scope, content="Gene likes tea.")
    doomed = ObservationFactory.create(store=store, scope=scope, content=DELETED)
    read_by_the_api = store.observations.get_many([ObjectId(doomed.id)])[0]
    assert not read_by_the_api.consolidated

    fake_openai.set_responder(faithful_memory)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="op"
    )
    run_consolidation(store, job.id)
    absorbed = scope_get(store=store, scope_id=scope.id)
    assert "spare key" in (absorbed.consolidation or "")

    rebuilds = do_observation_delete(store=store, actor=Actor.cli(), observation=read_by_the_api)
    flagged = scope_get(store=store, scope_id=scope.id)
    assert flagged.needs_rebuild and doomed.id in flagged.rebuild_observation_ids
    assert [r.kind for r in rebuilds] == ["rebuild"]


@pytest.mark.parametrize("change", ["edit", "private"])
def test_an_edit_or_private_of_an_observation_absorbed_since_it_was_read_flags_the_rebuild(
    store, fake_openai, monkeypatch, change
):
    """An edit or marking private, read pending and committed after a run absorbed it:
    the version holding the old text waits for its rebuild, as a delete's does."""
    monkeypatch.setattr("streams.actions.base._dispatcher", lambda jobs: None)  # held
    scope = ScopeFactory.create(store=store)
    ObservationFactory.create(store=store, scope=scope, content="Gene likes tea.")
    doomed = ObservationFactory.create(store=store, scope=scope, content=DELETED)
    read_by_the_api = store.observations.get_many([ObjectId(doomed.id)])[0]

    fake_openai.set_responder(faithful_memory)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="op"
    )
    run_consolidation(store, job.id)

    fields = {"content": "Gene keeps no key outside."} if change == "edit" else {"private": True}
    do_observation_update(store=store, actor=Actor.cli(), observation=read_by_the_api, **fields)
    flagged = scope_get(store=store, scope_id=scope.id)
    assert flagged.needs_rebuild and doomed.id in flagged.rebuild_observation_ids
