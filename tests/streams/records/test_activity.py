"""Per-day activity counters: written beside the agent counters, read as a dense range."""

from __future__ import annotations

from datetime import timedelta

from streams.core.documents import utcnow
from streams.memory.consolidation import consolidation_edit
from streams.records.activity import activity_days, activity_record
from tests.factories import ObservationFactory, ScopeFactory


def test_observations_and_consolidations_are_counted_on_their_day(store):
    scope = ScopeFactory.create(store=store, agent_id="a1")
    ObservationFactory.create(store=store, scope=scope)
    ObservationFactory.create(store=store, scope=scope)
    consolidation_edit(
        store=store, scope=scope, text="Likes tea.", expected_version=0, actor="ui:o"
    )

    today = utcnow().date()
    days = activity_days(store=store, agent_id="a1", last=today, days=3)

    assert [d.day for d in days] == [today - timedelta(days=2), today - timedelta(days=1), today]
    assert (days[-1].observations, days[-1].consolidations) == (2, 1)
    assert (days[0].observations, days[0].consolidations) == (0, 0)


def test_days_are_per_agent_and_nothing_recorded_for_zero(store):
    now = utcnow()
    activity_record(store=store, agent_id="a1", now=now, observations=3)
    activity_record(store=store, agent_id="a2", now=now)  # nothing to count: no document

    assert activity_days(store=store, agent_id="a1", last=now.date(), days=1)[0].observations == 3
    assert activity_days(store=store, agent_id="a2", last=now.date(), days=1)[0].observations == 0
    assert store.agent_days.collection.count_documents({"agent_id": "a2"}) == 0


def test_the_range_is_clamped_to_a_year(store):
    days = activity_days(store=store, agent_id="a1", last=utcnow().date(), days=10_000)
    assert len(days) == 366
