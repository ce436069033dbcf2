"""One way in (issue 37): every write that puts memory text into a scope passes the screen.

Each test is one hole the screen closes: pins and hand edits of shared scopes (secrets
redacted in every scope; personal data and instructions refused with 422 `flagged`), a
bulk move into a shared scope (held like any write there), an observation edit in a
shared scope (held; the old text stays live), an import's claimed status (re-derived),
and the secrets a caller sends (redacted in the session's messages, the context-call log
and the chat-call records).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from bson import ObjectId

from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore, write_behind
from tests.api.conftest import API, assert_error

AGENT = "a1"
JSON = "application/json"
SK = "sk-proj-abcdefghijklmnopqrstuvwx123"
AWS = "AKIAIOSFODNN7EXAMPLE"
EMAIL = "gene@example.com"
SECRET_TEXT = f"Deploy with {SK} and {AWS}."
EMAIL_TEXT = f"Write to {EMAIL} for invoices."
KEYS = {
    "individual": ScopeKey.individual(AGENT, "alice"),
    "group": ScopeKey.group(AGENT, "g-1"),
    "collective": ScopeKey.collective(AGENT),
    "shard": ScopeKey.collective(AGENT, "billing"),
}
SHARED = ["group", "collective", "shard"]


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    settings.MEMORY_CONTEXT_LOG_DAYS = 7


def post(api: Any, path: str, body: Any) -> Any:
    return api.post(f"{API}{path}", json.dumps(body), content_type=JSON)


def _scope(store: MemoryStore, kind: str) -> str:
    scope, _ = scope_get_or_create(store=store, key=KEYS[kind], display_name=f"The {kind}")
    return scope.id


def _member_context(api: Any, user: str = "bob") -> str:
    """What an unrelated member of the group and the shard is given."""
    body = {
        "user_id": user,
        "groups": [{"id": "g-1"}],
        "message": "What do you know about invoices and deploys?",
    }
    answer = post(api, f"/agents/{AGENT}/context", body)
    assert answer.status_code == 200, answer.content
    return answer.json()["context"]


# -- pins and hand edits ------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KEYS))
def test_pins_and_hand_edits_never_store_a_secret_in_any_scope(api, store, kind):
    scope_id = _scope(store, kind)
    pinned = api.put(f"{API}/scopes/{scope_id}/pins", {"pins": [SECRET_TEXT]}, content_type=JSON)
    assert pinned.status_code == 200, pinned.content
    edited = api.patch(
        f"{API}/scopes/{scope_id}",
        {"consolidation": f"Alice ships on Fridays. Her token is {SK}.", "expected_version": 0},
        content_type=JSON,
    )
    assert edited.status_code == 200, edited.content
    stored = scope_get(store=store, scope_id=scope_id)
    for text in [*stored.pins, stored.consolidation or ""]:
        assert SK not in text and AWS not in text, text
    assert "[redacted secret]" in stored.pins[0]
    versions = api.get(f"{API}/scopes/{scope_id}/consolidations").json()["items"]
    assert all(SK not in v["text"] for v in versions)
    assert SK not in _member_context(api) and AWS not in _member_context(api)


@pytest.mark.parametrize("kind", SHARED)
def test_a_flagged_pin_or_hand_edit_of_a_shared_scope_is_refused_naming_flags_and_spans(
    api, store, kind
):
    scope_id = _scope(store, kind)
    refused = api.put(f"{API}/scopes/{scope_id}/pins", {"pins": [EMAIL_TEXT]}, content_type=JSON)
    error = assert_error(refused, 422, "flagged")
    start = EMAIL_TEXT.index(EMAIL)
    assert error["details"]["flags"] == ["pii:email"]
    assert error["details"]["spans"] == [[start, start + len(EMAIL)]]
    edit = {"consolidation": f"Invoices: {EMAIL_TEXT}", "expected_version": 0}
    error = assert_error(
        api.patch(f"{API}/scopes/{scope_id}", edit, content_type=JSON), 422, "flagged"
    )
    assert error["details"]["flags"] == ["pii:email"]
    stored = scope_get(store=store, scope_id=scope_id)
    assert stored.pins == [] and stored.consolidation_version == 0
    assert EMAIL not in _member_context(api)


def test_a_flagged_pin_of_a_user_s_own_scope_is_stored(api, store):
    scope_id = _scope(store, "individual")
    pinned = api.put(f"{API}/scopes/{scope_id}/pins", {"pins": [EMAIL_TEXT]}, content_type=JSON)
    assert pinned.status_code == 200, pinned.content
    assert pinned.json()["pins"] == [EMAIL_TEXT]


# -- move --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SHARED)
def test_a_move_into_a_shared_scope_holds_what_is_flagged(api, store, run_tasks, kind):
    alice = scope_get(store=store, scope_id=_scope(store, "individual"))
    target = _scope(store, kind)
    flagged = observation_add(store=store, scope=alice, content=EMAIL_TEXT)
    plain = observation_add(
        store=store, scope=scope_get(store=store, scope_id=alice.id), content="Alice likes tea."
    )
    assert flagged.status == "pending" and flagged.flags == ["pii:email"]
    body = {
        "filter": {"scope_id": alice.id},
        "action": "move",
        "target_scope_id": target,
        "dry_run": False,
    }
    with run_tasks():
        moved = post(api, f"/agents/{AGENT}/observations/bulk", body)
    assert moved.status_code in (200, 202), moved.content
    after = api.get(f"{API}/observations/{flagged.id}").json()
    assert after["scope_id"] == target and after["status"] == "in_review"
    assert after["review"]["reasons"] == ["flag:pii:email"]
    assert api.get(f"{API}/observations/{plain.id}").json()["status"] == "pending"
    scope = scope_get(store=store, scope_id=target)
    assert flagged.id not in scope.pending_observation_ids
    assert plain.id in scope.pending_observation_ids
    assert EMAIL not in _member_context(api)
    found = api.get(f"{API}/agents/{AGENT}/search", {"q": "invoices", "scope_id": target})
    assert EMAIL not in found.content.decode()


# -- observation edits -------------------------------------------------------------------


@pytest.mark.parametrize("kind", SHARED)
def test_an_edit_that_brings_personal_data_into_a_shared_scope_waits_for_review(api, store, kind):
    scope = scope_get(store=store, scope_id=_scope(store, kind))
    before = observation_add(store=store, scope=scope, content="Invoices go to accounting.")
    edited = api.patch(
        f"{API}/observations/{before.id}", {"content": EMAIL_TEXT}, content_type=JSON
    )
    assert edited.status_code == 200, edited.content
    stored = api.get(f"{API}/observations/{before.id}").json()
    assert stored["content"] == "Invoices go to accounting."  # the old text stays live
    assert stored["status"] == "pending"
    assert EMAIL not in _member_context(api)
    queue = api.get(f"{API}/agents/{AGENT}/review?limit=50").json()["items"]
    [held] = [o for o in queue if o["content"] == EMAIL_TEXT]
    assert held["review"]["reasons"] == ["flag:pii:email"]
    approved = post(api, f"/observations/{held['id']}/review", {"decision": "approve"})
    assert approved.status_code == 200, approved.content
    after = api.get(f"{API}/observations/{before.id}").json()
    assert after["content"] == EMAIL_TEXT and after["status"] == "pending"


# -- import ------------------------------------------------------------------------------


@pytest.mark.parametrize("claimed", ["consolidated", "approved"])
def test_an_import_re_derives_the_status_a_document_claims(api, store, claimed):
    group = scope_get(store=store, scope_id=_scope(store, "group"))
    observation_add(store=store, scope=group, content="Invoices go to accounting.")
    document = api.get(f"{API}/scopes/{group.id}/export").json()
    [item] = document["scopes"][0]["observations"]
    new = copy.deepcopy(item)
    new.pop("digest", None)
    new["id"] = str(ObjectId())
    new["content"] = EMAIL_TEXT
    if claimed == "consolidated":
        new["status"] = "consolidated"
    else:
        new["review"] = {"decision": "approve", "reasons": ["flag:pii:email"]}
    document["scopes"][0]["observations"].append(new)
    answer = post(api, f"/agents/{AGENT}/import", document)
    assert answer.status_code == 200, answer.content
    stored = api.get(f"{API}/observations/{new['id']}").json()
    assert stored["status"] == "in_review", stored
    assert "flag:pii:email" in stored["review"]["reasons"]
    assert EMAIL not in _member_context(api)


# -- what a caller sends -----------------------------------------------------------------


def test_secrets_a_caller_sends_are_redacted_in_messages_and_the_context_log(api, store):
    _scope(store, "individual")
    message = f"My key is {SK}, remember it."
    ingest = post(
        api,
        f"/agents/{AGENT}/sessions/s-1/messages",
        {"user_id": "alice", "messages": [{"id": "m1", "role": "user", "content": message}]},
    )
    assert ingest.status_code in (200, 202), ingest.content
    stored = store.db["memory_messages"].find_one(
        {"agent_id": AGENT, "session_id": "s-1", "message_id": "m1"}
    )
    assert stored is not None and SK not in json.dumps(stored, default=str)
    answer = post(
        api,
        f"/agents/{AGENT}/context",
        {"user_id": "alice", "session_id": "s-1", "message": message},
    )
    assert answer.status_code == 200, answer.content
    write_behind.flush()
    listed = api.get(f"{API}/agents/{AGENT}/context-calls", {"user_id": "alice"})
    assert listed.status_code == 200, listed.content
    calls = listed.json()["items"]
    assert calls and SK not in json.dumps(calls)


@pytest.mark.parametrize("kind", ["individual", "group"])
def test_a_move_deduplicates_against_the_target(api, store, run_tasks, kind):
    """A moved text the target holds is filed once; the source can take the text again."""
    source = scope_get(store=store, scope_id=_scope(store, "collective"))
    target = scope_get(store=store, scope_id=_scope(store, kind))
    kept = observation_add(store=store, scope=target, content="Invoices go out monthly.")
    moved = observation_add(store=store, scope=source, content="Invoices go out monthly!")
    other = observation_add(
        store=store, scope=scope_get(store=store, scope_id=source.id), content="Alice likes tea."
    )
    body = {
        "filter": {"scope_id": source.id},
        "action": "move",
        "target_scope_id": target.id,
        "dry_run": False,
    }
    with run_tasks():
        assert post(api, f"/agents/{AGENT}/observations/bulk", body).status_code in (200, 202)
    listed = api.get(f"{API}/scopes/{target.id}/observations?limit=50").json()["items"]
    assert sorted(o["id"] for o in listed) == sorted([kept.id, other.id])
    assert api.get(f"{API}/observations/{moved.id}").json()["deleted"] is True
    again = post(api, f"/scopes/{source.id}/observations", {"content": "Alice likes tea."})
    assert again.status_code == 201 and again.json()["id"] != other.id, again.content
