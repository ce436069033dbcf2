"""Every time parameter the OpenAPI document names, walked: a time outside the supported
range (what an ObjectId's seconds hold, 1970-01-01 to 2106-02-07 in UTC; every time query
is an `_id` window) is a 422 naming the field, never a 500 and never a silent answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import API, assert_error

AFTER_2106 = "2106-02-08T00:00:00Z"
BEFORE_1970 = "1969-12-31T23:59:59Z"
INSIDE = ("1970-01-01T00:00:00Z", "2106-02-07T06:28:15Z")


def _time_paths(schema: dict[str, Any], components: dict[str, Any], seen=()) -> list[list]:
    """Where `format: date-time` sits in a schema: paths of keys (0 for a list's item)."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return [] if name in seen else _time_paths(components[name], components, (*seen, name))
    found: list[list] = [[]] if schema.get("format") == "date-time" else []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            found += _time_paths(sub, components, seen)
    for key, sub in schema.get("properties", {}).items():
        found += [[key, *rest] for rest in _time_paths(sub, components, seen)]
    if "items" in schema:
        found += [[0, *rest] for rest in _time_paths(schema["items"], components, seen)]
    return found


def _time_fields(document: dict[str, Any]) -> list[tuple[str, str, str, list]]:
    """(method, path, "query"|"body", field path) for every time the API takes."""
    components = document["components"]["schemas"]
    fields = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if _time_paths(parameter.get("schema", {}), components):
                    fields.append((method, path, "query", [parameter["name"]]))
            body = operation.get("requestBody", {}).get("content", {})
            for content in body.values():
                for where in _time_paths(content["schema"], components):
                    fields.append((method, path, "body", where))
    return fields


def _nest(where: list, value: str) -> Any:
    if not where:
        return value
    head, *rest = where
    return [_nest(rest, value)] if head == 0 else {head: _nest(rest, value)}


def _send(api, method, path, place, where, value):
    if place == "query":
        return api.get(path, {where[0]: value})
    body = json.dumps(_nest(where, value))
    return getattr(api, method)(path, data=body, content_type="application/json")


@pytest.fixture
def ids(api, group_scope_id) -> dict[str, str]:
    response = api.post(
        f"{API}/scopes/{group_scope_id}/observations",
        data={"content": "The team ships on Fridays."},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return {
        "scope_id": group_scope_id,
        "observation_id": response.json()["id"],
        "agent_id": "a1",
        "session_id": "s1",
    }


def test_the_walk_finds_the_times_we_know_of(api):
    fields = _time_fields(api.get(f"{API}/openapi.json").json())
    places = {(method, path.removeprefix(API), place) for method, path, place, _ in fields}
    assert ("get", "/agents/{agent_id}/context-calls", "query") in places
    assert ("get", "/audit", "query") in places
    assert ("post", "/agents/{agent_id}/context", "body") in places
    assert len(fields) >= 12, fields


@pytest.mark.parametrize("value", [AFTER_2106, BEFORE_1970, "9999-12-31T23:59:59Z"])
def test_every_time_outside_the_range_is_422_naming_the_field(api, ids, value):
    fields = _time_fields(api.get(f"{API}/openapi.json").json())
    wrong = []
    for method, path, place, where in fields:
        response = _send(api, method, path.format(**ids), place, where, value)
        if response.status_code != 422:
            wrong.append((method, path, where, response.status_code))
            continue
        error = assert_error(response, 422, "validation_error")
        named = [d for d in error["details"] if str(where[-1]) in json.dumps(d)]
        if not named or "2106" not in json.dumps(named):
            wrong.append((method, path, where, error["details"]))
    assert not wrong, wrong


def test_the_edges_of_the_range_are_answered(api, ids):
    for value in INSIDE:
        for since in ("since",):
            response = api.get(f"{API}/agents/a1/context-calls", {since: value})
            assert response.status_code == 200, response.content
        response = api.get(f"{API}/audit", {"since": value})
        assert response.status_code == 200, response.content


@pytest.mark.parametrize("since", [AFTER_2106, BEFORE_1970])
def test_context_calls_since_past_the_range_is_422(api, since):
    """The probe's finding: this was a 500 (ObjectId.from_datetime overflows)."""
    response = api.get(f"{API}/agents/a1/context-calls", {"since": since})
    assert_error(response, 422, "validation_error")
