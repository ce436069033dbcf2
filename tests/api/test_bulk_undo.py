"""`POST /bulk/{job_id}/undo` (a bulk action taken back within MEMORY_BULK_UNDO_SECONDS, one
job, one rebuild per scope) and `GET /agents/{id}/unused` with the bulk filter `unused_days`,
in all four scope types; the bad input."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.core.documents import utcnow
from tests.api.conftest import API, assert_error

# The fixtures `world` (two users, a group, the collective and a shard) and `offline_llm`.
from tests.api.test_bulk import AGENT, bulk, offline_llm, world  # noqa: F401
from tests.task_mode import settle

JSON = "application/json"
SCOPES = ("alice", "bob", "group", "collective", "shard")


def _live_texts(api, scope_id: str) -> list[str]:
    items = api.get(f"{API}/scopes/{scope_id}/observations", {"status": "all"}).json()["items"]
    return sorted(o["content"] for o in items)


def _run_bulk(api, store, run_tasks, body) -> str:
    with run_tasks():
        response = bulk(api, {**body, "dry_run": False})
    settle(store)
    assert response.status_code == 200, response.content
    return response.json()["job_id"]


def _undo(api, store, run_tasks, job_id: str):
    with run_tasks():
        response = api.post(f"{API}/bulk/{job_id}/undo", content_type=JSON)
    settle(store)
    return response


def test_an_undone_delete_restores_every_scope_type_once_then_409(api, store, world, run_tasks):  # noqa: F811
    before = {name: _live_texts(api, getattr(world, name).id) for name in SCOPES}
    job_id = _run_bulk(
        api, store, run_tasks, {"filter": {"session_id": "s-bad"}, "action": "delete"}
    )
    assert all("walruses" not in " ".join(_live_texts(api, getattr(world, n).id)) for n in SCOPES)

    response = _undo(api, store, run_tasks, job_id)
    assert response.status_code == 202, response.content
    undo = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert (undo["kind"], undo["status"]) == ("bulk_undo", "succeeded")
    assert undo["result"]["undone"] == 15
    for name in SCOPES:  # the same texts, live once more (new ids, the old ones stay deleted)
        assert _live_texts(api, getattr(world, name).id) == before[name]
    [entry] = list(store.audit.collection.find({"action": "observation.bulk_undo"}).limit(5))
    assert entry["object_id"] == job_id and entry["summary"]["count"] == 15

    assert_error(api.post(f"{API}/bulk/{job_id}/undo", content_type=JSON), 409, "undo_unavailable")


def test_an_undone_delete_leaves_a_forgotten_user_forgotten(api, store, world, run_tasks):  # noqa: F811
    job_id = _run_bulk(
        api,
        store,
        run_tasks,
        {"filter": {"scope_id": world.alice.id, "q": "junk"}, "action": "delete"},
    )
    with run_tasks():
        assert api.delete(f"{API}/agents/{AGENT}/users/alice").status_code == 202
    settle(store)
    response = _undo(api, store, run_tasks, job_id)
    assert response.status_code == 202, response.content
    undo = api.get(f"{API}/jobs/{response.json()['job_id']}").json()
    assert undo["status"] == "succeeded" and undo["result"]["undone"] == 0
    docs = store.observations.collection.find({"scope_id": ObjectId(world.alice.id)}).limit(50)
    assert not [d for d in docs if "junk" in d["content"] and d.get("deleted_at") is None]


def test_an_undone_move_moves_back_and_an_undone_private_flips_back(api, store, world, run_tasks):  # noqa: F811
    moved = _run_bulk(
        api, store, run_tasks,
        {"filter": {"scope_id": world.group.id, "q": "walruses"}, "action": "move",
         "target_scope_id": world.shard.id},
    )  # fmt: skip
    assert sum("group junk" in t for t in _live_texts(api, world.shard.id)) == 3
    assert _undo(api, store, run_tasks, moved).status_code == 202
    assert sum("group junk" in t for t in _live_texts(api, world.group.id)) == 3
    assert not any("group junk" in t for t in _live_texts(api, world.shard.id))

    private = _run_bulk(
        api, store, run_tasks, {"filter": {"scope_id": world.collective.id}, "action": "private"}
    )
    assert _undo(api, store, run_tasks, private).status_code == 202
    items = api.get(f"{API}/scopes/{world.collective.id}/observations").json()["items"]
    assert items and not any(o["private"] for o in items)
    undo = store.jobs.collection.find_one({"kind": "bulk_undo", "payload.bulk_job_id": private})
    # The absorbed ones went back to pending (their text was rebuilt out): no rebuild.
    assert undo["result"]["rebuild_scope_ids"] == []
    scope = store.scopes.get(ObjectId(world.collective.id))
    assert len(scope.pending_observation_ids) == 4  # kept, junk 0 back; junk 1, 2 waited


def test_undo_bad_input_and_the_window(api, store, world, run_tasks, settings):  # noqa: F811
    assert_error(api.post(f"{API}/bulk/{ObjectId()}/undo", content_type=JSON), 404, "not_found")
    assert_error(api.post(f"{API}/bulk/not-an-id/undo", content_type=JSON), 404, "not_found")
    job_id = _run_bulk(
        api, store, run_tasks, {"filter": {"session_id": "s-bad"}, "action": "delete"}
    )
    store.jobs.collection.update_one(
        {"_id": ObjectId(job_id)}, {"$set": {"finished_at": utcnow() - timedelta(seconds=901)}}
    )
    assert_error(api.post(f"{API}/bulk/{job_id}/undo", content_type=JSON), 409, "undo_expired")
    rebuild = store.jobs.collection.find_one({"kind": "rebuild"})
    assert_error(api.post(f"{API}/bulk/{rebuild['_id']}/undo", content_type=JSON), 404, "not_found")


def test_unused_report_and_filter(api, store, world):  # noqa: F811
    old = utcnow() - timedelta(days=40)
    for name in SCOPES:
        store.observations.collection.update_many(
            {"scope_id": ObjectId(getattr(world, name).id)}, {"$set": {"created_at": old}}
        )
    recently = utcnow() - timedelta(days=2)
    store.observations.collection.update_one(
        {"_id": ObjectId(world.good[2].id)},  # the group's kept fact, retrieved two days ago
        {"$set": {"last_accessed_at": recently, "access_count": 1}},
    )
    report = api.get(f"{API}/agents/{AGENT}/unused", {"days": 30})
    assert report.status_code == 200, report.content
    rows = {r["scope"]["id"]: r for r in report.json()["items"]}
    assert report.json()["days"] == 30
    assert {sid: r["unused"] for sid, r in rows.items()} == {
        world.alice.id: 4, world.bob.id: 4, world.group.id: 3, world.collective.id: 4,
        world.shard.id: 4,
    }  # fmt: skip
    assert rows[world.group.id]["scope"]["scope_type"] == "group"
    page = api.get(f"{API}/agents/{AGENT}/unused", {"days": 30, "limit": 2}).json()
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = api.get(f"{API}/agents/{AGENT}/unused", {"days": 30, "cursor": page["next_cursor"]})
    assert len(rest.json()["items"]) == 3

    listed = api.get(f"{API}/scopes/{world.group.id}/observations", {"unused_days": 30})
    assert len(listed.json()["items"]) == 3
    assert world.good[2].id not in {o["id"] for o in listed.json()["items"]}
    matched = bulk(
        api, {"filter": {"scope_id": world.group.id, "unused_days": 30}, "action": "delete"}
    )
    assert matched.json()["matched"] == 3
    assert bulk(api, {"filter": {"unused_days": 30}, "action": "delete"}).json()["matched"] == 19
    assert bulk(api, {"filter": {"unused_days": 60}, "action": "delete"}).json()["matched"] == 0


@pytest.mark.parametrize("days", ["0", "-3", "2.5", "many", "3651"])
def test_unused_bad_days(api, world, days):  # noqa: F811
    assert_error(api.get(f"{API}/agents/{AGENT}/unused", {"days": days}), 422, "validation_error")
    listed = api.get(f"{API}/scopes/{world.group.id}/observations", {"unused_days": days})
    assert_error(listed, 422, "validation_error")
    body = {"filter": {"unused_days": days if not days.lstrip("-").isdigit() else int(days)},
            "action": "delete"}  # fmt: skip
    assert_error(bulk(api, body), 422, "validation_error")


def test_unused_of_an_unknown_agent_is_404(api, world):  # noqa: F811
    assert_error(api.get(f"{API}/agents/nobody/unused", {"days": 7}), 404, "not_found")


@pytest.mark.parametrize("name", ["alice", "group", "collective", "shard"])
def test_an_undone_private_puts_the_text_back_in_the_memory(api, store, world, run_tasks, name):  # noqa: F811
    """Marking private rebuilt the memory without the text; its undo puts the observation
    back to pending, and the next consolidation states it again."""
    scope_id = getattr(world, name).id
    kept = f"{name} kept fact about zebras"
    private = _run_bulk(
        api,
        store,
        run_tasks,
        {"filter": {"scope_id": scope_id, "q": "zebras"}, "action": "private"},
    )
    memory = api.get(f"{API}/scopes/{scope_id}").json()["consolidation"] or ""
    assert "zebras" not in memory
    assert _undo(api, store, run_tasks, private).status_code == 202
    pending = store.scopes.get(ObjectId(scope_id)).pending_observation_ids
    [back] = [o.id for o in world.good if o.scope_id == scope_id]
    assert back in pending
    with run_tasks():
        response = api.post(f"{API}/scopes/{scope_id}/consolidate", content_type=JSON)
    settle(store)
    assert response.status_code == 202, response.content
    scope = api.get(f"{API}/scopes/{scope_id}").json()
    assert kept in (scope["consolidation"] or "").lower(), scope["consolidation"]
    assert back not in store.scopes.get(ObjectId(scope_id)).pending_observation_ids
