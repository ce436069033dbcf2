"""Scopes: list with filters and cursor pages, explicit creation (201, then 409), one scope."""

from __future__ import annotations

import pytest

from streams.prompts import resolve_template
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory

SCOPE_FIELDS = {
    "id", "agent_id", "scope_type", "user_id", "group_id", "name", "display_name", "is_active",
    "needs_rebuild",
    "consolidation", "consolidation_version", "consolidation_updated_at", "pending_count",
    "observation_count", "consolidation_threshold", "consolidation_max_words",
    "extraction_prompt", "consolidation_prompt", "propagation_prompt", "created_at",
    "last_activity_at", "pins", "questions", "review_mode", "max_observations", "retention_purged",
    "consolidate_after_days", "item_words", "item_cap", "consolidation_model", "propagation_model",
}  # fmt: skip


def post_json(client, path: str, body: object):
    return client.post(API + path, body, content_type="application/json")


def test_get_scope_has_exactly_the_documented_fields(api, store):
    scope = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    ObservationFactory.create_batch(2, store=store, scope=scope)
    body = api.get(f"{API}/scopes/{scope.id}").json()
    assert set(body) == SCOPE_FIELDS
    assert body["id"] == scope.id
    assert (body["scope_type"], body["user_id"], body["display_name"]) == (
        "individual",
        "u1",
        "Gene",
    )
    assert (body["pending_count"], body["observation_count"]) == (2, 2)
    assert body["created_at"].endswith(("Z", "+00:00"))


def test_list_scopes_of_an_agent_newest_first(api, store):
    first = ScopeFactory.create(store=store)
    second = ScopeFactory.create(store=store, group=True)
    ScopeFactory.create(store=store, agent_id="agent-2")
    body = api.get(f"{API}/agents/agent-1/scopes").json()
    assert [s["id"] for s in body["items"]] == [second.id, first.id]
    assert body["next_cursor"] is None


def test_list_scopes_of_an_unknown_agent_is_empty(api):
    assert api.get(f"{API}/agents/nobody/scopes").json() == {"items": [], "next_cursor": None}


def test_list_scopes_filters(api, store):
    individual = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    group = ScopeFactory.create(store=store, group=True, group_id="g1", display_name="Eden Team")
    shard = ScopeFactory.create(store=store, shard=True, name="feedback")

    def ids(query: str) -> list[str]:
        return [s["id"] for s in api.get(f"{API}/agents/agent-1/scopes?{query}").json()["items"]]

    assert ids("scope_type=group") == [group.id]
    assert ids("scope_type=collective") == [shard.id]
    assert ids("user_id=u1") == [individual.id]
    assert ids("group_id=g1") == [group.id]
    assert ids("q=eden") == [group.id]


def test_list_scopes_takes_shard(api, store):
    """Issue 40: the scope filter takes `shard`: every named shard, or one by its name."""
    collective = ScopeFactory.create(store=store, collective=True)
    feedback = ScopeFactory.create(store=store, shard=True, name="feedback")
    issues = ScopeFactory.create(store=store, shard=True, name="known-issues")
    ScopeFactory.create(store=store, user_id="u1")

    def listed(query: str) -> list[tuple[str, str | None]]:
        response = api.get(f"{API}/agents/agent-1/scopes?{query}")
        assert response.status_code == 200, response.content
        return [(s["id"], s["name"]) for s in response.json()["items"]]

    assert listed("scope_type=shard") == [(issues.id, "known-issues"), (feedback.id, "feedback")]
    assert listed("shard=feedback") == [(feedback.id, "feedback")]  # the answer names it
    assert listed("shard=nothing-here") == []
    assert collective.id in [i for i, _ in listed("scope_type=collective")]
    assert_error(
        api.get(f"{API}/agents/agent-1/scopes?shard=feedback&user_id=u1"), 422, "validation_error"
    )


def test_cursor_pagination_walks_every_page_once(api, store):
    created = {ScopeFactory.create(store=store).id for _ in range(7)}
    seen: list[str] = []
    url = f"{API}/agents/agent-1/scopes?limit=3"
    pages = 0
    while True:
        body = api.get(url).json()
        pages += 1
        assert len(body["items"]) <= 3
        seen += [s["id"] for s in body["items"]]
        if body["next_cursor"] is None:
            break
        url = f"{API}/agents/agent-1/scopes?limit=3&cursor={body['next_cursor']}"
    assert pages == 3
    assert len(seen) == len(set(seen)) == 7 and set(seen) == created


