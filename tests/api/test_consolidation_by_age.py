"""Consolidation by age (issue 42 item 2): pending observations below the threshold are
folded once they waited MEMORY_CONSOLIDATE_AFTER_DAYS, per scope type, with scope overrides.

The sweep takes the time it runs at (`now`): a pass "12 days later" is a call with a later
`now`, so nothing here waits or fakes the clock.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from bson import ObjectId
from django.core.management import call_command

from memory_admin.jobs.tasks import enqueue, sweep_aged_pending
from memory_admin.stores import get_store
from streams.core.consolidate_after import ConsolidateAfterDays
from streams.core.documents import utcnow
from streams.memory.consolidation_age import aged_consolidations_sweep
from tests.api.conftest import API, assert_error
from tests.factories import ScopeFactory

KINDS = ("individual", "group", "collective", "shard")


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CONSOLIDATE_AFTER_DAYS = "7"


def make_scope(api, store, kind: str) -> str:
    """A scope of `kind` of agent a1: individual scopes come from conversations and the
    collective memory from first use (the factory); a group and a shard through the API."""
    if kind == "individual":
        return ScopeFactory.create(store=store, agent_id="a1", user_id="u1").id
    if kind == "collective":
        return ScopeFactory.create(store=store, agent_id="a1", collective=True).id
    body = {
        "group": {"scope_type": "group", "group_id": "g1"},
        "shard": {
            "scope_type": "collective",
            "name": "billing",
            "extraction_prompt": "Billing facts.",
        },
    }[kind]
    response = api.post(f"{API}/agents/a1/scopes", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def add_three(api, scope_id: str) -> None:
    for text in ("Dan drinks oolong tea.", "Dan's scrum is at nine.", "Dan owns a red bike."):
        response = api.post(
            f"{API}/scopes/{scope_id}/observations",
            {"content": text},
            content_type="application/json",
        )
        assert response.status_code == 201, response.content


def scope_of(api, scope_id: str) -> dict:
    response = api.get(f"{API}/scopes/{scope_id}")
    assert response.status_code == 200, response.content
    return response.json()


def sweep(run_tasks, days_later: float) -> int:
    """One pass of the age sweep at `days_later` days from now; its jobs run."""
    with run_tasks():
        jobs = aged_consolidations_sweep(
            store=get_store(), now=utcnow() + timedelta(days=days_later)
        )
        for job in jobs:
            enqueue(job)
    return len(jobs)


@pytest.mark.parametrize("kind", KINDS)
def test_three_pending_observations_are_folded_once_older_than_the_days(
    api, store, run_tasks, kind
):
    scope_id = make_scope(api, store, kind)
    add_three(api, scope_id)
    before = scope_of(api, scope_id)
    assert (before["pending_count"], before["consolidation_threshold"]) == (3, 10)
    assert before["consolidate_after_days"] is None  # the scope type's default applies
    assert sweep(run_tasks, days_later=6) == 0  # younger than 7 days: waits
    assert scope_of(api, scope_id)["pending_count"] == 3
    assert sweep(run_tasks, days_later=12) == 1
    after = scope_of(api, scope_id)
    assert (after["pending_count"], after["consolidation_version"]) == (0, 1)
    versions = api.get(f"{API}/scopes/{scope_id}/consolidations").json()["items"]
    assert versions[0]["trigger"] == "age"
    assert sweep(run_tasks, days_later=12) == 0  # nothing pending any more


@pytest.mark.parametrize("kind", KINDS)
def test_the_days_are_set_per_scope_type(api, store, run_tasks, settings, kind):
    others = [k for k in KINDS if k != kind]
    settings.MEMORY_CONSOLIDATE_AFTER_DAYS = f"{kind}=2," + ",".join(f"{k}=30" for k in others)
    scope_id = make_scope(api, store, kind)
    add_three(api, scope_id)
    assert sweep(run_tasks, days_later=1) == 0
    assert sweep(run_tasks, days_later=3) == 1
    assert scope_of(api, scope_id)["pending_count"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_scope_override_wins_over_its_type_and_zero_turns_it_off(api, store, run_tasks, kind):
    scope_id = make_scope(api, store, kind)
    add_three(api, scope_id)
    off = api.patch(
        f"{API}/scopes/{scope_id}", {"consolidate_after_days": 0}, content_type="application/json"
    )
    assert off.status_code == 200, off.content
    assert off.json()["consolidate_after_days"] == 0
    assert sweep(run_tasks, days_later=400) == 0
    two = api.patch(
        f"{API}/scopes/{scope_id}", {"consolidate_after_days": 2}, content_type="application/json"
    )
    assert two.json()["consolidate_after_days"] == 2
    assert sweep(run_tasks, days_later=1) == 0
    assert sweep(run_tasks, days_later=3) == 1
    assert scope_of(api, scope_id)["pending_count"] == 0
    back = api.patch(
        f"{API}/scopes/{scope_id}",
        {"consolidate_after_days": None},
        content_type="application/json",
    )
    assert back.json()["consolidate_after_days"] is None


def test_a_paused_scope_or_one_with_a_run_queued_gets_no_age_job(api, store, run_tasks):
    scope_id = make_scope(api, store, "group")
    add_three(api, scope_id)
    api.patch(f"{API}/scopes/{scope_id}", {"is_active": False}, content_type="application/json")
    assert sweep(run_tasks, days_later=12) == 0
    api.patch(f"{API}/scopes/{scope_id}", {"is_active": True}, content_type="application/json")
    first = aged_consolidations_sweep(store=get_store(), now=utcnow() + timedelta(days=12))
    assert len(first) == 1  # queued, not yet run
    assert aged_consolidations_sweep(store=get_store(), now=utcnow() + timedelta(days=12)) == []
    with run_tasks():
        enqueue(first[0])
    assert scope_of(api, scope_id)["pending_count"] == 0


def test_the_periodic_task_leaves_fresh_pending_observations_alone(api, store, run_tasks):
    scope_id = make_scope(api, store, "individual")
    add_three(api, scope_id)
    with run_tasks():
        assert sweep_aged_pending.apply().get() == 0
    assert scope_of(api, scope_id)["pending_count"] == 3


@pytest.mark.parametrize("value", [-1, 3651, 1.5, "7", True])
def test_a_bad_override_is_a_422_naming_the_field(api, store, value):
    scope_id = make_scope(api, store, "group")
    response = api.patch(
        f"{API}/scopes/{scope_id}",
        {"consolidate_after_days": value},
        content_type="application/json",
    )
    error = assert_error(response, 422, response.json()["error"]["code"])
    assert "consolidate_after_days" in str(error)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ConsolidateAfterDays()),
        ("0", ConsolidateAfterDays(individual=0, group=0, collective=0, shard=0)),
        ("individual=3, shard=30", ConsolidateAfterDays(individual=3, shard=30)),
    ],
)
def test_the_setting_parses_one_number_or_days_per_kind(value, expected):
    assert ConsolidateAfterDays.parse(value) == expected


@pytest.mark.parametrize("value", ["seven", "user=3", "individual=-1", "group=99999"])
def test_a_bad_setting_is_refused(value):
    with pytest.raises(ValueError, match="MEMORY_CONSOLIDATE_AFTER_DAYS"):
        ConsolidateAfterDays.parse(value)


def test_the_sweep_pages_through_every_due_scope(api, store, run_tasks):
    scope_ids = []
    for n in range(5):
        response = api.post(
            f"{API}/agents/a1/scopes",
            {"scope_type": "group", "group_id": f"g{n}"},
            content_type="application/json",
        )
        scope_ids.append(response.json()["id"])
        api.post(
            f"{API}/scopes/{scope_ids[-1]}/observations",
            {"content": f"Team {n} meets on Mondays."},
            content_type="application/json",
        )
    jobs = aged_consolidations_sweep(
        store=get_store(), now=utcnow() + timedelta(days=12), page_size=2
    )
    assert sorted(j.scope_id for j in jobs) == sorted(scope_ids)
    with run_tasks():
        for job in jobs:
            enqueue(job)
    assert [scope_of(api, s)["pending_count"] for s in scope_ids] == [0] * 5


# -- the sweep's key: `pending_since`, one index entry a scope ---------------------------


def pending_since(store, scope_id: str):
    return store.scopes.collection.find_one({"_id": ObjectId(scope_id)}).get("pending_since")


@pytest.mark.parametrize("kind", KINDS)
def test_the_oldest_pending_id_is_the_sweeps_key_and_a_stale_one_is_healed(
    api, store, run_tasks, kind
):
    scope_id = make_scope(api, store, kind)
    add_three(api, scope_id)
    pending = scope_of(api, scope_id)
    oldest = min(store.scopes.get(ObjectId(scope_id)).pending_observation_ids)
    assert str(pending_since(store, scope_id)) == oldest
    # Every pending observation deleted: the key stays (ids leave pending without it)...
    for observation_id in store.scopes.get(ObjectId(scope_id)).pending_observation_ids:
        response = api.delete(f"{API}/observations/{observation_id}")
        assert response.status_code in (200, 204), response.content
    assert pending_since(store, scope_id) is not None
    # ...until a pass reads the scope, finds nothing due, and makes it true: unset.
    assert sweep(run_tasks, days_later=12) == 0
    assert pending_since(store, scope_id) is None
    assert pending["pending_count"] == 3


def test_scopes_stored_before_the_key_get_it_from_ensure_indexes(api, store, run_tasks):
    scope_id = make_scope(api, store, "group")
    add_three(api, scope_id)
    store.scopes.collection.update_one(
        {"_id": ObjectId(scope_id)}, {"$unset": {"pending_since": ""}}
    )  # as an earlier version stored it
    assert sweep(run_tasks, days_later=12) == 0  # not found without its key
    out = StringIO()
    call_command("ensure_indexes", stdout=out)
    assert "pending_since set on 1 scopes" in out.getvalue()
    assert sweep(run_tasks, days_later=12) == 1
    assert scope_of(api, scope_id)["pending_count"] == 0
