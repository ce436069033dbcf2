"""POST /agents/{agent_id}/observations/bulk: dry run, delete, mark private, move; the bad input."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from bson import ObjectId

from streams.core.documents import Observation, Scope
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.search.index import search_observations
from tests.api.conftest import API, assert_error
from tests.task_mode import settle

AGENT = "a1"
BULK_ACTIONS = ["observation.bulk_delete", "observation.bulk_private", "observation.bulk_move"]


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@dataclass
class World:
    alice: Scope
    bob: Scope
    group: Scope
    collective: Scope
    shard: Scope
    bad_session: list[Observation]  # everything session "s-bad" left, in every scope type
    good: list[Observation]


def _add(store, scope, text, *, session, speakers) -> Observation:
    return observation_add(
        store=store,
        scope=scope,
        content=text,
        source_session_id=session,
        source_message_ids=[str(ObjectId())],
        related_user_ids=speakers,
    )


def _consolidate(store, scope, observations, text) -> None:
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text=text, absorbed_ids=[o.id for o in observations], trigger="threshold", actor=None,
    )  # fmt: skip


@pytest.fixture
def world(store) -> World:
    """Alice and Bob of agent a1, one group, the collective and a shard; a bad session
    ("s-bad") left observations in each, some of them consolidated already."""
    scopes = {
        name: scope_get_or_create(store=store, key=key)[0]
        for name, key in {
            "alice": ScopeKey.individual(AGENT, "alice"),
            "bob": ScopeKey.individual(AGENT, "bob"),
            "group": ScopeKey.group(AGENT, "g-1"),
            "collective": ScopeKey.collective(AGENT),
            "shard": ScopeKey.collective(AGENT, "billing"),
        }.items()
    }
    bad: list[Observation] = []
    good: list[Observation] = []
    for name, scope in scopes.items():
        speakers = ["alice"] if name != "bob" else ["bob"]
        if name in ("group", "collective", "shard"):
            speakers = ["alice", "bob"]
        kept = _add(
            store, scope, f"{name} kept fact about zebras", session="s-ok", speakers=speakers
        )
        junk = [
            _add(
                store, scope, f"{name} junk {i} about walruses", session="s-bad", speakers=speakers
            )
            for i in range(3)
        ]
        good.append(kept)
        bad += junk
        _consolidate(store, scope, [kept, junk[0]], f"{name}: zebras. walruses.")
    return World(**scopes, bad_session=bad, good=good)


def _search(store, scope_id: str, query: str):
    scope = scope_get(store=store, scope_id=scope_id)
    return search_observations(
        store=store, agent_id=AGENT, scope_id=scope_id, user_id=scope.user_id, query=query,
        record_access=False,
    )  # fmt: skip


def bulk(client, body, agent=AGENT):
    return client.post(
        f"{API}/agents/{agent}/observations/bulk", body, content_type="application/json"
    )


def test_dry_run_is_the_default_and_changes_nothing(api, store, world):
    response = bulk(api, {"filter": {"session_id": "s-bad"}, "action": "delete"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["matched"] == 15 and body["job_id"] is None
    assert {o["id"] for o in body["sample"]} == {o.id for o in world.bad_session}
    assert all(o["source_session_id"] == "s-bad" for o in body["sample"])
    for scope in (world.alice, world.bob, world.group, world.collective, world.shard):
        assert api.get(f"{API}/scopes/{scope.id}").json()["pending_count"] == 2
    assert store.audit.collection.count_documents({"action": {"$in": BULK_ACTIONS}}) == 0


def test_the_sample_is_at_most_20_newest_first(api, store, world):
    for i in range(25):
        _add(store, world.group, f"flood {i}", session="s-flood", speakers=["bob"])
    body = bulk(api, {"filter": {"session_id": "s-flood"}, "action": "private"}).json()
    assert body["matched"] == 25 and len(body["sample"]) == 20
    assert [o["content"] for o in body["sample"][:2]] == ["flood 24", "flood 23"]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"scope_id": "GROUP"}, 4),
        ({"scope_id": "GROUP", "status": "pending"}, 2),
        ({"scope_id": "GROUP", "status": "consolidated"}, 2),
        ({"scope_id": "GROUP", "q": "WALRUS"}, 3),
        ({"speaker_user_id": "bob"}, 16),
        ({"speaker_user_id": "bob", "q": "junk 1"}, 4),
        ({"q": "zebras"}, 5),
        ({"status": "pending"}, 10),
        ({"session_id": "s-bad", "speaker_user_id": "alice"}, 12),
        ({"observed_after": "2000-01-01T00:00:00Z"}, 20),
        ({"observed_before": "2000-01-01T00:00:00Z"}, 0),
    ],
)
def test_each_filter_field_narrows(api, world, flt, expected):
    flt = {k: (world.group.id if v == "GROUP" else v) for k, v in flt.items()}
    response = bulk(api, {"filter": flt, "action": "delete"})
    assert response.status_code == 200, response.content
    assert response.json()["matched"] == expected


def test_delete_runs_a_job_with_one_rebuild_per_scope_and_one_audit_entry(
    api, store, world, run_tasks
):
    with run_tasks():
        response = bulk(
            api, {"filter": {"session_id": "s-bad"}, "action": "delete", "dry_run": False}
        )
    settle(store)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["matched"] == 15 and body["job_id"]
    job = api.get(f"{API}/jobs/{body['job_id']}").json()
    assert (job["kind"], job["status"]) == ("bulk", "succeeded")
    assert job["result"]["applied"] == 15 and job["result"]["rebuilds_queued"] == 5
    for observation in world.bad_session:
        assert api.get(f"{API}/observations/{observation.id}").json()["deleted"] is True
    for observation in world.good:
        assert api.get(f"{API}/observations/{observation.id}").json()["deleted"] is False
    rebuilds = list(store.jobs.collection.find({"kind": "rebuild"}).limit(50))
    assert sorted(str(j["scope_id"]) for j in rebuilds) == sorted(
        s.id for s in (world.alice, world.bob, world.group, world.collective, world.shard)
    )
    for scope in (world.alice, world.bob, world.group, world.collective, world.shard):
        body = api.get(f"{API}/scopes/{scope.id}").json()
        assert body["pending_count"] == 0 and body["needs_rebuild"] is False
        assert "walruses" not in body["consolidation"] and "zebras" in body["consolidation"]
        assert _search(store, scope.id, "walruses") == []
    [entry] = list(store.audit.collection.find({"action": "observation.bulk_delete"}).limit(5))
    assert entry["summary"]["filter"] == {"session_id": "s-bad"}
    assert entry["summary"]["count"] == 15 and entry["actor"] == "api:test-key"


def test_mark_private_takes_only_what_is_not_private_yet(api, store, world, run_tasks):
    with run_tasks():
        body = bulk(
            api,
            {"filter": {"scope_id": world.group.id, "q": "junk"}, "action": "private",
             "dry_run": False},
        ).json()  # fmt: skip
    settle(store)
    assert body["matched"] == 3
    again = bulk(api, {"filter": {"scope_id": world.group.id, "q": "junk"}, "action": "private"})
    assert again.json()["matched"] == 0
    group = api.get(f"{API}/scopes/{world.group.id}").json()
    assert "walruses" not in group["consolidation"] and group["needs_rebuild"] is False


def test_move_keeps_provenance_and_people_and_forget_user_still_reaches_it(
    api, store, world, run_tasks
):
    """Alice's facts filed in the group by mistake go to her own scope, then Alice is forgotten."""
    misfiled = [
        _add(
            store, world.group, f"Alice's passport number is {i}", session="s-9", speakers=["alice"]
        )
        for i in range(3)
    ]
    with run_tasks():
        body = bulk(
            api,
            {"filter": {"scope_id": world.group.id, "q": "passport"}, "action": "move",
             "target_scope_id": world.alice.id, "dry_run": False},
        ).json()  # fmt: skip
    settle(store)
    assert body["matched"] == 3
    for before in misfiled:
        after = api.get(f"{API}/observations/{before.id}").json()
        assert after["scope_id"] == world.alice.id and after["status"] == "pending"
        assert after["source_session_id"] == "s-9"
        assert after["source_message_ids"] == before.source_message_ids
        assert after["related_user_ids"] == ["alice"]
        assert after["content"] == before.content
    alice = api.get(f"{API}/scopes/{world.alice.id}").json()
    group = api.get(f"{API}/scopes/{world.group.id}").json()
    assert (alice["observation_count"], alice["pending_count"]) == (7, 5)
    assert (group["observation_count"], group["pending_count"]) == (4, 2)
    listed = api.get(f"{API}/scopes/{world.alice.id}/observations?limit=50").json()["items"]
    assert {o.id for o in misfiled} <= {o["id"] for o in listed}

    with run_tasks():
        job_id = api.delete(f"{API}/agents/{AGENT}/users/alice").json()["job_id"]
    settle(store)
    receipt = api.get(f"{API}/jobs/{job_id}").json()["result"]
    # Alice's scope (4 of her own + 3 moved in) and her share of every shared scope.
    assert receipt["deleted"]["memory_scopes"] == 1
    for observation in misfiled:
        assert api.get(f"{API}/observations/{observation.id}").status_code == 404
    left = store.observations.collection.count_documents(
        {"agent_id": AGENT, "related_user_ids": "alice"}
    )
    assert left == 0
    assert receipt["deleted"]["memory_observations"] == 7 + 4 * 3


