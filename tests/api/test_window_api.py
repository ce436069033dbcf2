"""The add's kept window through the API (`streams.memory.window`): after an edit or a
delete by the API, on each scope type, the next add compares with what the log holds:
Lisbon contradicts Porto only while Porto is there as it was told."""

from __future__ import annotations

import pytest

from tests.api.conftest import API
from tests.factories import ScopeFactory

OLD, NEW = "Ada lives in Porto.", "Ada lives in Lisbon."
SCOPE_TYPES = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def _add(api, scope_id: str, content: str) -> dict:
    response = api.post(
        f"{API}/scopes/{scope_id}/observations",
        {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def _edit(api, observation_id: str) -> None:
    response = api.patch(
        f"{API}/observations/{observation_id}",
        {"content": "Ada reads poetry at night."},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content


def _delete(api, observation_id: str) -> None:
    assert api.delete(f"{API}/observations/{observation_id}").status_code == 204


@pytest.mark.parametrize("change", [None, "edit", "delete"])
@pytest.mark.parametrize("kind", SCOPE_TYPES)
def test_the_next_add_compares_with_the_log_as_the_api_left_it(api, store, kind, change):
    scope = ScopeFactory.create(store=store, **SCOPE_TYPES[kind])
    porto = _add(api, scope.id, OLD)
    _add(api, scope.id, "Ada plays the cello.")  # the window kept since Porto's add
    if change == "edit":
        _edit(api, porto["id"])
    elif change == "delete":
        _delete(api, porto["id"])

    lisbon = _add(api, scope.id, NEW)
    assert lisbon["contradicts"] == ([porto["id"]] if change is None else [])
