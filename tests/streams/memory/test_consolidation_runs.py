"""Consolidation runs and propagation: never lose, never absorb twice, never leak private."""

from __future__ import annotations

import threading

import pytest

from streams.actions.jobs import do_propagation_run
from streams.core.exceptions import Conflict
from streams.jobs import job_create, job_get
from streams.llm.port import LLMError
from streams.memory.consolidation import consolidation_edit, consolidation_history
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_wire import faithful_memory
from tests.task_mode import run_job, settle


def run_consolidation(store, job_id):
    return run_job(
        store=store, job_id=job_id, work=lambda run: consolidation_run(store=store, run=run)
    )


def run_propagation(store, job_id):
    return run_job(
        store=store, job_id=job_id, work=lambda run: do_propagation_run(store=store, run=run)
    )


def assert_each_observation_pending_or_absorbed_once(store, scope_id):
    scope = scope_get(store=store, scope_id=scope_id)
    history = consolidation_history(store=store, scope=scope, limit=200).items
    assert [v.version for v in history] == list(range(scope.consolidation_version, 0, -1))
    absorbed = [i for v in history for i in v.absorbed_observation_ids]
    assert len(absorbed) == len(set(absorbed)), "an observation was absorbed twice"
    assert not set(absorbed) & set(scope.pending_observation_ids)
    every = {o.id for o in observation_list(store=store, scope=scope, limit=200).items}
    assert every == set(absorbed) | set(scope.pending_observation_ids), "an observation was lost"


def test_a_run_absorbs_pending_and_records_history(store, fake_openai):
    scope = ScopeFactory.create(store=store)
    for text in ("Gene likes tea.", "Gene likes short answers.", "Gene likes tea a lot."):
        ObservationFactory.create(store=store, scope=scope, content=text)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor="op"
    )
    fake_openai.reply("Gene likes tea and short answers.")
    run_consolidation(store, job.id)
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation == "Gene likes tea and short answers."
    assert fresh.pending_observation_ids == []
    entry = consolidation_history(store=store, scope=fresh).items[0]
    assert entry.trigger == "manual" and entry.actor == "op" and entry.model
    assert len(entry.absorbed_observation_ids) == 3 and entry.prompt_tokens > 0
    assert fake_openai.chat_requests[0].task == "consolidation"
    assert job_get(store=store, job_id=job.id).llm_calls == 1


@pytest.mark.parametrize("failure", ["http_500", "timeout", "empty"])
def test_a_failed_run_leaves_the_scope_exactly_as_it_was(store, fake_openai, settings, failure):
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 0.3
    scope = ScopeFactory.create(store=store)
    for _ in range(2):
        ObservationFactory.create(store=store, scope=scope)
    before = scope_get(store=store, scope_id=scope.id)
    job = consolidation_request(store=store, scope=before, trigger="manual", actor=None)
    {
        "http_500": lambda: fake_openai.fail(500, times=3),
        "timeout": lambda: fake_openai.delay(2, times=3),
        "empty": lambda: fake_openai.reply("   "),
    }[failure]()
    with pytest.raises(LLMError):
        run_consolidation(store, job.id)
    after = scope_get(store=store, scope_id=scope.id)
    assert after.pending_observation_ids == before.pending_observation_ids
    assert after.consolidation_version == 0
    assert job_get(store=store, job_id=job.id).status == "failed"
    fake_openai.reset()
    run_consolidation(store, job.id)  # retried: now it commits
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 1
    assert_each_observation_pending_or_absorbed_once(store, scope.id)