def test_move_into_a_shard_is_pending_there_and_searchable(api, store, world, run_tasks):
    with run_tasks():
        bulk(
            api,
            {"filter": {"scope_id": world.collective.id, "q": "junk"}, "action": "move",
             "target_scope_id": world.shard.id, "dry_run": False},
        )  # fmt: skip
    settle(store)
    hits = _search(store, world.shard.id, "walruses")
    assert {h.observation.scope_id for h in hits} == {world.shard.id}
    assert len(hits) == 6
    assert _search(store, world.collective.id, "walruses") == []


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"filter": {}, "action": "delete"},
        {"filter": {"status": "all"}, "action": "delete"},
        {"action": "delete"},
        {"filter": {"session_id": "s"}, "action": "purge"},
        {"filter": {"session_id": "s"}, "action": "delete", "extra": 1},
        {"filter": {"session_id": "s", "colour": "red"}, "action": "delete"},
        {"filter": {"session_id": ""}, "action": "delete"},
        {"filter": {"session_id": "s" * 129}, "action": "delete"},
        {"filter": {"q": "   "}, "action": "delete"},
        {"filter": {"q": "x" * 201}, "action": "delete"},
        {"filter": {"observed_after": "yesterday"}, "action": "delete"},
        {"filter": {"observed_after": "2024-01-01T00:00:00"}, "action": "delete"},
        {
            "filter": {
                "observed_after": "2024-02-01T00:00:00Z",
                "observed_before": "2024-01-01T00:00:00Z",
            },
            "action": "delete",
        },
        {"filter": {"status": "deleted"}, "action": "delete"},
        {"filter": {"session_id": "s"}, "action": "delete", "dry_run": "no"},
        {"filter": {"session_id": "s"}, "action": "move"},
        {"filter": {"session_id": "s"}, "action": "delete", "target_scope_id": "x"},
        {"filter": "everything", "action": "delete"},
    ],
)
def test_bad_bodies_are_422_in_the_envelope(api, world, body):
    assert_error(bulk(api, body), 422, "validation_error")


