"""Answers are checked before they become memory (issue 39, item 1).

Each shape a real small model answered (`shared/data/real-model-answers/README.md`) is
replayed through the fake OpenAI server, in each of the four scope types: the job fails
and says why, pending stays pending, no version is written, and it is counted per model
and prompt version. An empty extraction where the offline rules find facts keeps the
messages unformed and is counted `empty`; a contradiction pair about two different
things is not flagged and is counted as rejected.
"""

from __future__ import annotations

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
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
from streams.memory.observations import observation_add, observation_get
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create, scope_update
from streams.prompts.defaults import CONSOLIDATION
from streams.store import MemoryStore
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import RecordedRequest, consolidation_lines, contradiction_responder
from tests.task_mode import run_job, settle

AGENT = "a1"
SCOPES = {
    "individual": ScopeKey.individual(AGENT, "u1"),
    "group": ScopeKey.group(AGENT, "g1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "ops"),
}
FACTS = [
    "Caroline went to an LGBTQ support group on 7 May 2023.",
    "Caroline is a transgender woman.",
    "Caroline was so happy and thankful for all the support.",
    "Caroline is considering counselling as a career in psychology.",
]
TASK_LIST = [line for line in CONSOLIDATION.splitlines() if line.startswith("- ")]


def _echo(request: RecordedRequest) -> str:
    """Sample C: the prompt's task list, a bogus trailer, a copy of the observations."""
    ids = list(consolidation_lines(request))
    return "The updated memory:\n" + "\n".join(TASK_LIST[:3]) + f"\nCONTRADICTIONS: [{ids[0]}]"


def _log_lines(request: RecordedRequest) -> str:
    """Sample B: a preamble and two of the prompt's `[date] [id]` lines."""
    lines = list(consolidation_lines(request).items())[1:3]
    day = utcnow().strftime("%Y-%m-%d")
    return "Updated memory:\n\n" + "\n".join(f"[{day}] [{i}] {text}" for i, text in lines)


def _bare(request: RecordedRequest) -> str:
    return "UPDATED MEMORY"  # sample D


def _one_of_four(request: RecordedRequest) -> str:
    return "Caroline is a transgender woman."


SHAPES = {
    "echo": _echo,
    "log_lines": _log_lines,
    "no_sentence": _bare,
    "below_floor": _one_of_four,
}


def _scope(store: MemoryStore, kind: str, facts: list[str]) -> str:
    scope, _ = scope_get_or_create(store=store, key=SCOPES[kind])
    for text in facts:
        observation_add(store=store, scope=scope_get(store=store, scope_id=scope.id), content=text)
    return scope.id


def _consolidate(store: MemoryStore, scope_id: str):
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    return job, lambda: run_job(
        store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r)
    )


def _counts(store: MemoryStore, dim: str, key: str) -> dict:
    return store.usage.get(AGENT, utcnow().strftime("%Y-%m-%d"), dim, key) or {}