def test_five_concurrent_runs_commit_exactly_one_version(store, fake_openai):
    scope = ScopeFactory.create(store=store)
    for _ in range(4):
        ObservationFactory.create(store=store, scope=scope)
    fake_openai.set_responder(faithful_memory)  # a placeholder answer is refused now
    jobs = [
        job_create(
            store=store,
            kind="consolidation",
            agent_id=scope.agent_id,
            scope_id=scope.id,
            trigger="manual",
        )
        for _ in range(5)
    ]
    fake_openai.delay(0.3, times=5)  # then the faithful responder
    errors: list[Exception] = []

    def run(job_id: str) -> None:
        try:
            run_consolidation(store, job_id)
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(j.id,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # A run that met another live run's lease failed, saying so, to be retried: none
    # reports success for work it did not do (the others found nothing pending).
    assert all(isinstance(e, Conflict) and "being consolidated" in str(e) for e in errors)
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 1
    assert len(fake_openai.chat_requests) == 1
    assert_each_observation_pending_or_absorbed_once(store, scope.id)
    for job in jobs:
        if job_get(store=store, job_id=job.id).status == "failed":
            store.jobs.requeue(job.id_oid)
            run_consolidation(store, job.id)
    finished = [job_get(store=store, job_id=j.id) for j in jobs]
    assert [j.status for j in finished] == ["succeeded"] * 5
    assert sorted(j.result.get("absorbed") for j in finished) == [0, 0, 0, 0, 4]
    assert sum(j.result.get("note") == "nothing pending" for j in finished) == 4


def test_observations_arriving_during_a_run_stay_pending(store, fake_openai):
    scope = ScopeFactory.create(store=store)
    ObservationFactory.create(store=store, scope=scope)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor=None
    )

    def respond(request):
        answer = faithful_memory(request)
        ObservationFactory.create(store=store, scope=scope)  # lands while the LLM thinks
        return answer

    fake_openai.set_responder(respond)
    run_consolidation(store, job.id)
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation_version == 1 and len(fresh.pending_observation_ids) == 1
    assert_each_observation_pending_or_absorbed_once(store, scope.id)


def test_a_hand_edit_during_a_run_makes_the_run_a_conflict_not_an_overwrite(store, fake_openai):
    scope = ScopeFactory.create(store=store)
    ObservationFactory.create(store=store, scope=scope)
    job = consolidation_request(
        store=store, scope=scope_get(store=store, scope_id=scope.id), trigger="manual", actor=None
    )

    def respond(request):
        consolidation_edit(store=store, scope=scope, text="by hand", expected_version=0, actor="op")
        return faithful_memory(request)

    fake_openai.set_responder(respond)
    with pytest.raises(Conflict):
        run_consolidation(store, job.id)
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation == "by hand" and len(fresh.pending_observation_ids) == 1


def test_nothing_pending_is_a_conflict(store):
    with pytest.raises(Conflict):
        consolidation_request(
            store=store, scope=ScopeFactory.create(store=store), trigger="manual", actor=None
        )


def test_private_observations_never_propagate_even_if_the_model_tries(store, fake_openai):
    individual, _ = scope_get_or_create(
        store=store,
        key=ScopeKey.individual("a1", "u1"),
        defaults={"groups": [{"id": "g1", "name": "Eden Team"}]},
    )
    ObservationFactory.create(store=store, scope=individual, content="The team deploys on Fridays.")
    ObservationFactory.create(
        store=store, scope=individual, content="Gene has diabetes.", private=True
    )
    individual = scope_get(store=store, scope_id=individual.id)
    job = consolidation_request(store=store, scope=individual, trigger="manual", actor=None)
    fake_openai.reply("The team deploys on Fridays.")
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "The team deploys on Fridays.", "scope": "group:Eden Team"},
                {"content": "Gene has diabetes.", "scope": "group:Eden Team"},
            ]
        }
    )
    run_consolidation(store, job.id)
    settle(store)  # with a worker, the propagation it queued has run too
    [propagation] = [
        j
        for j in store.jobs.page(status=None, agent_id="a1", before=None, limit=10)
        if j.kind == "propagation"
    ]
    run_propagation(store, propagation.id)
    prop = job_get(store=store, job_id=propagation.id)
    assert prop.result["copied"] == 1
    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "diabetes" not in prompt
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    copies = observation_list(store=store, scope=group).items
    assert [c.content for c in copies] == ["The team deploys on Fridays."]
    assert copies[0].propagated_from and copies[0].related_user_ids == ["u1"]
    # A retried propagation does not copy twice.
    fake_openai.reply_json(
        {"observations": [{"content": "The team deploys on Fridays.", "scope": "group:Eden Team"}]}
    )
    again = job_create(
        store=store,
        kind="propagation",
        agent_id="a1",
        scope_id=individual.id,
        payload=propagation.payload,
    )
    run_propagation(store, again.id)
    assert len(observation_list(store=store, scope=group).items) == 1
