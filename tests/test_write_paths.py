"""One write path per action: through the API and through the UI, every write records the
same audit entry (action, object type and id, summary) and schedules the same jobs.

Each case builds the same world twice (one agent per interface), on each scope type
(a person's, a group's, the collective and a named shard), performs the action
through each interface, and compares what the domain action recorded: the entries
must be equal once ids of the world and of the scheduled jobs are masked, and the
actor must be `api:<key>` and `ui:<username>`. Actions one interface does not offer
are compared with the same domain action called directly as `cli`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from bson import ObjectId
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from memory_admin.jobs.tasks import formation_settings
from memory_admin.models import ApiKey
from streams.actions import Actor
from streams.actions.exchange import do_user_export_document
from streams.actions.observations import do_observation_add_batch
from streams.actions.prompts import do_prompt_save
from streams.actions.scopes import do_scope_create
from streams.actions.sessions import do_messages_ingest
from streams.core.documents import Job
from streams.memory.formation import IncomingMessage
from streams.memory.observation_batch import BatchItem
from streams.memory.scopes import ScopeKey
from streams.records.audit import audit_page
from streams.store import MemoryStore
from tests.ui.people import create_user
from tests.write_paths import (
    API,
    API_ACTOR,
    JSON,
    MESSAGE,
    TEMPLATE,
    UI_ACTOR,
    World,
    api_form,
    cli_form,
    make_world,
    masked,
)

pytestmark = pytest.mark.django_db
SCOPE_TYPES = ["individual", "group", "collective", "shard"]

Call = Callable[[Client, World], Any]


@dataclass(frozen=True)
class Case:
    action: str
    object_type: str
    object_id: Callable[[World], str]
    api: Call
    ui: Call


def _scope(w: World) -> str:
    return w.scope.id


def _observation(w: World) -> str:
    return w.observation.id


def _ui(name: str, *args: Callable[[World], Any], data: Callable[[World], dict] | None = None):
    def call(client: Client, w: World) -> Any:
        url = reverse(f"ui:{name}", args=[a(w) for a in args])
        return client.post(url, data(w) if data else {})

    return call


def _export_document(w: World) -> dict[str, Any]:
    """An export of a new group scope with settings and pins (a hand-made one: no digests)."""
    block = {
        "id": str(ObjectId()), "scope_type": "group", "user_id": None, "group_id": "g-imp",
        "name": None, "display_name": "Imported", "consolidation": None,
        "consolidation_version": 0, "history": None, "observations": [],
        "settings": {"consolidation_threshold": 12, "pins": ["The team meets on Mondays."]},
    }  # fmt: skip
    return {"format": "memory-admin/export-2", "kind": "scope", "agent_id": w.agent_id,
            "scopes": [block]}  # fmt: skip


def _patch(path: Callable[[World], str], body: dict[str, Any]) -> Call:
    return lambda c, w: c.patch(f"{API}{path(w)}", body, content_type=JSON)


def _scope_path(w: World) -> str:
    return f"/scopes/{w.scope.id}"


def _observation_path(w: World) -> str:
    return f"/observations/{w.observation.id}"


CASES = [
    Case(
        "observation.create",
        "observation",
        lambda w: "<new>",
        lambda c, w: c.post(
            f"{API}/scopes/{w.scope.id}/observations",
            {"content": "Gene drinks oolong.", "private": True},
            content_type=JSON,
        ),
        _ui(
            "observation_add",
            _scope,
            data=lambda w: {"content": "Gene drinks oolong.", "private": "on"},
        ),
    ),
    Case(
        "observation.update",
        "observation",
        _observation,
        _patch(_observation_path, {"content": "Gene moved to Braga.", "private": False}),
        _ui("observation_edit", _observation, data=lambda w: {"content": "Gene moved to Braga."}),
    ),
    Case(
        "observation.update",
        "observation",
        _observation,
        _patch(_observation_path, {"private": True}),
        _ui("observation_private", _observation, data=lambda w: {"private": "true"}),
    ),
    Case(
        "observation.delete",
        "observation",
        _observation,
        lambda c, w: c.delete(f"{API}/observations/{w.observation.id}"),
        _ui("observation_delete", _observation),
    ),
    Case(
        "consolidation.trigger",
        "scope",
        _scope,
        lambda c, w: c.post(f"{API}/scopes/{w.scope.id}/consolidate"),
        _ui("consolidate", _scope),
    ),
    Case(
        "consolidation.restore",
        "consolidation",
        _scope,
        lambda c, w: c.post(f"{API}/scopes/{w.scope.id}/consolidations/1/restore"),
        _ui("consolidation_restore", _scope, lambda w: 1),
    ),
    Case(
        "consolidation.edit",
        "consolidation",
        _scope,
        _patch(_scope_path, {"consolidation": "Gene lives in Porto.", "expected_version": 2}),
        _ui(
            "consolidation_edit",
            _scope,
            data=lambda w: {"text": "Gene lives in Porto.", "expected_version": 2},
        ),
    ),
    Case(
        "scope.update",
        "scope",
        _scope,
        _patch(_scope_path, {"consolidation_threshold": 2}),
        _ui(
            "scope_settings",
            _scope,
            data=lambda w: {
                "is_active": "on",
                "consolidation_threshold": 2,
                "consolidation_max_words": w.scope.consolidation_max_words,
            },
        ),
    ),
    Case(
        "scope.update",
        "scope",
        _scope,
        _patch(_scope_path, {"is_active": False}),
        _ui("scope_active", _scope, data=lambda w: {"active": "false"}),
    ),
    Case(
        "job.retry",
        "job",
        lambda w: w.failed_job.id,
        lambda c, w: c.post(f"{API}/jobs/{w.failed_job.id}/retry"),
        _ui("job_retry", lambda w: w.failed_job.id),
    ),
    Case(
        "user.forget",
        "user",
        lambda w: "u-gene",
        lambda c, w: c.delete(f"{API}/agents/{w.agent_id}/users/u-gene"),
        _ui(
            "user_forget",
            data=lambda w: {"agent": w.agent_id, "user": "u-gene", "confirm": "u-gene"},
        ),
    ),
    Case(
        "agent.update",
        "agent",
        lambda w: w.agent_id,
        lambda c, w: c.patch(
            f"{API}/agents/{w.agent_id}", {"memory_tool": "search_memory"}, content_type=JSON
        ),
        _ui(
            "agent_settings",
            lambda w: w.agent_id,
            data=lambda w: {"memory_tool": "search_memory"},
        ),
    ),
    Case(
        "agent.limits",
        "agent",
        lambda w: w.agent_id,
        lambda c, w: c.patch(
            f"{API}/agents/{w.agent_id}", {"extraction_model": "gpt-4.1-mini"}, content_type=JSON
        ),
        _ui(
            "agent_limits",
            lambda w: w.agent_id,
            data=lambda w: {"extraction_model": "gpt-4.1-mini"},
        ),
    ),
    Case(
        "agent.import",
        "agent",
        lambda w: w.agent_id,
        lambda c, w: c.post(
            f"{API}/agents/{w.agent_id}/import", _export_document(w), content_type=JSON
        ),
        _ui(
            "user_import",
            data=lambda w: {
                "document": SimpleUploadedFile(
                    "memory.json", json.dumps(_export_document(w)).encode(), "application/json"
                )
            },
        ),
    ),
]


@pytest.fixture
def scheduled(monkeypatch) -> list[Job]:
    """The jobs the actions hand to the runner (kept here, not run)."""
    jobs: list[Job] = []
    monkeypatch.setattr("streams.actions.base._dispatcher", jobs.extend)
    return jobs


@pytest.fixture
def api_client(db) -> Client:
    _, raw = ApiKey.generate(name="parity-key", agent_ids=[])
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def ui_client(db, django_user_model) -> Client:
    client = Client()
    client.force_login(create_user(django_user_model, username="parity-admin", role="admin"))
    return client


def _perform(
    store: MemoryStore,
    client: Client,
    call: Call,
    actor: str,
    agent_id: str,
    scheduled: list,
    scope_type: str,
) -> tuple[World, Any, list[Job]]:
    world = make_world(store, agent_id, scope_type)
    before = len(scheduled)
    response = call(client, world)
    assert response.status_code < 400, response.content[:500]
    entries = audit_page(store=store, actor=actor).items
    assert len(entries) == 1, [(e.action, e.summary) for e in entries]
    return world, entries[0], scheduled[before:]


@pytest.mark.parametrize("scope_type", SCOPE_TYPES)
@pytest.mark.parametrize("case", CASES, ids=[f"{c.action}-{i}" for i, c in enumerate(CASES)])
def test_api_and_ui_record_the_same_entry_and_schedule_the_same_jobs(
    case: Case, scope_type: str, store, api_client, ui_client, scheduled
):
    results = {
        actor: _perform(store, client, call, actor, agent, scheduled, scope_type)
        for actor, client, call, agent in (
            (API_ACTOR, api_client, case.api, "api-bot"),
            (UI_ACTOR, ui_client, case.ui, "ui-bot"),
        )
    }
    seen = []
    for actor, (world, entry, jobs) in results.items():
        expected_id = case.object_id(world)
        if expected_id != "<new>":
            assert entry.object_id == expected_id
        assert (entry.actor, entry.action, entry.object_type, entry.agent_id) == (
            actor,
            case.action,
            case.object_type,
            world.agent_id,
        )
        ids = world.ids() | {j.id for j in jobs} | {entry.object_id or ""}
        seen.append((masked(entry.summary, ids), sorted(j.kind for j in jobs)))
    assert seen[0] == seen[1]
    assert seen[0][0], "every write of both interfaces says what it changed"


def test_every_write_action_of_both_interfaces_is_covered():
    """A new action recorded by both interfaces must be added to CASES."""
    both = {
        "observation.create",
        "observation.update",
        "observation.delete",
        "consolidation.trigger",
        "consolidation.restore",
        "consolidation.edit",
        "scope.update",
        "job.retry",
        "user.forget",
        "agent.import",
        "agent.update",
        "agent.limits",
    }
    assert {c.action for c in CASES} == both


# -- actions only one interface offers: the same entry as the action called as `cli` ----


@dataclass(frozen=True)
class OneSided:
    action: str
    object_type: str
    interface: str  # "api" or "ui"
    call: Call
    cli: Callable[[MemoryStore, World], Any]


ONE_SIDED = [
    OneSided(
        "scope.create",
        "scope",
        "api",
        lambda c, w: c.post(
            f"{API}/agents/{w.agent_id}/scopes",
            {"scope_type": "group", "group_id": "g1", "display_name": "Team"},
            content_type=JSON,
        ),
        lambda s, w: do_scope_create(
            store=s, actor=Actor.cli(), key=ScopeKey.group(w.agent_id, "g1"), display_name="Team"
        ),
    ),
    OneSided(
        "observation.create_batch",
        "scope",
        "api",
        lambda c, w: c.post(
            f"{API}/scopes/{w.scope.id}/observations",
            {"items": [{"content": "Gene cycles.", "client_id": "c1"}]},
            content_type=JSON,
        ),
        lambda s, w: do_observation_add_batch(
            store=s,
            actor=Actor.cli(),
            scope=w.scope,
            items=[BatchItem(content="Gene cycles.", client_id="c1")],
        ),
    ),
    OneSided(
        "session.ingest",
        "session",
        "api",
        lambda c, w: c.post(
            f"{API}/agents/{w.agent_id}/sessions/s1/messages",
            {"user_id": "u-gene", "user_name": "Gene", "messages": [MESSAGE]},
            content_type=JSON,
        ),
        lambda s, w: do_messages_ingest(
            store=s,
            actor=Actor.cli(),
            agent_id=w.agent_id,
            session_id="s1",
            user_id="u-gene",
            user_name="Gene",
            groups=[],
            messages=[IncomingMessage(**MESSAGE)],
            settings=formation_settings(),
        ),
    ),
    OneSided("session.form", "session", "api", api_form, cli_form),
    OneSided(
        "user.export",
        "user",
        "ui",
        lambda c, w: c.get(reverse("ui:user_export"), {"agent": w.agent_id, "user": "u-gene"}),
        lambda s, w: do_user_export_document(
            store=s, actor=Actor.cli(), agent_id=w.agent_id, user_id="u-gene"
        ),
    ),
    OneSided(
        "prompt.save",
        "prompt",
        "ui",
        lambda c, w: c.post(
            reverse("ui:prompt_save", args=[w.agent_id, "consolidation"]),
            {"text": TEMPLATE, "expected_version": 0},
        ),
        lambda s, w: do_prompt_save(
            store=s,
            actor=Actor.cli(),
            agent_id=w.agent_id,
            kind="consolidation",
            text=TEMPLATE,
            expected_version=0,
        ),
    ),
]


@pytest.mark.parametrize("case", ONE_SIDED, ids=[c.action for c in ONE_SIDED])
def test_an_action_of_one_interface_records_what_the_action_records(
    case: OneSided, store, api_client, ui_client, scheduled
):
    client, actor = (api_client, API_ACTOR) if case.interface == "api" else (ui_client, UI_ACTOR)
    seen = []
    for who, agent_id, perform in (
        (actor, "if-bot", lambda w: case.call(client, w)),
        ("cli", "cli-bot", lambda w: case.cli(store, w)),
    ):
        before = len(scheduled)
        world = make_world(store, agent_id)
        response = perform(world)
        if who != "cli":
            assert response.status_code < 400, response.content[:500]
        entries = audit_page(store=store, actor=who).items
        assert len(entries) == 1, [(e.action, e.summary) for e in entries]
        entry, jobs = entries[0], scheduled[before:]
        assert (entry.action, entry.object_type, entry.agent_id) == (
            case.action,
            case.object_type,
            agent_id,
        )
        ids = world.ids() | {j.id for j in jobs} | {entry.object_id or ""}
        summary = masked(entry.summary, ids)
        seen.append((masked(entry.object_id, ids), summary, sorted(j.kind for j in jobs)))
    assert seen[0] == seen[1]
