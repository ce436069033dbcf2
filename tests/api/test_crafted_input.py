"""Crafted input from a caller with a valid key: always a 4xx with the envelope, never a 5xx."""

from __future__ import annotations

import base64
import json

import pytest

from streams.core.pagination import CURSOR_PATTERN
from tests.api.conftest import API, assert_error


@pytest.fixture
def scope_id(group_scope_id: str) -> str:
    return group_scope_id


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("version", [2**63, 2**63 + 1, 2**64, 10**30, -1])
def test_expected_version_out_of_range_is_422(api, scope_id, version):
    response = api.patch(
        f"{API}/scopes/{scope_id}",
        data=json.dumps({"consolidation": "Text.", "expected_version": version}),
        content_type="application/json",
    )
    error = assert_error(response, 422, "validation_error")
    assert error["details"][0]["field"] == "expected_version"


CRAFTED_CURSORS = [
    b64(json.dumps({"below": "abc"})),
    b64('{"below": 1e999}'),
    b64(json.dumps({"below": 2**63})),
    b64(json.dumps({"below": 2**70})),
    b64(json.dumps({"below": -5})),
    b64(json.dumps({"below": True})),
    b64(json.dumps({"below": 3, "extra": 1})),
    b64(json.dumps({"before": "zz"})),
    b64(json.dumps([1, 2])),
    b64("not json"),
    base64.b64encode(json.dumps({"below": "abc"}).encode()).decode(),  # padded, standard
    "%%%",
    "a",
    "eyJiZWxvdyI6IDJ9 ",
]


@pytest.mark.parametrize("cursor", CRAFTED_CURSORS)
@pytest.mark.parametrize(
    "path",
    [
        "/scopes/{scope_id}/consolidations",
        "/scopes/{scope_id}/observations",
        "/agents/a1/scopes",
        "/audit",
    ],
)
def test_crafted_cursors_are_refused(api, scope_id, cursor, path):
    response = api.get(API + path.format(scope_id=scope_id), {"cursor": cursor})
    assert response.status_code in (400, 422), response.content
    assert_error(response, response.status_code, "validation_error")


@pytest.mark.parametrize(
    "since",
    [
        "2106-02-08T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
    ],
)
def test_audit_since_past_the_supported_range_is_422(api, since):
    """Issue 44: times outside 1970..2106 (an ObjectId's seconds) are refused, not answered."""
    assert_error(api.get(f"{API}/audit", {"since": since}), 422, "validation_error")


@pytest.mark.parametrize("since", ["1700000000", "1700000000.5", "2024-01-01"])
def test_audit_since_takes_iso_date_times_only(api, since):
    assert_error(api.get(f"{API}/audit", {"since": since}), 422, "validation_error")


def test_a_cursor_a_list_handed_out_still_works(api, scope_id):
    for n in range(3):
        api.post(
            f"{API}/scopes/{scope_id}/observations",
            data={"content": f"Fact {n}."},
            content_type="application/json",
        )
    first = api.get(f"{API}/scopes/{scope_id}/observations", {"limit": 2}).json()
    second = api.get(
        f"{API}/scopes/{scope_id}/observations", {"limit": 2, "cursor": first["next_cursor"]}
    )
    assert second.status_code == 200 and len(second.json()["items"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"content": "Fact.", "observed_at": 1700000000},
        {"content": "Fact.", "observed_at": "1700000000"},
        {"content": "   "},
    ],
)
def test_observation_bodies_the_schema_refuses_are_refused(api, scope_id, body):
    response = api.post(
        f"{API}/scopes/{scope_id}/observations", data=body, content_type="application/json"
    )
    assert_error(response, 422, "validation_error")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/agents/a1/search?q=%20%20%20", None),
        (
            "post",
            "/agents/a1/scopes",
            {"scope_type": "group", "group_id": "g2", "display_name": " "},
        ),
    ],
)
def test_whitespace_only_text_is_refused_as_the_schema_says(api, method, path, body):
    kwargs = {"data": body, "content_type": "application/json"} if body else {}
    response = getattr(api, method)(API + path, **kwargs)
    assert_error(response, 422, "validation_error")


def test_the_openapi_states_the_limits_and_formats(api):
    document = api.get(f"{API}/openapi.json").json()
    text = json.dumps(document)
    assert (
        CURSOR_PATTERN.replace("\\", "\\\\") in text
        or '"pattern": "^[A-Za-z0-9_-]{1,512}$"' in text
    )
    schemas = document["components"]["schemas"]
    version = schemas["ScopePatchIn"]["properties"]["expected_version"]
    version_schema = next(s for s in version.get("anyOf", [version]) if s.get("type") == "integer")
    assert version_schema["maximum"] == 2**53
    content = schemas["ObservationIn"]["properties"]["content"]
    assert content["pattern"] == "\\S"
    observed = schemas["ObservationIn"]["properties"]["observed_at"]
    formats = [s.get("format") for s in observed.get("anyOf", [observed])]
    assert "date-time" in formats
    for path_item in document["paths"].values():
        for operation in path_item.values():
            assert {"422", "503"} <= set(operation["responses"]), operation["operationId"]
