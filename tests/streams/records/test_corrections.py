"""Corrections in the domain (issue 38, item 5): a propagated copy's correction teaches the
propagation prompt and makes a propagation check of the observation it was copied from;
a bulk delete or private records its corrections with the bulk action (none on a dry
run); what a correction implies no check of is refused, naming the field."""

from __future__ import annotations

import pytest
from bson import ObjectId

from streams.actions import Actor
from streams.actions.bulk import do_observations_bulk
from streams.actions.observations import do_observation_delete, do_observation_update
from streams.core.exceptions import InvalidInput
from streams.drafts.corrections import correction_check_spec, corrections_page
from streams.memory.bulk import BulkFilter
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db
AGENT = "agent-1"
OPERATOR = Actor.ui("sam")
SOURCE = "The Eden team deploys on Fridays after the review."


def _copy(store, source, target, text: str):
    """An observation of `target` as propagation files it: a copy of `source`."""
    copy = ObservationFactory.create(store=store, scope=target, content=text)
    store.observations.update_fields(
        ObjectId(copy.id), {"origin": "propagation", "propagated_from": ObjectId(source.id)}
    )
    return store.observations.get(ObjectId(copy.id))


def test_a_deleted_copy_teaches_propagation_and_checks_its_source(store):
    gene = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    team = ScopeFactory.create(store=store, agent_id=AGENT, group=True, display_name="Eden")
    source = ObservationFactory.create(store=store, scope=gene, content=SOURCE)
    copy = _copy(store, source, team, "Gene's team deploys on Fridays.")
    do_observation_delete(store=store, actor=OPERATOR, observation=copy, reason="names Gene")
    [shown] = corrections_page(store=store, agent_id=AGENT, kind="propagation").items
    c = shown.correction
    assert (c.what, c.prompt_kind, c.reason, c.scope_kind) == (
        "delete", "propagation", "names Gene", "group",
    )  # fmt: skip
    assert shown.before is None and shown.withheld == "deleted"
    assert corrections_page(store=store, agent_id=AGENT, kind="extraction").items == []
    # Listed on the source scope's propagation page (its prompt made the copy).
    by_source = corrections_page(store=store, agent_id=AGENT, kind="propagation", scope_id=gene.id)
    assert [s.correction.id for s in by_source.items] == [c.id]
    assert (
        corrections_page(store=store, agent_id=AGENT, kind="propagation", scope_id=team.id).items
        == []
    )
    spec = correction_check_spec(store=store, correction=c)
    assert spec["kind"] == "propagation" and spec["conversation"] == SOURCE
    assert spec["expectations"] == [
        {"type": "nothing_personal", "value": "Gene's team deploys on Fridays."}
    ]


def test_an_edited_copy_implies_no_propagation_check(store):
    gene = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    team = ScopeFactory.create(store=store, agent_id=AGENT, group=True)
    source = ObservationFactory.create(store=store, scope=gene, content=SOURCE)
    copy = _copy(store, source, team, "The team deploys on Fridays.")
    do_observation_update(
        store=store, actor=OPERATOR, observation=copy, content="The team deploys on Friday."
    )
    [shown] = corrections_page(store=store, agent_id=AGENT, kind="propagation").items
    with pytest.raises(InvalidInput) as refused:
        correction_check_spec(store=store, correction=shown.correction)
    assert refused.value.details == [{"field": "correction_id"}]


def test_a_hand_added_observation_is_corrected_under_no_prompt(store):
    gene = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    added = ObservationFactory.create(store=store, scope=gene, content="Gene likes tea.")
    do_observation_delete(store=store, actor=OPERATOR, observation=added)
    for kind in ("extraction", "propagation", "consolidation"):
        assert corrections_page(store=store, agent_id=AGENT, kind=kind).items == []
    doc = store.corrections.page(
        agent_id=AGENT, prompt_kind=None, scope_id=None, before=None, limit=5
    ).docs
    assert [d["what"] for d in doc] == ["delete"]


@pytest.mark.parametrize("action", ["delete", "private"])
def test_a_bulk_action_records_its_corrections_a_dry_run_none(store, action):
    gene = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u1")
    for n in range(3):
        ObservationFactory.create(store=store, scope=gene, content=f"Gene fact number {n}.")
    chosen = BulkFilter(scope_id=gene.id)
    do_observations_bulk(
        store=store, actor=OPERATOR, agent_id=AGENT, bulk_filter=chosen, action=action
    )
    assert (
        store.corrections.page(
            agent_id=AGENT, prompt_kind=None, scope_id=None, before=None, limit=5
        ).docs
        == []
    )
    outcome = do_observations_bulk(
        store=store, actor=OPERATOR, agent_id=AGENT, bulk_filter=chosen, action=action,
        dry_run=False,
    )  # fmt: skip
    assert outcome.job is not None
    docs = store.corrections.page(
        agent_id=AGENT, prompt_kind=None, scope_id=None, before=None, limit=5
    ).docs
    assert sorted(d["what"] for d in docs) == [action] * 3
    assert all(d["user_ids"] == ["u1"] and d["actor"] == "ui:sam" for d in docs)


def test_bad_input_names_the_field(store):
    with pytest.raises(InvalidInput) as kind:
        corrections_page(store=store, agent_id=AGENT, kind="summary")
    assert kind.value.details == [{"field": "kind"}]
    with pytest.raises(InvalidInput) as limit:
        corrections_page(store=store, agent_id=AGENT, kind="extraction", limit=0)
    assert limit.value.details == [{"field": "limit"}]