@pytest.mark.parametrize("kind", list(SCOPES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_bad_consolidation_answer_is_not_committed_and_says_why(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str, shape: str
) -> None:
    fake_openai.set_responder(SHAPES[shape])
    scope_id = _scope(store, kind, FACTS)
    before = scope_get(store=store, scope_id=scope_id)
    job, run = _consolidate(store, scope_id)

    with pytest.raises(LLMError, match=f"refused \\({shape}\\)"):
        run()

    after = scope_get(store=store, scope_id=scope_id)
    assert after.consolidation_version == 0 and after.consolidation is None
    assert after.pending_observation_ids == before.pending_observation_ids
    assert store.consolidations.get(ObjectId(scope_id), 1) is None
    for oid in after.pending_observation_ids:
        assert observation_get(store=store, observation_id=oid).status == "pending"
    failed = store.jobs.get(ObjectId(job.id))
    assert failed is not None and failed.status == "failed"
    assert f"({shape})" in (failed.error or "")
    assert failed.result["outcome"] == "refused" and failed.result["refused"] == shape
    model = fake_openai.chat_requests[-1].body["model"]
    assert _counts(store, "prompt", "consolidation v0")["refused"] == 1
    assert _counts(store, "model", model)["refused"] == 1


@pytest.mark.parametrize("kind", list(SCOPES))
def test_a_faithful_answer_is_committed_with_its_fidelity(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    scope_id = _scope(store, kind, FACTS)  # the fake's default answer states every fact
    _, run = _consolidate(store, scope_id)
    result = run().result
    settle(store)
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version is not None
    assert version.fidelity == {"unstated_observation_ids": [], "dropped_sentences": []}
    assert result["fidelity_weighed"] == 4 and result["fidelity_unstated"] == 0
    assert _counts(store, "prompt", "consolidation v0")["fidelity_weighed"] == 4


@pytest.mark.parametrize("kind", list(SCOPES))
def test_a_floor_of_zero_lets_a_lossy_answer_through(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    fake_openai.set_responder(_one_of_four)
    scope_id = _scope(store, kind, FACTS)
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    from memory_admin.integrations.llm import get_llm_provider
    from streams.jobs import job_execute

    job_execute(
        store=store,
        job_id=job.id,
        llm=get_llm_provider(),
        work=lambda r: consolidation_run(store=store, run=r, fidelity_floor=0.0),
    )
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version is not None and version.fidelity is not None
    assert len(version.fidelity["unstated_observation_ids"]) == 3


LINUX = "Gene uses the desktop app on Linux."
ONCALL = "The Eden Team changes its on-call rotation every Wednesday."


@pytest.mark.parametrize("kind", list(SCOPES))
def test_a_pair_without_a_shared_subject_is_rejected_and_counted(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    memory = f"{LINUX} {ONCALL}"
    fake_openai.set_responder(contradiction_responder(("Linux", "on-call"), memory=memory))
    scope_id = _scope(store, kind, [LINUX, ONCALL])
    _, run = _consolidate(store, scope_id)

    result = run().result
    settle(store)

    assert result["contradictions"] == [] and result["contradictions_rejected"] == 1
    assert result["held_for_review"] == []
    scope = scope_get(store=store, scope_id=scope_id)
    assert scope.consolidation_version == 1 and not scope.pending_observation_ids
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version is not None and len(version.absorbed_observation_ids) == 2
    for oid in version.absorbed_observation_ids:
        assert not observation_get(store=store, observation_id=oid).contradicts
    assert _counts(store, "prompt", "consolidation v0")["contradictions_rejected"] == 1


def _form(store: MemoryStore, session: str, groups: list[dict[str, str]]):
    settings = formation_settings()
    messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id=session,
        user_id="u1",
        user_name="Gene",
        groups=groups,
        messages=[
            IncomingMessage(id="m1", role="user", content="I live in Porto and I work at Acme."),
            IncomingMessage(id="m2", role="user", content="Our team ships on Fridays."),
        ],
        settings=settings,
    )
    job = formation_request(store=store, agent_id=AGENT, session_id=session, trigger="api")
    return job, lambda: run_job(
        store=store,
        job_id=job.id,
        work=lambda run: formation_run(store=store, run=run, settings=settings),
    )


@pytest.mark.parametrize(
    "groups", [[], [{"id": "g1", "name": "Eden Team"}]], ids=["alone", "in-a-group"]
)
def test_an_empty_extraction_is_recorded_empty_and_keeps_the_messages(
    store: MemoryStore, fake_openai: FakeOpenAI, groups: list[dict[str, str]]
) -> None:
    scope_get_or_create(store=store, key=SCOPES["shard"])  # a shard the prompt offers
    fake_openai.reply_json({"observations": []})  # samples A: runs 1, 2 and 11
    job, run = _form(store, "s1", groups)

    with pytest.raises(LLMError, match="no observations where the offline rules find"):
        run()

    assert len(store.sessions.unformed(AGENT, "s1", limit=10)) == 2
    failed = store.jobs.get(ObjectId(job.id))
    assert failed is not None and failed.status == "failed"
    assert failed.result["outcome"] == "empty" and failed.result["offline_found"] >= 1
    model = fake_openai.chat_requests[-1].body["model"]
    assert _counts(store, "prompt", "formation v0")["empty"] == 1
    assert _counts(store, "model", model)["empty"] == 1


def test_an_empty_extraction_of_small_talk_is_a_success(
    store: MemoryStore, fake_openai: FakeOpenAI
) -> None:
    settings = formation_settings()
    messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id="s2",
        user_id="u1",
        user_name="Gene",
        groups=[],
        messages=[IncomingMessage(id="m1", role="user", content="ok thanks")],
        settings=settings,
    )
    job = formation_request(store=store, agent_id=AGENT, session_id="s2", trigger="api")
    fake_openai.reply_json({"observations": []})
    run = run_job(
        store=store,
        job_id=job.id,
        work=lambda r: formation_run(store=store, run=r, settings=settings),
    )
    assert run.result["observations"] == 0 and "outcome" not in run.result


# More facts than a 50-word memory holds: eleven or twelve words each.
MANY_FACTS = [
    f"Caroline's {thing} appointment is on {day} at the clinic near the station."
    for thing, day in [
        ("dentist", "Monday"),
        ("optician", "Tuesday"),
        ("physio", "Wednesday"),
        ("counselling", "Thursday"),
        ("vaccine", "Friday"),
        ("passport", "Saturday"),
        ("blood test", "Sunday"),
        ("allergy", "the first of June"),
        ("hearing", "the second of June"),
        ("dermatology", "the third of June"),
    ]
]


def _as_many_as_fit(words: int):
    """A strict fake: the offered observations verbatim, in order, as many as `words` hold."""

    def answer(request: RecordedRequest) -> str:
        kept: list[str] = []
        for text in consolidation_lines(request).values():
            if sum(len(t.split()) for t in [*kept, text]) > words:
                break
            kept.append(text)
        return " ".join(kept)

    return answer


def _fifty_word_scope(store: MemoryStore, kind: str) -> str:
    """A scope of `kind` holding `MANY_FACTS` pending, its memory limited to 50 words."""
    scope_id = _scope(store, kind, MANY_FACTS)
    scope_update(
        store=store,
        scope=scope_get(store=store, scope_id=scope_id),
        changes={"consolidation_max_words": 50},
        actor="ui:ann",
    )
    return scope_id


@pytest.mark.parametrize("kind", list(SCOPES))
def test_an_answer_that_fills_the_word_limit_is_kept_with_what_it_drops(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    """Ten facts, a 50-word memory: four fit. Refused below the floor, such a scope never
    consolidated (each run failed and was retried); kept, its drops are on the record."""
    fake_openai.set_responder(_as_many_as_fit(50))
    scope_id = _fifty_word_scope(store, kind)
    _, run = _consolidate(store, scope_id)
    run()
    settle(store)
    after = scope_get(store=store, scope_id=scope_id)
    assert after.consolidation_version == 1 and after.pending_count == 0
    version = store.consolidations.get(ObjectId(scope_id), 1)
    assert version is not None and version.fidelity is not None
    assert len(version.fidelity["unstated_observation_ids"]) == 6  # what the limit left out


@pytest.mark.parametrize("kind", list(SCOPES))
def test_a_short_answer_that_drops_most_facts_is_still_refused_under_a_tight_limit(
    store: MemoryStore, fake_openai: FakeOpenAI, kind: str
) -> None:
    fake_openai.set_responder(_as_many_as_fit(15))  # one fact, though 50 words would hold four
    scope_id = _fifty_word_scope(store, kind)
    _, run = _consolidate(store, scope_id)
    with pytest.raises(LLMError, match="below_floor"):
        run()
    assert scope_get(store=store, scope_id=scope_id).consolidation_version == 0
