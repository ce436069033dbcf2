"""One way in, as a matrix (issue 37): each write path that puts text into a scope x the
four scope types; after the write, no surface holds the secret it carried (context,
search, the consolidation's text and pins, the scope's observations) and, in a shared
scope, no surface an unrelated member reaches shows the email it carried."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API

AGENT = "a1"
JSON = "application/json"
SK = "sk-proj-abcdefghijklmnopqrstuvwx123"
EMAIL = "gene@example.com"
TEXT = f"Deploy invoices with token {SK} and write to {EMAIL}."
KEYS = {
    "individual": ScopeKey.individual(AGENT, "alice"),
    "group": ScopeKey.group(AGENT, "g-1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "billing"),
}


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def post(api: Any, path: str, body: Any) -> Any:
    return api.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def _add(api, store, scope_id):
    return post(api, f"/scopes/{scope_id}/observations", {"content": TEXT})


def _batch(api, store, scope_id):
    return post(
        api, f"/scopes/{scope_id}/observations", {"items": [{"content": TEXT, "client_id": "c-1"}]}
    )


def _pin(api, store, scope_id):
    return api.put(f"{API}/scopes/{scope_id}/pins", {"pins": [TEXT]}, content_type=JSON)


def _hand_edit(api, store, scope_id):
    body = {"consolidation": TEXT, "expected_version": 0}
    return api.patch(f"{API}/scopes/{scope_id}", body, content_type=JSON)


def _edit(api, store, scope_id):
    scope = scope_get(store=store, scope_id=scope_id)
    before = observation_add(store=store, scope=scope, content="Invoices go out monthly.")
    return api.patch(f"{API}/observations/{before.id}", {"content": TEXT}, content_type=JSON)


def _move(api, store, scope_id):
    source_key = (
        KEYS["collective"] if scope_id == _scope(store, "individual") else KEYS["individual"]
    )
    source, _ = scope_get_or_create(store=store, key=source_key, display_name="source")
    observation_add(store=store, scope=source, content=TEXT)
    body = {"filter": {"scope_id": source.id}, "action": "move", "target_scope_id": scope_id,
            "dry_run": False}  # fmt: skip
    return post(api, f"/agents/{AGENT}/observations/bulk", body)


def _import(api, store, scope_id):
    scope = scope_get(store=store, scope_id=scope_id)
    observation_add(store=store, scope=scope, content="Invoices go out monthly.")
    document = api.get(f"{API}/scopes/{scope_id}/export").json()
    [item] = document["scopes"][0]["observations"]
    new = copy.deepcopy(item)
    new.pop("digest", None)
    new.update(id=str(ObjectId()), content=TEXT, status="consolidated")
    document["scopes"][0]["observations"].append(new)
    return post(api, f"/agents/{AGENT}/import", document)


PATHS: dict[str, Callable[..., Any]] = {
    "add": _add,
    "batch": _batch,
    "pin": _pin,
    "hand_edit": _hand_edit,
    "edit": _edit,
    "move": _move,
    "import": _import,
}
REFUSED = {"pin", "hand_edit"}  # in a shared scope: 422 flagged (the email)


def _scope(store: MemoryStore, kind: str) -> str:
    scope, _ = scope_get_or_create(store=store, key=KEYS[kind], display_name=f"The {kind}")
    return scope.id


def _surfaces(api, store, scope_id: str, user: str) -> dict[str, str]:
    """What each surface shows of the scope, as text."""
    context = post(
        api,
        f"/agents/{AGENT}/context",
        {"user_id": user, "groups": [{"id": "g-1"}], "message": "How do we deploy invoices?"},
    )
    assert context.status_code == 200, context.content
    query = {"q": "deploy invoices token", "scope_id": scope_id, "limit": 50}
    if user == "alice":
        query["user_id"] = "alice"
    search = api.get(f"{API}/agents/{AGENT}/search", query)
    assert search.status_code == 200, search.content
    scope = scope_get(store=store, scope_id=scope_id)
    return {
        "context": context.json()["context"],
        "search": search.content.decode(),
        "consolidation": json.dumps([scope.consolidation, scope.pins]),
    }


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("path", list(PATHS))
def test_no_surface_shows_a_secret_or_a_shared_scope_s_unreviewed_email(
    api, store, run_tasks, path, kind
):
    scope_id = _scope(store, kind)
    shared = kind != "individual"
    with run_tasks():
        answer = PATHS[path](api, store, scope_id)
    if shared and path in REFUSED:
        assert answer.status_code == 422 and answer.json()["error"]["code"] == "flagged"
    else:
        assert answer.status_code in (200, 201, 202), answer.content
    listed = api.get(f"{API}/scopes/{scope_id}/observations?limit=100&status=all").json()
    assert SK not in json.dumps(listed)
    reader = "alice" if kind == "individual" else "bob"  # bob: another member
    for surface, shown in _surfaces(api, store, scope_id, reader).items():
        assert SK not in shown, (surface, shown)
        if shared:
            assert EMAIL not in shown, (surface, shown)
