"""Every API write leaves exactly one audit entry; the audit log endpoint, its filters, access."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import timedelta
from io import StringIO

import pytest
from bson import ObjectId
from django.core.management import call_command

from memory_admin.api.v1 import api as ninja_api
from streams.actions.base import Actor
from streams.actions.observations import do_observation_update
from streams.core.documents import utcnow
from streams.jobs import job_create
from streams.memory.observations import observation_add
from streams.prompts import DEFAULT_TEMPLATES
from streams.records.audit import audit_page, audit_record
from tests.api.conftest import API, assert_error
from tests.factories import ObservationFactory, ScopeFactory

ACTOR = "api:test-key"
# Endpoints that take POST but change nothing a person would audit: assembling a context
# only counts accesses on the observations it returns.
# Running prompt checks only reads and calls the model.
NOT_WRITES = {
    ("POST", "/agents/{agent_id}/context"),
    ("POST", "/agents/{agent_id}/prompt-checks/run"),
    # The chat proxy writes through its ingest job, which records `session.ingest` itself
    # (tests/api/test_chat_group.py checks that entry).
    ("POST", "/agents/{agent_id}/chat/completions"),
    # A dry run with two models, a suggested draft and an experiment's estimate only read
    # and call the model; nothing is stored.
    ("POST", "/agents/{agent_id}/prompt-dry-runs"),
    ("POST", "/agents/{agent_id}/prompts/{kind}/suggest"),
    ("POST", "/agents/{agent_id}/prompt-experiments/estimate"),
}


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def api_entries(store) -> list:
    return audit_page(store=store, actor=ACTOR, limit=200).items


def write_operations() -> set[tuple[str, str]]:
    found = set()
    for _, router in ninja_api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for method in operation.methods:
                    if method != "GET" and (method, path) not in NOT_WRITES:
                        found.add((method, path))
    return found


def test_every_write_endpoint_leaves_exactly_one_entry(api, store, settings, run_tasks):
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    scope = ScopeFactory.create(store=store, agent_id="a1", user_id="u1")
    # A shared scope whose observations with a phone number wait for a person (`in_review`).
    group = ScopeFactory.create(store=store, group=True, agent_id="a1")
    held = [
        observation_add(store=store, scope=group, content=f"Ops: +1 415 555 267{i}.")
        for i in range(2)
    ]
    assert all(o.review_status == "in_review" for o in held)
    # Two unrelated facts of the user's own scope: one superseded by the other by hand.
    older = observation_add(store=store, scope=scope, content="Gene plays chess on Sundays.")
    newer = observation_add(store=store, scope=scope, content="Gene swims before work.")

    def export_document() -> dict:
        """The individual scope's export as it is when the import step runs (its `scope.export`
        entry is written before that step counts); importing it back is idempotent by ids."""
        exported = api.get(f"{API}/scopes/{scope.id}/export")
        assert exported.status_code == 200, exported.content
        return exported.json()

    steps: list[tuple[str, str, str, object, int, str]] = []

    def step(method, route, path, body, status, action):
        steps.append((method, route, path, body, status, action))

    ingest = {
        "user_id": "u1",
        "messages": [{"id": f"m{i}", "role": "user", "content": "Hi"} for i in range(5)],
    }
    step(
        "POST",
        "/agents/{agent_id}/sessions/{session_id}/messages",
        "/agents/a1/sessions/s1/messages",
        ingest,
        202,
        "session.ingest",
    )
    step(
        "POST",
        "/agents/{agent_id}/sessions/{session_id}/form",
        "/agents/a1/sessions/s1/form",
        None,
        202,
        "session.form",
    )
    step(
        "POST",
        "/agents/{agent_id}/scopes",
        "/agents/a1/scopes",
        {"scope_type": "group", "group_id": "g1"},
        201,
        "scope.create",
    )
    step(
        "PATCH",
        "/scopes/{scope_id}",
        f"/scopes/{scope.id}",
        {"consolidation_threshold": 4},
        200,
        "scope.update",
    )
    step(
        "PATCH",
        "/scopes/{scope_id}",
        f"/scopes/{scope.id}",
        {"consolidation": "Gene likes tea.", "expected_version": 0},
        200,
        "consolidation.edit",
    )
    step(
        "POST",
        "/scopes/{scope_id}/consolidations/{version}/restore",
        f"/scopes/{scope.id}/consolidations/1/restore",
        None,
        201,
        "consolidation.restore",
    )
    step(
        "POST",
        "/scopes/{scope_id}/observations",
        f"/scopes/{scope.id}/observations",
        {"content": "Gene likes green tea."},
        201,
        "observation.create",
    )
    step(
        "POST",
        "/scopes/{scope_id}/consolidate",
        f"/scopes/{scope.id}/consolidate",
        None,
        202,
        "consolidation.trigger",
    )
    step(
        "POST",
        "/observations/{observation_id}/feedback",
        "/observations/{oid}/feedback",
        {"useful": True},
        200,
        "observation.feedback",
    )
    step(
        "PATCH",
        "/observations/{observation_id}",
        "/observations/{oid}",
        {"private": True},
        200,
        "observation.update",
    )
    step(
        "DELETE",
        "/observations/{observation_id}",
        "/observations/{oid}",
        None,
        204,
        "observation.delete",
    )
    check = {
        "name": "tea lands in individual",
        "conversation": "user: I like tea.",
        "expectations": [{"type": "lands_in", "value": "individual"}],
    }
    step("POST", "/agents/{agent_id}/prompt-checks", "/agents/a1/prompt-checks",
         check, 201, "prompt_check.create")  # fmt: skip
    step("DELETE", "/agents/{agent_id}/prompt-checks/{check_id}",
         "/agents/a1/prompt-checks/{cid}", None, 204, "prompt_check.delete")  # fmt: skip
    step("PUT", "/scopes/{scope_id}/pins", f"/scopes/{scope.id}/pins",
         {"pins": ["Gene likes tea."]}, 200, "scope.pins")  # fmt: skip
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["observation.created"]}
    step("POST", "/agents/{agent_id}/webhooks", "/agents/a1/webhooks",
         hook, 201, "webhook.create")  # fmt: skip
    step("PATCH", "/webhooks/{webhook_id}", "/webhooks/{wid}",
         {"active": False}, 200, "webhook.update")  # fmt: skip
    step("DELETE", "/webhooks/{webhook_id}", "/webhooks/{wid}",
         None, 204, "webhook.delete")  # fmt: skip
    step("POST", "/observations/{observation_id}/review", f"/observations/{held[0].id}/review",
         {"decision": "approve", "note": "a public line"}, 200,
         "observation.review_approve")  # fmt: skip
    step("POST", "/agents/{agent_id}/review/decisions", "/agents/a1/review/decisions",
         {"ids": [held[1].id], "decision": "reject"}, 200,
         "observation.review_reject")  # fmt: skip
    step("POST", "/observations/{observation_id}/review/undo",
         f"/observations/{held[1].id}/review/undo", None, 200,
         "observation.review_undo")  # fmt: skip
    step("POST", "/observations/{observation_id}/supersede",
         f"/observations/{older.id}/supersede", {"by": newer.id}, 200,
         "observation.supersede")  # fmt: skip
    step("POST", "/observations/{observation_id}/unsupersede",
         f"/observations/{older.id}/unsupersede", None, 200,
         "observation.unsupersede")  # fmt: skip
    step("PUT", "/agents/{agent_id}/questions/{scope_kind}", "/agents/a1/questions/group",
         {"questions": ["What plan is the team on?"]}, 200, "questions.save")  # fmt: skip
    step("POST", "/agents/{agent_id}/import", "/agents/a1/import",
         export_document, 200, "agent.import")  # fmt: skip
    # Matches the approved (now pending) phone line: a real run queues its `bulk` job.
    bulk = {"filter": {"scope_id": group.id, "q": "ops:"}, "action": "private", "dry_run": False}
    step("POST", "/agents/{agent_id}/observations/bulk", "/agents/a1/observations/bulk",
         bulk, 200, "observation.bulk_private")  # fmt: skip
    failed = job_create(store=store, kind="consolidation", agent_id="a1", scope_id=scope.id)
    store.jobs.start(failed.id_oid, now=utcnow(), stale_before=utcnow())
    store.jobs.finish(failed.id_oid, status="failed", now=utcnow(), error="LLMError: down")
    step("POST", "/bulk/{job_id}/undo", "/bulk/{bid}/undo", None, 202, "observation.bulk_undo")
    step("POST", "/jobs/{job_id}/retry", f"/jobs/{failed.id}/retry", None, 202, "job.retry")
    step("PATCH", "/agents/{agent_id}/ranking", "/agents/a1/ranking",
         {"recency": True}, 200, "agent.update")  # fmt: skip
    step("PATCH", "/scopes/{scope_id}/ranking", f"/scopes/{scope.id}/ranking",
         {"mmr": False}, 200, "scope.update")  # fmt: skip
    experiment = {
        "kind": "extraction",
        "scope_id": scope.id,
        "draft": DEFAULT_TEMPLATES["extraction"] + "\nKeep it short.",
        "sessions": 1,
        "budget_tokens": 100_000,
    }
    step("POST", "/agents/{agent_id}/prompt-experiments", "/agents/a1/prompt-experiments",
         experiment, 202, "prompt_experiment.start")  # fmt: skip
    step("POST", "/prompt-experiments/{experiment_id}/rerun", "/prompt-experiments/{xid}/rerun",
         None, 202, "prompt_experiment.rerun")  # fmt: skip
    # An observation extracted from the session's first line, corrected by a person (not
    # the key walked here): a correction a check can be made of.
    extracted = observation_add(
        store=store, scope=scope, content="Gene moved to Porto.",
        source_session_id="s1", source_message_ids=["m0"],
    )  # fmt: skip
    # As the formation writes it: the origin (the add above is a hand add's).
    store.observations.collection.update_one(
        {"_id": ObjectId(extracted.id)}, {"$set": {"origin": "extraction"}}
    )
    extracted = store.observations.get(ObjectId(extracted.id))
    corrected: list[str] = []

    def correction_made() -> None:
        do_observation_update(
            store=store, actor=Actor.ui("support"), observation=extracted,
            content="Gene moved to Lisbon.",
        )  # fmt: skip
        found = {"agent_id": "a1", "observation_id": extracted.id}
        corrected.append(store.corrections.collection.find_one(found)["_id"])

    step("POST", "/corrections/{correction_id}/check", "/corrections/{corr}/check",
         correction_made, 201, "prompt_check.create")  # fmt: skip
    step("PATCH", "/agents/{agent_id}", "/agents/a1",
         {"memory_tool": "search_memory"}, 200, "agent.update")  # fmt: skip
    step("DELETE", "/agents/{agent_id}/users/{user_id}", "/agents/a1/users/u1",
         None, 202, "user.forget")  # fmt: skip

    def tombstone_left() -> dict:
        """What the queued forget job writes first (the job itself runs in its own tests)."""
        store.tombstones.put(agent_id="a1", user_id="u1", now=utcnow(), job_id=None)
        return {"reason": "the user asked to come back"}

    step("DELETE", "/agents/{agent_id}/tombstones/{user_id}", "/agents/a1/tombstones/u1",
         tombstone_left, 204, "tombstone.lift")  # fmt: skip

    assert {(m, r) for m, r, *_ in steps} == write_operations(), "a write endpoint is not walked"
    observation_id = check_id = webhook_id = bulk_id = experiment_id = None
    for method, _, path, body, status, action in steps:
        body = body() if callable(body) else body  # before the path: it may make the object
        path = path.replace("{oid}", str(observation_id)).replace("{cid}", str(check_id))
        path = path.replace("{wid}", str(webhook_id)).replace("{bid}", str(bulk_id))
        path = path.replace("{xid}", str(experiment_id))
        path = path.replace("{corr}", str(corrected[0]) if corrected else "")
        before = api_entries(store)
        # The bulk job runs to its end, so that the next step can undo it.
        with run_tasks() if action == "observation.bulk_private" else nullcontext():
            response = (
                getattr(api, method.lower())(f"{API}{path}", body, content_type="application/json")
                if body is not None
                else getattr(api, method.lower())(f"{API}{path}")
            )
        assert response.status_code == status, (path, response.content)
        if action == "observation.create":
            observation_id = response.json()["id"]
        if action == "prompt_check.create":
            check_id = response.json()["id"]
        if action == "webhook.create":
            webhook_id = response.json()["id"]
        if action == "observation.bulk_private":
            bulk_id = response.json()["job_id"]
        if action == "prompt_experiment.start":
            experiment_id = response.json()["experiment"]["id"]
        after = api_entries(store)
        assert len(after) == len(before) + 1, f"{method} {path}: {len(after) - len(before)} entries"
        entry = after[0]
        assert (entry.actor, entry.action) == (ACTOR, action)
        assert entry.agent_id == "a1"


def test_a_refused_write_leaves_no_entry(api, store):
    scope = ScopeFactory.create(store=store)
    response = api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_threshold": 0}, content_type="application/json"
    )
    assert_error(response, 422, "validation_error")
    assert api_entries(store) == []
    assert_error(api.delete(f"{API}/observations/not-an-id"), 404, "not_found")
    assert api_entries(store) == []


def test_deleted_content_is_kept_as_a_digest_only(api, store):
    scope = ScopeFactory.create(store=store)
    observation = ObservationFactory.create(store=store, scope=scope, content="Gene has asthma.")
    api.patch(
        f"{API}/observations/{observation.id}",
        {"content": "Gene has mild asthma."},
        content_type="application/json",
    )
    assert api.delete(f"{API}/observations/{observation.id}").status_code == 204
    body = api.get(f"{API}/audit", {"object_id": observation.id}).json()
    assert [e["action"] for e in body["items"]] == ["observation.delete", "observation.update"]
    assert "asthma" not in str(body)
    update = body["items"][1]["summary"]["content"]
    assert update["before"]["length"] == len("Gene has asthma.")
    assert update["after"]["sha256"] != update["before"]["sha256"]


def test_the_audit_endpoint_filters_and_pages(api, store):
    for i in range(5):
        audit_record(
            store=store,
            actor="ui:alice" if i % 2 else "api:bot",
            action="scope.update",
            object_type="scope",
            object_id=f"s{i}",
        )
    audit_record(
        store=store,
        actor="ui:alice",
        action="prompt.save",
        object_type="prompt",
        object_id="p1",
        at=utcnow() - timedelta(days=3),
    )
    everything = api.get(f"{API}/audit").json()
    assert [e["object_id"] for e in everything["items"]] == ["s4", "s3", "s2", "s1", "s0", "p1"]
    assert set(everything["items"][0]) == {
        "id", "at", "actor", "action", "object_type", "object_id", "agent_id", "summary"
    }  # fmt: skip
    alice = api.get(f"{API}/audit", {"actor": "ui:alice"}).json()["items"]
    assert [e["object_id"] for e in alice] == ["s3", "s1", "p1"]
    saves = api.get(f"{API}/audit", {"action": "prompt.save"}).json()["items"]
    assert [e["object_id"] for e in saves] == ["p1"]
    since = (utcnow() - timedelta(days=1)).isoformat()
    recent = api.get(f"{API}/audit", {"actor": "ui:alice", "since": since}).json()["items"]
    assert [e["object_id"] for e in recent] == ["s3", "s1"]
    first = api.get(f"{API}/audit", {"limit": 2}).json()
    second = api.get(f"{API}/audit", {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [e["object_id"] for e in first["items"] + second["items"]] == ["s4", "s3", "s2", "s1"]


@pytest.mark.parametrize(
    "query",
    [{"limit": 0}, {"limit": 201}, {"cursor": "%%%"}, {"since": "yesterday"}, {"actor": ""}],
)
def test_bad_audit_queries_are_422(api, query):
    assert_error(api.get(f"{API}/audit", query), 422, "validation_error")


def test_agent_keys_may_not_read_the_audit_log(limited_api):
    assert_error(limited_api.get(f"{API}/audit"), 403, "forbidden")


def test_unauthenticated_is_401(client):
    assert_error(client.get(f"{API}/audit"), 401, "unauthorized")


def test_the_key_commands_are_audited_as_cli(store, db):
    call_command(
        "create_api_key", "--name", "ops", "--agent", "a1", "--create-agent", stdout=StringIO()
    )
    call_command("revoke_api_key", "ops", stdout=StringIO())
    entries = audit_page(store=store, actor="cli").items
    assert [(e.action, e.object_id) for e in entries] == [
        ("apikey.revoke", "ops"),
        ("apikey.create", "ops"),
        ("agent.create", "a1"),
    ]
    assert entries[1].summary == {"agent_ids": ["a1"], "permissions": ["read", "write", "forget"]}
