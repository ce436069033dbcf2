"""Consolidation fidelity (issue 38, item 1): what a version no longer states, computed at
commit on every version (a model's, a hand edit, a restore), without a model call."""

from __future__ import annotations

from bson import ObjectId

from streams.memory.consolidation import consolidation_commit, consolidation_edit
from streams.memory.fidelity import consolidation_fidelity, specifics
from streams.memory.observations import observation_add, observation_get
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore

CAROLINE = [
    ("o1", "Caroline went to an LGBTQ support group on 7 May 2023."),
    ("o2", "Caroline is a transgender woman."),
    ("o3", "Caroline was so happy and thankful for all the support."),
    ("o4", "Caroline is considering counselling as a career in psychology."),
]


def test_specific_content_is_names_numbers_dates_and_rare_words() -> None:
    found = specifics("She went to the LGBTQ support group on 7 May 2023 with Melanie.")
    assert {"lgbtq", "support", "7", "2023", "melanie"} <= found
    assert not found & {"she", "the", "went", "on", "with", "to"}


def test_sample_b_leaves_two_of_four_observations_unstated() -> None:
    text = (
        "Caroline is a transgender woman. Caroline was so happy and thankful for all the support."
    )
    fidelity = consolidation_fidelity(previous=None, text=text, absorbed=CAROLINE)
    assert fidelity.unstated_observation_ids == ["o1", "o4"]
    assert fidelity.stated_share == 0.5


def test_a_paraphrase_states_what_it_keeps() -> None:
    text = (
        "Caroline, a transgender woman, attended an LGBTQ support group on 7 May 2023; she "
        "felt thankful for the support and is considering a counselling career in psychology."
    )
    fidelity = consolidation_fidelity(previous=None, text=text, absorbed=CAROLINE)
    assert fidelity.unstated_observation_ids == []


def test_a_previous_sentence_the_new_text_drops_is_reported() -> None:
    previous = "Caroline paints sunsets by the lake. Caroline moved from Sweden in 2019."
    text = "Caroline paints sunsets by the lake. Caroline is a transgender woman."
    fidelity = consolidation_fidelity(previous=previous, text=text, absorbed=CAROLINE[1:2])
    assert fidelity.dropped_sentences == ["Caroline moved from Sweden in 2019."]
    assert fidelity.to_dict() == {
        "unstated_observation_ids": [],
        "dropped_sentences": ["Caroline moved from Sweden in 2019."],
    }


def test_the_memory_subject_alone_does_not_state_a_fact() -> None:
    # "Caroline" is in every input: keeping the name keeps none of o1's facts.
    text = "Caroline is a transgender woman. Caroline was thankful for all the support."
    fidelity = consolidation_fidelity(
        previous=None, text=f"{text} Caroline likes psychology.", absorbed=CAROLINE
    )
    assert "o1" in fidelity.unstated_observation_ids


def _scope(store: MemoryStore):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    return scope


def test_each_version_records_its_fidelity_at_commit(store: MemoryStore) -> None:
    scope = _scope(store)
    kept = observation_add(store=store, scope=scope, content="The team ships on Fridays.")
    lost = observation_add(store=store, scope=scope, content="Oskar runs the Kubernetes cluster.")
    scope = scope_get(store=store, scope_id=scope.id)

    entry = consolidation_commit(
        store=store,
        scope=scope,
        expected_version=0,
        text="The team ships on Fridays.",
        absorbed_ids=[kept.id, lost.id],
        trigger="manual",
        actor="t",
    )

    stored = store.consolidations.get(ObjectId(scope.id), 1)
    assert stored is not None and stored.fidelity == entry.fidelity
    assert stored.fidelity == {"unstated_observation_ids": [lost.id], "dropped_sentences": []}


def test_a_hand_edit_that_drops_a_sentence_records_it(store: MemoryStore) -> None:
    scope = _scope(store)
    consolidation_edit(
        store=store,
        scope=scope,
        text="The team ships on Fridays. Oskar runs the Kubernetes cluster.",
        expected_version=0,
        actor="t",
    )
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store, scope=scope, text="The team ships on Fridays.", expected_version=1, actor="t"
    )
    stored = store.consolidations.get(ObjectId(scope.id), 2)
    assert stored is not None and stored.fidelity == {
        "unstated_observation_ids": [],
        "dropped_sentences": ["Oskar runs the Kubernetes cluster."],
    }


def test_forget_leaves_no_copy_in_a_dropped_sentence(store: MemoryStore) -> None:
    import json

    from streams.memory.observation_changes import observation_delete
    from streams.memory.rebuild import rebuild_run
    from streams.memory.source_change import source_change_run
    from tests.task_mode import run_job

    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    key = observation_add(store=store, scope=scope, content="The spare key is under the flowerpot.")
    tea = observation_add(store=store, scope=scope, content="The team drinks Assam tea.")
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_commit(
        store=store,
        scope=scope,
        expected_version=0,
        text="The spare key is under the flowerpot. The team drinks Assam tea.",
        absorbed_ids=[key.id, tea.id],
        trigger="manual",
        actor="t",
    )
    scope = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store, scope=scope, text="The team drinks Assam tea.", expected_version=1, actor="t"
    )
    stored = store.consolidations.get(ObjectId(scope.id), 2)
    assert stored is not None and stored.fidelity is not None
    assert stored.fidelity["dropped_sentences"] == ["The spare key is under the flowerpot."]

    jobs: list = []
    fresh = observation_get(store=store, observation_id=key.id)
    observation_delete(store=store, observation=fresh, follow_ups=jobs)
    # The delete's follow-up is its `source_change` job (the outbox); it sends the rebuild.
    assert [job.kind for job in jobs] == ["source_change"], jobs
    rebuilds = jobs[0].payload["rebuild_job_ids"]
    run_job(store=store, job_id=jobs[0].id, work=lambda r: source_change_run(store=store, run=r))
    assert len(rebuilds) == 1
    run_job(store=store, job_id=rebuilds[0], work=lambda r: rebuild_run(store=store, run=r))

    left = json.dumps(
        list(store.db["memory_consolidations"].find({"scope_id": ObjectId(scope.id)}).limit(10)),
        default=str,
    )
    assert "flowerpot" not in left
