"""Forget stays forgotten (issue 37): forget-user leaves an erasure tombstone; an import of
an export made before, and a late ingest of that user's messages, store nothing of them
and say so (the rest applies); only an admin key lifts it, with a reason, audited."""

from __future__ import annotations

import json

import pytest

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error
from tests.task_mode import settle

AGENT = "a1"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _forget(api, store: MemoryStore, user_id: str, capture) -> dict:
    with capture(execute=True):
        response = api.delete(f"{API}/agents/{AGENT}/users/{user_id}")
    settle(store)
    assert response.status_code == 202
    return api.get(f"{API}/jobs/{response.json()['job_id']}").json()


def _import(api, document: dict):
    return api.post(
        f"{API}/agents/{AGENT}/import", json.dumps(document), content_type="application/json"
    )


def _world(store: MemoryStore) -> dict[str, str]:
    gene, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "gene"))
    ada, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "ada"))
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    for n in range(3):
        observation_add(store=store, scope=gene, content=f"Gene fact {n} about Lisbon.")
    observation_add(store=store, scope=ada, content="Ada likes coffee.")
    observation_add(
        store=store, scope=group, content="Gene runs the demo.", related_user_ids=["gene"]
    )
    observation_add(store=store, scope=group, content="The team ships on Fridays.")
    return {"gene": gene.id, "ada": ada.id, "group": group.id}


def test_reimporting_an_export_made_before_forget_brings_nothing_of_the_user_back(
    api, store: MemoryStore, django_capture_on_commit_callbacks
) -> None:
    ids = _world(store)
    documents = {
        name: api.get(f"{API}/scopes/{scope_id}/export").json() for name, scope_id in ids.items()
    }
    receipt = _forget(api, store, "gene", django_capture_on_commit_callbacks)
    assert receipt["result"]["tombstone"]["blocks"]  # the receipt says what it blocks
    api.delete(f"{API}/scopes/{ids['ada']}")  # gone too, but not forgotten: comes back

    merged = {**documents["gene"], "scopes": [
        *documents["gene"]["scopes"], *documents["group"]["scopes"], *documents["ada"]["scopes"]
    ]}  # fmt: skip
    response = _import(api, merged)

    assert response.status_code == 200, response.content
    result = response.json()
    assert result["refused"] == [{"user_id": "gene", "reason": "forgotten"}]
    assert result["observations_refused"] == 4  # 3 of their own, 1 in the group naming them
    found = api.get(f"{API}/agents/{AGENT}/users/gene/export").json()
    assert not [o for b in found["scopes"] for o in b["observations"]]
    assert (
        store.scopes.find_by_identity(
            agent_id=AGENT, scope_type="individual", user_id="gene", group_id=None, name=None
        )
        is None
    )
    assert "Gene" not in json.dumps(
        api.get(f"{API}/scopes/{ids['group']}/observations?limit=50").json()
    )
    # The rest applies: the group's other fact and Ada are there.
    group_texts = [
        o["content"]
        for o in api.get(f"{API}/scopes/{ids['group']}/observations?limit=50").json()["items"]
    ]
    assert group_texts == ["The team ships on Fridays."]


def test_a_late_ingest_of_a_forgotten_user_stores_nothing_and_says_so(
    api, store: MemoryStore, django_capture_on_commit_callbacks
) -> None:
    _world(store)
    _forget(api, store, "gene", django_capture_on_commit_callbacks)
    body = {
        "user_id": "gene",
        "user_name": "Gene Wilder",
        "messages": [{"id": "m-late", "role": "user", "content": "I moved to Porto."}],
    }
    response = api.post(
        f"{API}/agents/{AGENT}/sessions/s-9/messages", json.dumps(body),
        content_type="application/json",
    )  # fmt: skip
    assert response.status_code == 202, response.content
    answer = response.json()
    assert answer["accepted"] == 0
    assert answer["refused"] == [{"user_id": "gene", "reason": "forgotten"}]
    theirs = {"agent_id": AGENT, "user_id": "gene"}
    assert store.db["memory_messages"].count_documents(theirs) == 0
    assert store.db["memory_session_buffers"].count_documents(theirs) == 0
    # Another speaker in someone else's session: only the forgotten one's line is dropped.
    body = {
        "user_id": "ada",
        "messages": [
            {"id": "m-1", "role": "user", "content": "Hi.", "user_id": "gene"},
            {"id": "m-2", "role": "user", "content": "Hello there."},
        ],
    }
    answer = api.post(
        f"{API}/agents/{AGENT}/sessions/s-10/messages", json.dumps(body),
        content_type="application/json",
    ).json()  # fmt: skip
    assert answer["accepted"] == 1 and answer["refused"][0]["user_id"] == "gene"
    assert store.db["memory_messages"].count_documents({"agent_id": AGENT, "user_id": "gene"}) == 0


def test_only_an_admin_key_lifts_a_tombstone_with_a_reason_and_it_is_audited(
    api, limited_api, store: MemoryStore, django_capture_on_commit_callbacks
) -> None:
    _world(store)
    _forget(api, store, "gene", django_capture_on_commit_callbacks)
    url = f"{API}/agents/{AGENT}/tombstones/gene"
    reason = json.dumps({"reason": "the user came back and asked to be remembered"})

    assert_error(
        api.generic("DELETE", url, json.dumps({}), content_type="application/json"),
        422,
        "validation_error",
    )
    forbidden = limited_api.generic(
        "DELETE", f"{API}/agents/agent-1/tombstones/gene", reason, content_type="application/json"
    )
    assert forbidden.status_code in (403, 404)
    assert forbidden.json()["error"]["code"] in ("forbidden", "permission_denied", "not_found")
    assert api.generic("DELETE", url, reason, content_type="application/json").status_code == 204
    assert_error(
        api.generic("DELETE", url, reason, content_type="application/json"), 404, "not_found"
    )
    entries = api.get(f"{API}/audit?action=tombstone.lift").json()["items"]
    assert len(entries) == 1 and entries[0]["summary"]["reason"].startswith("the user came")
    # Lifted: their messages are stored again.
    body = {"user_id": "gene", "messages": [{"id": "m-3", "role": "user", "content": "Hi."}]}
    answer = api.post(
        f"{API}/agents/{AGENT}/sessions/s-11/messages", json.dumps(body),
        content_type="application/json",
    ).json()  # fmt: skip
    assert answer["accepted"] == 1 and answer["refused"] == []


def test_the_tombstone_holds_no_personal_data(
    api, store: MemoryStore, django_capture_on_commit_callbacks
) -> None:
    _world(store)
    _forget(api, store, "gene", django_capture_on_commit_callbacks)
    [doc] = list(store.db["memory_erasure_tombstones"].find({"agent_id": AGENT}).limit(5))
    assert "gene" not in json.dumps(doc, default=str).lower()
    assert len(doc["_id"]) == 64  # a hex HMAC-SHA256
