"""Export -> import keeps every held status (issue 26 with issue 25's review): in review,
candidate, rejected (an approved flagged one waits for review again: issue 37), flags,
`similar_to` and supporting groups, across scope types; idempotent by ids; a bad review
field is a 422 naming its item."""

from __future__ import annotations

import copy
import json

import pytest
from bson import ObjectId

from streams.core.documents import Observation, utcnow
from streams.memory.observations import observation_add, observations_append
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error

AGENT = "a1"
JSON = "application/json"
PHONE = "Call the {name} on-call line on +1 415 555 2671."
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
KEEP = ("id", "content", "status", "private", "flags", "similar_to", "review",
        "related_user_ids", "source_message_ids", "propagated_from", "observed_at")  # fmt: skip


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def post(client, path, body):
    return client.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def _candidate(store: MemoryStore, scope_id: str, group_id: str) -> Observation:
    """A collective copy waiting for more groups, written as propagation writes it."""
    now = utcnow()
    copy_ = Observation(
        scope_id=scope_id,
        agent_id=AGENT,
        content=f"Exports need admin rights ({group_id}).",
        related_user_ids=["bob"],
        propagated_from=str(ObjectId()),
        review_status="candidate",
        review={"reasons": ["needs_more_groups"], "since": now, "supporting_group_ids": [group_id]},
    )
    store.in_transaction(
        lambda s: observations_append(
            store=store, scope_id=scope_id, observations=[copy_], session=s, now=now,
            origin="propagation",
        )
    )  # fmt: skip
    return copy_


def _world(api, store: MemoryStore) -> dict[str, str]:
    """Per scope type: pending, a near duplicate (`similar_to`), held by the scope's review
    mode (in review), rejected with a note; in shared scopes a flagged one approved by a
    person (pending with flags), and in the collective a candidate with supporting groups."""
    keys = {
        "alice": ScopeKey.individual(AGENT, "alice"),
        "group": ScopeKey.group(AGENT, "g-1"),
        "collective": ScopeKey.collective(AGENT),
        "shard": ScopeKey.collective(AGENT, "billing"),
    }
    ids = {}
    for name, key in keys.items():
        scope, _ = scope_get_or_create(store=store, key=key, display_name=f"The {name}")
        add = dict(store=store, source_session_id="s-1", related_user_ids=["alice", "bob"])
        observation_add(scope=scope, content=f"{name} {WORDS}", **add)
        near = observation_add(scope=scope_get(store=store, scope_id=scope.id),
                               content=f"{name} {WORDS} lambda", **add)  # fmt: skip
        assert near.similar_to is not None
        if name != "alice":
            flagged = observation_add(
                scope=scope_get(store=store, scope_id=scope.id),
                content=PHONE.format(name=name), **add,
            )  # fmt: skip
            assert flagged.status == "in_review"
            approved = post(api, f"/observations/{flagged.id}/review", {"decision": "approve"})
            assert approved.json()["status"] == "pending", approved.content
        store.scopes.update_fields(ObjectId(scope.id), {"review_mode": "all"})
        held = [
            observation_add(scope=scope_get(store=store, scope_id=scope.id),
                            content=f"{name} held fact {i}.", actor="api:k", **add)
            for i in range(2)
        ]  # fmt: skip
        assert [o.status for o in held] == ["in_review", "in_review"]
        rejected = post(
            api, f"/observations/{held[1].id}/review", {"decision": "reject", "note": "wrong"}
        )
        assert rejected.json()["status"] == "rejected"
        if name == "collective":
            _candidate(store, scope.id, "g-1")
            store.observations.push_supporting_group(
                ObjectId(_candidate(store, scope.id, "g-2").id), "g-3"
            )
        ids[name] = scope.id
    return ids


def _state(api, scope_id: str) -> dict:
    scope = api.get(f"{API}/scopes/{scope_id}").json()
    items = api.get(f"{API}/scopes/{scope_id}/observations?limit=100&status=all").json()["items"]
    return {
        "scope": {k: scope[k] for k in ("id", "scope_type", "pending_count", "consolidation")},
        "observations": sorted(({k: o[k] for k in KEEP} for o in items), key=lambda o: o["id"]),
    }


def _fresh_database(settings, embedded_mongo, store):
    from memory_admin.stores import indexes_ensured

    name = settings.MONGODB_DB + "_fresh"
    settings.MONGODB_DB = name
    fresh = MemoryStore(store.client, name)
    fresh.ensure_indexes()
    indexes_ensured(embedded_mongo.uri, name)
    return fresh