@pytest.mark.parametrize("limit", ["0", "500", "-1", "many"])
def test_limit_out_of_range_is_422(api, limit):
    error = assert_error(
        api.get(f"{API}/agents/agent-1/scopes?limit={limit}"), 422, "validation_error"
    )
    assert [d["field"] for d in error["details"]] == ["limit"]
    assert all(d["message"] for d in error["details"])


@pytest.mark.parametrize("cursor", ["garbage!", "eyJ4IjoxfQ", "eyJiZWZvcmUiOi0xfQ"])
def test_malformed_cursor_is_422(api, store, cursor):
    ScopeFactory.create(store=store)
    error = assert_error(
        api.get(f"{API}/agents/agent-1/scopes?cursor={cursor}"), 422, "validation_error"
    )
    assert error["details"][0]["field"] == "cursor"


def test_external_ids_longer_than_128_are_422(api):
    long_id = "a" * 129
    error = assert_error(api.get(f"{API}/agents/{long_id}/scopes"), 422, "validation_error")
    assert error["details"][0]["field"] == "agent_id"
    assert api.get(f"{API}/agents/{'a' * 128}/scopes").status_code == 200
    error = assert_error(
        post_json(api, "/agents/a1/scopes", {"scope_type": "group", "group_id": long_id}),
        422,
        "validation_error",
    )
    assert error["details"][0]["field"] == "group_id"


def test_create_group_scope_201_then_409(api):
    body = {"scope_type": "group", "group_id": "g1", "display_name": "Eden Team"}
    response = post_json(api, "/agents/agent-1/scopes", body)
    assert response.status_code == 201
    created = response.json()
    assert set(created) == SCOPE_FIELDS
    assert (created["scope_type"], created["group_id"]) == ("group", "g1")
    assert created["display_name"] == "Eden Team"
    assert api.get(f"{API}/scopes/{created['id']}").json() == created
    error = assert_error(post_json(api, "/agents/agent-1/scopes", body), 409, "conflict")
    assert error["details"] == {"scope_id": created["id"]}


def test_create_collective_shard(api):
    body = {"scope_type": "collective", "name": "feedback", "extraction_prompt": "Product ideas"}
    response = post_json(api, "/agents/agent-1/scopes", body)
    assert response.status_code == 201
    shard = response.json()
    assert (shard["scope_type"], shard["name"]) == ("collective", "feedback")
    assert shard["extraction_prompt"] == "Product ideas"
    assert shard["display_name"] == "feedback"
    assert_error(post_json(api, "/agents/agent-1/scopes", body), 409, "conflict")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_type": "group", "group_id": "g1", "colour": "red"}, "colour"),
        ({"scope_type": "group"}, "group_id"),
        ({"scope_type": "individual", "user_id": "u1"}, "scope_type"),
        ({"scope_type": "collective", "name": "f", "display_name": "x"}, "display_name"),
        ({"group_id": "g1"}, "scope_type"),
        ([], "body"),
    ],
    ids=["unknown-field", "missing-group-id", "individual", "shard-extra", "no-type", "not-object"],
)
def test_invalid_scope_create_is_422_with_details(api, body, field):
    error = assert_error(post_json(api, "/agents/agent-1/scopes", body), 422, "validation_error")
    assert error["details"], error
    assert all(set(d) == {"field", "message"} for d in error["details"])
    assert [d["field"] for d in error["details"]] == [field]


def test_patch_sets_every_prompt_the_ui_can_set(api, store):
    group = ScopeFactory.create(store=store, scope_type="group", user_id=None, group_id="g1")
    template = 'Share {observations} with {targets}? JSON {{"observations": []}}'
    body = api.patch(
        f"{API}/scopes/{group.id}",
        {"propagation_prompt": template, "extraction_prompt": "Only team release dates."},
        content_type="application/json",
    ).json()
    assert body["propagation_prompt"] == template
    assert body["extraction_prompt"] == "Only team release dates."
    part = resolve_template(store=store, agent_id=group.agent_id, kind="propagation", scope=group)
    assert (part.source, part.version, part.text) == ("scope", 1, template)
    # Group extraction text is guidance: a template there is refused, naming the field.
    refused = api.patch(
        f"{API}/scopes/{group.id}",
        {"extraction_prompt": "Extract {conversation}"},
        content_type="application/json",
    )
    assert assert_error(refused, 422, "validation_error")["details"][0]["field"] == (
        "extraction_prompt"
    )
    collective = ScopeFactory.create(store=store, scope_type="collective", user_id=None)
    no_propagation = api.patch(
        f"{API}/scopes/{collective.id}",
        {"propagation_prompt": template},
        content_type="application/json",
    )
    assert "does not propagate" in assert_error(no_propagation, 422, "validation_error")["message"]
