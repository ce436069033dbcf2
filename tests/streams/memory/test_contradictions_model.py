"""Contradictions the consolidation model reports: the prompt lists each new observation
with its id, the answer may name pairs after `CONTRADICTIONS:` (only ids the prompt
offered count; the strict fake refuses others), and each pair is flagged `contradicts`
both ways. In a shared scope the newer waits for review and this version is written
without it; people keep both, pick one or edit. In an individual scope the newer wins.

The pairs here are ones the deterministic check misses (the rooms are lower-case
words, not values), so only the model can find them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from bson import ObjectId

from streams.core.contradictions import contradicts
from streams.core.documents import Job, Observation
from streams.guard.review import review_decide, review_queue
from streams.llm.contradiction_answer import answer_split, answer_trailer
from streams.llm.offline import OfflineProvider
from streams.llm.port import ConsolidationContext, DatedObservation, LLMRequest
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observation_changes import observation_delete
from streams.memory.observations import observation_add, observation_get
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from tests.fakes.openai_wire import (
    RecordedRequest,
    contradiction_responder,
    unknown_contradiction_ids,
)
from tests.task_mode import run_job, settle

AGENT = "a1"
OLD = "The team standup happens in the blue room."
NEW = "The team standup happens in the green room."
STANDUPS = OLD  # a memory that states what it absorbed (a bare "Standups." is refused)
SCOPES = {
    "group": ScopeKey.group(AGENT, "g1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "ops"),
    "individual": ScopeKey.individual(AGENT, "u1"),
}


def _scope(store: MemoryStore, kind: str) -> str:
    scope, _ = scope_get_or_create(store=store, key=SCOPES[kind])
    return scope.id


def _add(store: MemoryStore, scope_id: str, text: str) -> Observation:
    return observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope_id), content=text
    )


def _consolidate(store: MemoryStore, scope_id: str) -> dict:
    scope = scope_get(store=store, scope_id=scope_id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="t")
    run = run_job(store=store, job_id=job.id, work=lambda r: consolidation_run(store=store, run=r))
    settle(store)
    return run.result if run is not None else {}


def _get(store: MemoryStore, observation: Observation) -> Observation:
    return observation_get(store=store, observation_id=observation.id)


def test_the_deterministic_check_misses_these() -> None:
    assert not contradicts(NEW, OLD)


@pytest.mark.parametrize("kind", ["group", "collective", "shard"])
def test_a_reported_pair_is_flagged_both_ways_and_the_newer_waits(
    store: MemoryStore, fake_openai, kind: str
) -> None:
    fake_openai.set_responder(contradiction_responder((OLD[:-1], NEW[:-1]), memory=STANDUPS))
    scope_id = _scope(store, kind)
    old, new = _add(store, scope_id, OLD), _add(store, scope_id, NEW)

    result = _consolidate(store, scope_id)

    assert result["held_for_review"] == [new.id]
    old_now, new_now = _get(store, old), _get(store, new)
    assert old_now.contradicts == [new.id] and new_now.contradicts == [old.id]
    assert new_now.status == "in_review"
    assert new_now.review is not None
    assert new_now.review["reasons"] == [f"contradicts:{old.id}"]
    assert old_now.status == "consolidated"
    scope = scope_get(store=store, scope_id=scope_id)
    assert new.id not in scope.pending_observation_ids
    version = store.consolidations.get(ObjectId(scope_id), scope.consolidation_version)
    assert version is not None and new.id not in version.absorbed_observation_ids
    assert "CONTRADICTIONS" not in (scope.consolidation or "")
    queue = review_queue(store=store, agent_id=AGENT, scope_id=scope_id)
    assert [o.id for o in queue.items] == [new.id]
    # The second call (without the one held back) did not list it.
    prompts = [r for r in fake_openai.requests if r.task == "consolidation"]
    assert len(prompts) == 2 and NEW not in json.dumps(prompts[-1].body)


@pytest.mark.parametrize("choice", ["keep_both", "pick_newer", "pick_older", "edit"])
def test_the_pair_is_resolved_through_review(store: MemoryStore, fake_openai, choice: str) -> None:
    fake_openai.set_responder(contradiction_responder((OLD[:-1], NEW[:-1]), memory=STANDUPS))
    scope_id = _scope(store, "group")
    old, new = _add(store, scope_id, OLD), _add(store, scope_id, NEW)
    _consolidate(store, scope_id)
    waiting = _get(store, new)
    jobs: list[Job] = []

    if choice == "pick_older":
        review_decide(store=store, observation=waiting, decision="reject", actor="t")
    elif choice == "edit":
        review_decide(
            store=store,
            observation=waiting,
            decision="approve",
            actor="t",
            content="The team standup happens in the green room on Mondays.",
        )
    else:
        review_decide(store=store, observation=waiting, decision="approve", actor="t")
        if choice == "pick_newer":
            observation_delete(store=store, observation=_get(store, old), follow_ups=jobs)

    decided = _get(store, new)
    assert decided.status == ("rejected" if choice == "pick_older" else "pending")
    if choice == "edit":
        assert decided.content == "The team standup happens in the green room on Mondays."
    assert review_queue(store=store, agent_id=AGENT, scope_id=scope_id).items == []
    if choice != "pick_older":
        # The model names the pair again: a person decided it, so nothing waits again.
        result = _consolidate(store, scope_id)
        assert result["held_for_review"] == []
        assert _get(store, new).status == "consolidated"
    assert _get(store, old).deleted == (choice == "pick_newer")


def test_in_an_individual_scope_both_are_flagged_and_absorbed(
    store: MemoryStore, fake_openai
) -> None:
    fake_openai.set_responder(contradiction_responder((OLD[:-1], NEW[:-1]), memory=STANDUPS))
    scope_id = _scope(store, "individual")
    old, new = _add(store, scope_id, OLD), _add(store, scope_id, NEW)

    result = _consolidate(store, scope_id)

    assert result["contradictions"] and result["held_for_review"] == []
    assert _get(store, old).contradicts == [new.id] and _get(store, new).contradicts == [old.id]
    assert _get(store, new).status == "consolidated" and _get(store, old).status == "consolidated"


def test_only_ids_the_prompt_offered_count() -> None:
    offered = [str(ObjectId()), str(ObjectId())]
    stranger = str(ObjectId())
    text = "Memory text.\n\nCONTRADICTIONS:\n" + "\n".join(
        [f"[{offered[0]}] [{offered[1]}]", f"[{offered[0]}] [{stranger}]", "[x] [y]"]
    )
    memory, pairs = answer_split(text, offered)
    assert memory == "Memory text."
    assert pairs == [(offered[0], offered[1])]
    assert answer_split("Just memory.", offered) == ("Just memory.", [])


def test_the_strict_fake_refuses_ids_its_prompt_does_not_list() -> None:
    listed = str(ObjectId())
    prompt = f"# New observations\n- [2026-11-20] [{listed}] {OLD}\n"
    request = RecordedRequest(
        method="POST",
        path="/v1/chat/completions",
        headers={"X-Memory-Task": "consolidation"},
        body={"messages": [{"role": "user", "content": prompt}]},
        time=0.0,
    )
    stranger = str(ObjectId())
    assert unknown_contradiction_ids(request, "M." + answer_trailer([(listed, stranger)])) == [
        stranger
    ]
    assert unknown_contradiction_ids(request, "M.") == []


def test_the_offline_provider_reports_what_the_deterministic_check_finds() -> None:
    at = datetime(2026, 11, 20, tzinfo=UTC)
    porto, lisbon, tea = str(ObjectId()), str(ObjectId()), str(ObjectId())
    context = ConsolidationContext(
        scope_description="group Eden Team",
        current=None,
        observations=[
            DatedObservation("Ada lives in Porto.", at, porto),
            DatedObservation("Ada likes tea.", at, tea),
            DatedObservation("Ada lives in Lisbon.", at, lisbon),
        ],
        max_words=200,
    )
    answer = OfflineProvider().complete(
        LLMRequest(task="consolidation", prompt="", context=context, json_output=False, tier="slow")
    )
    memory, pairs = answer_split(answer.text, [porto, lisbon, tea])
    assert pairs == [(porto, lisbon)]
    assert "CONTRADICTIONS" not in memory and "Lisbon" in memory
