"""Every input time, at the edge of the calendar: a zone shift past year 9999 (or
before year 1) is a 422 naming the field and the supported range, on every endpoint
that takes a time (`test_time_range.py` walks the OpenAPI for the range's own edges)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import API, assert_error

PAST_9999 = "9999-12-31T23:59:59-05:00"  # year 10000 in UTC
BEFORE_1 = "0001-01-01T00:00:00+05:00"  # year 0 in UTC


@pytest.fixture
def scope_id(group_scope_id: str) -> str:
    return group_scope_id


@pytest.fixture
def observation_id(api, scope_id) -> str:
    response = api.post(
        f"{API}/scopes/{scope_id}/observations",
        data={"content": "The team ships on Fridays."},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _send(api, method: str, path: str, body: dict[str, Any] | None, query: dict[str, str]):
    if method == "GET":
        return api.get(path, query)
    data = json.dumps(body)
    return getattr(api, method.lower())(path, data=data, content_type="application/json")


CASES = [
    ("POST", "/scopes/{scope_id}/observations", {"content": "F.", "observed_at": "{t}"}, {}),
    ("POST", "/scopes/{scope_id}/observations", {"content": "F.", "expires_at": "{t}"}, {}),
    (
        "POST",
        "/scopes/{scope_id}/observations",
        {"items": [{"content": "F.", "observed_at": "{t}"}]},
        {},
    ),
    ("PATCH", "/observations/{observation_id}", {"expires_at": "{t}"}, {}),
    (
        "POST",
        "/agents/a1/sessions/s1/messages",
        {
            "user_id": "u1",
            "messages": [{"id": "m1", "role": "user", "content": "Hi.", "created_at": "{t}"}],
        },
        {},
    ),
    ("POST", "/agents/a1/context", {"user_id": "u1", "message": "hi", "as_of": "{t}"}, {}),
    ("GET", "/agents/a1/context-calls", None, {"since": "{t}"}),
    ("GET", "/agents/a1/search", None, {"q": "fridays", "observed_after": "{t}"}),
    (
        "POST",
        "/agents/a1/observations/bulk",
        {"filter": {"observed_before": "{t}"}, "action": "delete"},
        {},
    ),
]


def _fill(value: Any, when: str) -> Any:
    return json.loads(json.dumps(value).replace("{t}", when)) if value is not None else None


@pytest.mark.parametrize("when", [PAST_9999, BEFORE_1])
@pytest.mark.parametrize(("method", "path", "body", "query"), CASES)
def test_a_time_outside_the_calendar_in_utc_is_422(
    api, scope_id, observation_id, when, method, path, body, query
):
    url = API + path.format(scope_id=scope_id, observation_id=observation_id)
    response = _send(api, method, url, _fill(body, when), _fill(query, when))
    error = assert_error(response, 422, "validation_error")
    assert "2106-02-07" in json.dumps(error), error
