"""Propagation with a model that follows the prompt: it answers with a target exactly as
the prompt lists it, so a prompt that mislabels its targets stores nothing (issue 25)."""

from __future__ import annotations

from streams.actions.jobs import do_propagation_run
from streams.jobs import job_get
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.factories import ObservationFactory
from tests.fakes.openai_server import propagation_prompt, propagation_responder
from tests.task_mode import run_job, settle


def propagation_jobs(store):
    return [
        j
        for j in store.jobs.page(status=None, agent_id="a1", before=None, limit=50)
        if j.kind == "propagation"
    ]


def consolidate_then_propagate(store, scope):
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor=None)
    run_job(store=store, job_id=job.id, work=lambda run: consolidation_run(store=store, run=run))
    settle(store)
    [propagation] = propagation_jobs(store)[:1]
    run_job(
        store=store,
        job_id=propagation.id,
        work=lambda r: do_propagation_run(store=store, run=r),
    )
    return job_get(store=store, job_id=propagation.id)


def test_the_prompt_lists_each_group_once_prefixed_and_a_prompt_following_model_is_stored(
    store, fake_openai
):
    fake_openai.set_responder(propagation_responder())
    individual, _ = scope_get_or_create(
        store=store,
        key=ScopeKey.individual("a1", "u1"),
        defaults={"groups": [{"id": "g1", "name": "Eden Team"}]},
    )
    ObservationFactory.create(store=store, scope=individual, content="The team deploys on Fridays.")
    individual = scope_get(store=store, scope_id=individual.id)

    propagation = consolidate_then_propagate(store, individual)

    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "group:group:" not in prompt
    assert "\n- group:Eden Team\n" in prompt
    assert propagation_prompt(prompt).targets == ["group:Eden Team"]
    assert propagation.result["copied"] == 1
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    [copy] = observation_list(store=store, scope=group).items
    assert copy.content == "The team deploys on Fridays."
    assert copy.propagated_from is not None and copy.status == "pending"


def test_group_to_collective_prompt_lists_collective_as_the_model_must_answer(store, fake_openai):
    fake_openai.set_responder(propagation_responder())
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group("a1", "g1"), display_name="Eden Team"
    )
    ObservationFactory.create(store=store, scope=group, content="Exports need admin rights.")
    group = scope_get(store=store, scope_id=group.id)

    propagation = consolidate_then_propagate(store, group)

    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert propagation_prompt(prompt).targets == ["collective"]
    assert propagation.result["offered"] == 1