def test_every_status_survives_the_round_trip(api, store, settings, embedded_mongo):
    ids = _world(api, store)
    before = {name: _state(api, scope_id) for name, scope_id in ids.items()}
    statuses = {o["status"] for state in before.values() for o in state["observations"]}
    assert statuses == {"pending", "in_review", "rejected", "candidate"}
    exports = {name: api.get(f"{API}/scopes/{i}/export").json() for name, i in ids.items()}
    [candidate] = [
        o for o in exports["collective"]["scopes"][0]["observations"]
        if "g-2" in ((o["review"] or {}).get("supporting_group_ids") or [])
    ]  # fmt: skip
    assert candidate["status"] == "candidate"
    assert candidate["review"]["supporting_group_ids"] == ["g-2", "g-3"]
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        for name in ids:
            response = post(api, f"/agents/{AGENT}/import", exports[name])
            assert response.status_code == 200, response.content
            assert response.json()["observations_imported"] == len(before[name]["observations"])
        after = {name: _state(api, scope_id) for name, scope_id in ids.items()}
        # Import re-derives every status (issue 37): a person's approval in the document
        # is a claim, so the flagged item of each shared scope waits for review again.
        expected = copy.deepcopy(before)
        for name in ("group", "collective", "shard"):
            [flagged] = [o for o in expected[name]["observations"] if o["flags"] == ["pii:phone"]]
            [held] = [o for o in after[name]["observations"] if o["id"] == flagged["id"]]
            assert held["status"] == "in_review"
            assert held["review"]["reasons"] == ["flag:pii:phone"]
            flagged.update(status="in_review", review=held["review"])
            expected[name]["scope"]["pending_count"] -= 1
        assert after == expected
        queue = api.get(f"{API}/agents/{AGENT}/review?limit=50").json()["items"]
        assert len(queue) == 4 + 3  # one in review per scope, and the re-held flagged ones
        for name in ids:  # idempotent by ids
            again = post(api, f"/agents/{AGENT}/import", exports[name]).json()
            assert again["observations_imported"] == 0
        assert {n: _state(api, i) for n, i in ids.items()} == expected
    finally:
        fresh.client.drop_database(fresh.db.name)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda o: o.update(status="in_review", review=None), "review"),
        (lambda o: o.update(flags=["pii:shoe-size"]), "flags"),
        (lambda o: o.update(similar_to="not-an-id"), "similar_to"),
        (lambda o: o.update(status="rejected", review={"decision": "maybe"}), "review"),
        (
            lambda o: o.update(status="candidate", review={"since": "2026-01-01T00:00:00+00:00"}),
            "review",
        ),  # fmt: skip
        (lambda o: o.update(review={"reasons": ["x" * 300]}), "review"),
        (lambda o: o.update(review={"since": "yesterday"}), "review"),
        (lambda o: o.update(review={"surprise": 1}), "review"),
        (lambda o: o.update(contradicts=["nope"]), "contradicts"),
        (lambda o: o.update(expires_at="soon"), "expires_at"),
        (lambda o: o.update(status="archived"), "status"),
    ],
)
def test_a_bad_review_field_is_a_422_for_its_item_and_stores_nothing(
    api, store, settings, embedded_mongo, change, field
):
    ids = _world(api, store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        bad = copy.deepcopy(document)
        item = bad["scopes"][0]["observations"][2]
        del item["digest"]  # a hand-made item: checked field by field
        change(item)
        error = assert_error(post(api, f"/agents/{AGENT}/import", bad), 422, "validation_error")
        assert {(d["item"], d.get("field")) for d in error["details"]} == {
            ("scopes[0].observations[2]", field)
        }
        assert error["details"][0]["id"] == item["id"]
        assert api.get(f"{API}/scopes/{ids['group']}").status_code == 404  # nothing stored
    finally:
        fresh.client.drop_database(fresh.db.name)


def test_an_unapproved_flagged_pending_item_is_held_on_import(api, store, settings, embedded_mongo):
    """A hand-made pending item whose text the detectors flag, in a shared scope, with no
    person's approval: it waits for review like any other write of it."""
    ids = _world(api, store)
    document = api.get(f"{API}/scopes/{ids['group']}/export").json()
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        items = document["scopes"][0]["observations"]
        approved = next(o for o in items if o["flags"] == ["pii:phone"])
        assert approved["status"] == "pending" and approved["review"]["decision"] == "approve"
        del approved["digest"]
        approved["review"] = None
        assert post(api, f"/agents/{AGENT}/import", document).status_code == 200
        stored = api.get(f"{API}/observations/{approved['id']}").json()
        assert stored["status"] == "in_review" and stored["review"]["reasons"] == ["flag:pii:phone"]
    finally:
        fresh.client.drop_database(fresh.db.name)