def test_more_than_the_limit_is_422(api, world, settings):
    settings.MEMORY_BULK_MAX = 14
    error = assert_error(
        bulk(api, {"filter": {"session_id": "s-bad"}, "action": "delete", "dry_run": False}),
        422,
        "validation_error",
    )
    assert "14" in error["message"]
    settings.MEMORY_BULK_MAX = 15
    assert bulk(api, {"filter": {"session_id": "s-bad"}, "action": "delete"}).status_code == 200


def test_move_targets_must_be_of_the_agent_known_and_active(api, store, world):
    other, _ = scope_get_or_create(store=store, key=ScopeKey.group("a2", "g-9"))
    base = {"filter": {"session_id": "s-bad"}, "action": "move"}
    assert_error(bulk(api, {**base, "target_scope_id": other.id}), 422, "validation_error")
    assert_error(bulk(api, {**base, "target_scope_id": str(ObjectId())}), 404, "not_found")
    assert_error(bulk(api, {**base, "target_scope_id": "not-an-id"}), 404, "not_found")
    paused = api.patch(
        f"{API}/scopes/{world.shard.id}", {"is_active": False}, content_type="application/json"
    )
    assert paused.status_code == 200
    error = assert_error(bulk(api, {**base, "target_scope_id": world.shard.id}), 422,
                         "validation_error")  # fmt: skip
    assert "paused" in error["message"]


def test_unknown_and_foreign_scopes_and_agents_are_404(api, limited_api, store, world):
    other, _ = scope_get_or_create(store=store, key=ScopeKey.group("a2", "g-9"))
    for scope_id in (str(ObjectId()), "zzz", other.id):
        assert_error(
            bulk(api, {"filter": {"scope_id": scope_id}, "action": "delete"}), 404, "not_found"
        )
    assert_error(
        bulk(limited_api, {"filter": {"session_id": "s-bad"}, "action": "delete"}),
        404,
        "not_found",
    )


def test_an_agent_key_cannot_see_a_target_of_another_agent(db, store):
    from memory_admin.models import ApiKey
    from tests.api.conftest import bearer_client

    _, raw = ApiKey.generate(name="a1-key", agent_ids=[AGENT])
    theirs, _ = scope_get_or_create(store=store, key=ScopeKey.group("a2", "g-9"))
    ours, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g-1"))
    body = {"filter": {"scope_id": ours.id}, "action": "move", "target_scope_id": theirs.id}
    assert_error(bulk(bearer_client(raw), body), 404, "not_found")


def test_no_key_is_401(client, world):
    response = bulk(client, {"filter": {"session_id": "s-bad"}, "action": "delete"})
    assert_error(response, 401, "unauthorized")


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "2024-02-30T00:00:00Z"]
)
def test_times_at_the_edges_of_the_calendar_are_4xx_or_match_nothing(api, world, when):
    response = bulk(api, {"filter": {"observed_after": when}, "action": "delete"})
    assert response.status_code in (200, 422), response.content
    if response.status_code == 200:
        assert response.json()["matched"] in (0, 20)
