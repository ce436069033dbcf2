"""The OpenAPI document and the browsable docs are served, and document the error envelope."""

from __future__ import annotations

import json

from django.test import Client

from tests.api.conftest import API


def test_openapi_document_is_served(db):
    response = Client().get(f"{API}/openapi.json")
    assert response.status_code == 200
    document = response.json()
    paths = document["paths"]
    assert {
        f"{API}/health",
        f"{API}/agents/{{agent_id}}/scopes",
        f"{API}/scopes/{{scope_id}}",
        f"{API}/scopes/{{scope_id}}/observations",
        f"{API}/observations/{{observation_id}}",
        f"{API}/agents/{{agent_id}}/sessions/{{session_id}}/messages",
        f"{API}/agents/{{agent_id}}/sessions/{{session_id}}/form",
        f"{API}/scopes/{{scope_id}}/consolidations",
        f"{API}/scopes/{{scope_id}}/consolidations/{{version}}/restore",
        f"{API}/scopes/{{scope_id}}/consolidate",
        f"{API}/jobs/{{job_id}}",
    } <= set(paths)
    assert {"get", "patch", "delete"} <= set(paths[f"{API}/observations/{{observation_id}}"])
    assert "patch" in paths[f"{API}/scopes/{{scope_id}}"]
    assert "409" in paths[f"{API}/scopes/{{scope_id}}"]["patch"]["responses"]
    assert "ErrorOut" in document["components"]["schemas"]
    assert "401" in paths[f"{API}/scopes/{{scope_id}}"]["get"]["responses"]
    assert "security" not in paths[f"{API}/health"]["get"]


def test_docs_page_is_served_without_login(db):
    response = Client().get(f"{API}/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """`json.loads` keeps the last of two equal keys silently; Swagger's parser refuses them."""
    seen: dict[str, object] = {}
    for key, value in pairs:
        assert key not in seen, f"duplicated mapping key {key!r}"
        seen[key] = value
    return seen


def test_openapi_document_has_no_duplicated_keys(db):
    response = Client().get(f"{API}/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.content, object_pairs_hook=_no_duplicate_keys)
    statuses = document["paths"][f"{API}/scopes/{{scope_id}}"]["get"]["responses"]
    assert {"200", "401", "404", "422", "503"} <= set(statuses)
    assert statuses["503"]["headers"]["Retry-After"]  # the common entry, added once
