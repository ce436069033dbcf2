"""The fake that fails like real models (issue 39, item 4), in each of the four scope types.

Every shape the recorded small models answered (`tests/fakes/real_model_shapes.py`,
`shared/data/real-model-answers/README.md`) is played per task by the fake server's
`real_model_shapes` mode. For each: none becomes memory (a fenced or prose-wrapped valid
answer is read, that is the one kind that does), nothing is lost (messages stay unformed,
pending stays pending, and the batch forms or folds once the model answers well), nothing
is half-stored, and each is counted per model and task.
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
from streams.actions.jobs import do_propagation_run
from streams.core.documents import utcnow
from streams.llm.port import LLMError
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observations import observation_add, observation_get, observation_list
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import default_responder
from tests.fakes.real_model_shapes import SHAPES, extraction_good, shapes_of
from tests.task_mode import run_job, settle

AGENT = "a1"
GROUPS = [{"id": "g1", "name": "Eden Team"}]
KEYS = {
    "individual": ScopeKey.individual(AGENT, "u1"),
    "group": ScopeKey.group(AGENT, "g1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "ops"),
}
LABELS = {
    "individual": "individual:u1",
    "group": "group:Eden Team",
    "collective": "collective",
    "shard": "shard:ops",
}
FACTS = [
    "Caroline went to an LGBTQ support group on 7 May 2023.",
    "Caroline is a transgender woman.",
    "Caroline is considering counselling as a career in psychology.",
]
FAILING = {"empty", "cut", "timeout"}


@pytest.fixture(autouse=True)
def _small_timeouts(settings, fake_openai: FakeOpenAI) -> None:
    """The slow shapes wait 2 s; the tasks here time out at 0.5 s (room for a loaded
    machine to serve the others), with no client retry."""
    settings.MEMORY_LLM_MAX_RETRIES = 0
    settings.MEMORY_LLM_TASK_TIMEOUTS = dict.fromkeys(
        ("extraction", "consolidation", "propagation"), 0.5
    )


def _day_counts(store: MemoryStore, dim: str, key: str) -> dict:
    return store.usage.get(AGENT, utcnow().strftime("%Y-%m-%d"), dim, key) or {}


def _task_counts(store: MemoryStore, fake: FakeOpenAI, task: str) -> dict:
    model = fake.chat_requests[-1].body["model"]
    return _day_counts(store, "model_task", f"{model} {task}")


def _stored(store: MemoryStore, kind: str) -> list[str]:
    scope, _ = scope_get_or_create(store=store, key=KEYS[kind])
    return [o.content for o in observation_list(store=store, scope=scope).items]


def _form(store: MemoryStore, session: str = "s1"):
    settings = formation_settings()
    job = formation_request(store=store, agent_id=AGENT, session_id=session, trigger="api")
    return run_job(
        store=store,
        job_id=job.id,
        work=lambda run: formation_run(store=store, run=run, settings=settings),
    )


def _ingest(store: MemoryStore, session: str = "s1") -> None:
    scope_get_or_create(store=store, key=KEYS["shard"])  # a shard the prompt offers
    messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id=session,
        user_id="u1",
        user_name="Gene",
        groups=GROUPS,
        messages=[
            IncomingMessage(id="m1", role="user", content="Our team ships on Fridays."),
            IncomingMessage(id="m2", role="user", content="I live in Porto and I work at Acme."),
        ],
        settings=formation_settings(),
    )


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("shape", [s.name for s in shapes_of("extraction")])
def test_an_extraction_shape_stores_nothing_bad_loses_nothing_and_is_counted(
    store: MemoryStore, fake_openai: FakeOpenAI, shape: str, kind: str
) -> None:
    expect = SHAPES[shape].expect
    fake_openai.real_model_shapes(shapes=[shape], label=LABELS[kind])
    _ingest(store)

    if expect in FAILING:
        with pytest.raises(LLMError):
            _form(store)
        assert all(_stored(store, k) == [] for k in KEYS)  # nothing, not half
        assert len(store.sessions.unformed(AGENT, "s1", limit=10)) == 2
        counts = _task_counts(store, fake_openai, "extraction")
        if expect == "empty":
            assert _day_counts(store, "prompt", "formation v0")["empty"] == 1
            assert counts["empty"] == 1  # per model and task too
        else:
            assert counts[{"cut": "cut", "timeout": "timeouts"}[expect]] == 1
        # Kept for later: once the model answers, the same messages form.
        fake_openai.set_responder(lambda request: extraction_good(request, LABELS[kind]))
        run = _form(store)
        assert run.result["observations"] == 1
    else:  # "repaired": a valid answer in fences or after prose is read and stored
        run = _form(store)
        assert run.result["observations"] == 1
        assert _task_counts(store, fake_openai, "extraction")["repairs"] == 1
    assert _stored(store, kind) == ["Our team ships on Fridays."]
    assert store.sessions.unformed(AGENT, "s1", limit=10) == []


def _pending_scope(store: MemoryStore, kind: str) -> str:
    scope, _ = scope_get_or_create(store=store, key=KEYS[kind])
    for text in FACTS:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content=text)
    return scope.id


def _consolidate(store: MemoryStore, scope_id: str):
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    run = run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))
    return job, run


CONSOLIDATION_SHAPES = [s.name for s in shapes_of("consolidation")]
# tests/streams/memory/test_answer_checks.py plays log_lines, echo, bare and one_fact in each
# scope type already; here the rest, and all of them in turn below.
NEW_CONSOLIDATION_SHAPES = ["consolidation.invented", "consolidation.loop", "consolidation.slow"]


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("shape", NEW_CONSOLIDATION_SHAPES)
def test_a_consolidation_shape_is_not_committed_pending_stays_and_is_counted(
    store: MemoryStore, fake_openai: FakeOpenAI, shape: str, kind: str
) -> None:
    expect = SHAPES[shape].expect
    fake_openai.real_model_shapes(shapes=[shape])
    scope_id = _pending_scope(store, kind)
    pending = scope_get(store=store, scope_id=scope_id).pending_observation_ids

    with pytest.raises(LLMError):
        _consolidate(store, scope_id)

    after = scope_get(store=store, scope_id=scope_id)
    assert after.consolidation_version == 0 and after.consolidation is None
    assert after.pending_observation_ids == pending
    assert store.consolidations.get(ObjectId(scope_id), 1) is None
    assert all(observation_get(store=store, observation_id=o).status == "pending" for o in pending)
    if expect in ("cut", "timeout"):
        counts = _task_counts(store, fake_openai, "consolidation")
        assert counts[{"cut": "cut", "timeout": "timeouts"}[expect]] == 1
    else:
        assert _day_counts(store, "prompt", "consolidation v0")["refused"] == 1
        assert _task_counts(store, fake_openai, "consolidation")["refused"] == 1
        [job] = [j for j in store.jobs.page(status=None, agent_id=AGENT, before=None, limit=5)]
        assert job.result["refused"] == expect
    # Retried, then kept: a faithful answer folds every pending observation.
    fake_openai.set_responder(default_responder)
    _, run = _consolidate(store, scope_id)
    assert run.result["absorbed"] == len(FACTS) and run.result["version"] == 1


@pytest.mark.parametrize("kind", list(KEYS))
def test_a_bogus_contradiction_pair_is_rejected_and_counted(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    fake_openai.real_model_shapes(task="contradiction")
    scope_id = _pending_scope(store, kind)  # first and last: a support group, a career

    _, run = _consolidate(store, scope_id)
    settle(store)

    assert run.result["contradictions"] == [] and run.result["held_for_review"] == []
    assert run.result["contradictions_rejected"] == 1 and run.result["version"] == 1
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version is not None and len(version.absorbed_observation_ids) == len(FACTS)
    for oid in version.absorbed_observation_ids:
        assert not observation_get(store=store, observation_id=oid).contradicts
    assert _day_counts(store, "prompt", "consolidation v0")["contradictions_rejected"] == 1
    assert _task_counts(store, fake_openai, "consolidation")["contradictions_rejected"] == 1


SHARED_FACT = "The Eden Team changes its on-call rotation every Wednesday."
SOURCES = {  # the scope types that propagate, and where to
    "individual": (
        lambda store: scope_get_or_create(
            store=store, key=KEYS["individual"], defaults={"groups": GROUPS}
        )[0],
        "group",
    ),
    "group": (lambda store: scope_get_or_create(store=store, key=KEYS["group"])[0], "collective"),
}


def _propagation(store: MemoryStore):
    jobs = store.jobs.page(status=None, agent_id=AGENT, before=None, limit=20)
    [job] = [j for j in jobs if j.kind == "propagation"][:1]
    return job, lambda: run_job(
        store=store, job_id=job.id, work=lambda r: do_propagation_run(store=store, run=r)
    )


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("shape", [s.name for s in shapes_of("propagation")])
def test_a_propagation_shape_copies_nothing_keeps_the_source_and_is_counted(
    store: MemoryStore, fake_openai: FakeOpenAI, shape: str, source: str
) -> None:
    expect = SHAPES[shape].expect
    fake_openai.real_model_shapes(shapes=[shape])  # consolidation answers faithfully
    make, target = SOURCES[source]
    scope = make(store)
    observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id), content=SHARED_FACT
    )
    _consolidate(store, scope.id)
    settle(store)
    job, run = _propagation(store)

    if expect in ("cut", "timeout"):
        with pytest.raises(LLMError):
            run()
        counts = _task_counts(store, fake_openai, "propagation")
        assert counts[{"cut": "cut", "timeout": "timeouts"}[expect]] == 1
    else:
        result = run().result
        assert result["copied"] == 0
        if expect == "empty":
            assert result["outcome"] == "empty"
            assert _day_counts(store, "prompt", "propagation")["empty"] == 1
            assert _task_counts(store, fake_openai, "propagation")["empty"] == 1
        else:
            assert result["dropped"] == 1
            assert _day_counts(store, "prompt", "propagation")["dropped"] == 1
            assert _task_counts(store, fake_openai, "propagation")["dropped"] == 1
    assert _stored(store, target) == []  # nothing half-copied
    [kept] = observation_list(store=store, scope=scope_get(store=store, scope_id=scope.id)).items
    assert kept.content == SHARED_FACT and kept.status == "consolidated"


@pytest.mark.parametrize("kind", ["collective", "shard"])
def test_a_scope_that_shares_with_no_one_asks_no_propagation(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    fake_openai.real_model_shapes(task="propagation")
    scope_id = _pending_scope(store, kind)
    _consolidate(store, scope_id)
    settle(store)
    assert [r.task for r in fake_openai.chat_requests] == ["consolidation"]


def test_the_mode_plays_every_recorded_shape_of_a_task_in_turn(
    store: MemoryStore, fake_openai: FakeOpenAI
) -> None:
    responder = fake_openai.real_model_shapes(task="consolidation")
    scope_id = _pending_scope(store, "individual")
    for _ in CONSOLIDATION_SHAPES:
        with pytest.raises(LLMError):
            _consolidate(store, scope_id)
    assert responder.played == CONSOLIDATION_SHAPES
    assert scope_get(store=store, scope_id=scope_id).consolidation_version == 0
    refused = _day_counts(store, "prompt", "consolidation v0")["refused"]
    model = fake_openai.chat_requests[-1].body["model"]
    failed = _day_counts(store, "model_task", f"{model} consolidation")
    assert (refused, failed["cut"], failed["timeouts"]) == (5, 1, 1)  # every one counted
