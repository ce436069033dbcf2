"""Derived memory follows its sources: the matrix action × where old text could survive.

One row per action (delete, edit, mark private, restore, forget user) and per scope
type the observation starts in (individual, group, collective, shard). The world:
the observation is consolidated in its scope, propagated (individual → group →
collective) and the copies consolidated, with clean versions before and after. After
the action and its jobs the old text must be nowhere the agent or a support engineer
can see it: the scope's consolidation and history, the propagated copies, the
consolidations that absorbed them, the context XML, search, the user export.

The fake model echoes its whole prompt as the consolidation text, so anything sent to
a consolidation call shows up in a text; its propagation answer copies the known
observation texts it is offered. Jobs run in-process, or on a real Celery worker when
tests/integration/test_broker_mode.py re-runs this file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from bson import ObjectId

from streams.actions.chat import chat_catch_up_run
from streams.actions.jobs import do_propagation_run
from streams.context.assemble import context_assemble
from streams.core.documents import Job, Observation
from streams.core.exceptions import Conflict
from streams.jobs import job_get
from streams.memory.consolidation import consolidation_history, consolidation_restore
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_add, observation_get, observation_list
from streams.memory.rebuild import rebuild_run
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.memory.source_change import source_change_run
from streams.people.privacy import forget_user_request, forget_user_run
from streams.people.user_audit import user_export
from streams.search.index import search_observations
from streams.store import MemoryStore
from tests.fakes.openai_wire import DEFAULT_JSON_TEXT, faithful_memory
from tests.task_mode import BROKER, run_job, settle

AGENT = "a1"
ROOMY = {"consolidation_max_words": 5000}  # echoed prompts grow past the default 500 words
SECRET = "zanzibar"
OLD = "Gene kiteboards in Zanzibar every spring."
NEW = "Gene kiteboards in Madagascar every spring."
ORIGINS = ["individual", "group", "collective", "shard"]
ACTIONS = ["delete", "edit", "private", "restore", "forget_user"]


def responder(request: Any) -> str:
    """A faithful memory for consolidation (every text it folds; an echo of the prompt
    is refused, issue 39); for propagation, copy each known text offered."""
    if request.task == "consolidation":
        return faithful_memory(request)
    if not request.wants_json:
        return request.body["messages"][-1]["content"]
    prompt = request.body["messages"][-1]["content"]
    if request.task != "propagation":
        return DEFAULT_JSON_TEXT
    target = "group:Eden Team" if "group:Eden Team" in prompt else "collective"
    offered = [t for t in (OLD, NEW) if t in prompt]
    return json.dumps({"observations": [{"content": t, "scope": target} for t in offered]})


def works(store: MemoryStore) -> dict[str, Callable[[Any], None]]:
    return {
        "consolidation": lambda run: consolidation_run(store=store, run=run),
        "propagation": lambda run: do_propagation_run(store=store, run=run),
        "rebuild": lambda run: rebuild_run(store=store, run=run),
        "source_change": lambda run: source_change_run(store=store, run=run),
        "forget_user": lambda run: forget_user_run(store=store, run=run),
        "chat_catch_up": lambda run: chat_catch_up_run(store=store, run=run),
    }


def drain(store: MemoryStore, jobs: list[Job]) -> None:
    """Run the jobs and everything they queue (the worker does the follow-ups itself)."""
    for job in jobs:
        run = run_job(store=store, job_id=job.id, work=works(store)[job.kind])
        if not BROKER and run is not None:
            drain(store, run.follow_ups)
    settle(store)


def consolidate(store: MemoryStore, scope_id: str) -> None:
    scope = scope_get(store=store, scope_id=scope_id)
    if scope.pending_observation_ids:
        drain(store, [consolidation_request(store=store, scope=scope, trigger="manual", actor="t")])


def add(store: MemoryStore, scope_id: str, content: str, user: str) -> Observation:
    scope = scope_get(store=store, scope_id=scope_id)
    return observation_add(store=store, scope=scope, content=content, related_user_ids=[user])


@pytest.fixture
def world(store: MemoryStore, fake_openai, settings) -> dict[str, str]:
    fake_openai.set_responder(responder)
    # One group's copy enters the collective at once here (no candidates): this module
    # follows derived text through every level; the several-groups rule has its own tests.
    # The store here, and the setting for the store a job builds: in broker mode the
    # task message carries the MEMORY_* settings to the worker (tests/task_mode.py).
    store.collective_min_groups = 1
    settings.MEMORY_COLLECTIVE_MIN_GROUPS = 1
    eden = [{"id": "g1", "name": "Eden Team"}]
    ids = {}
    for name, key, display in (
        ("individual", ScopeKey.individual(AGENT, "u1"), "Gene"),
        ("other", ScopeKey.individual(AGENT, "u2"), "Ada"),
        ("group", ScopeKey.group(AGENT, "g1"), "Eden Team"),
        ("collective", ScopeKey.collective(AGENT), None),
        ("shard", ScopeKey.collective(AGENT, "feedback"), None),
    ):
        defaults = {**ROOMY, **({"groups": eden} if key.scope_type == "individual" else {})}
        scope, _ = scope_get_or_create(
            store=store, key=key, display_name=display, defaults=defaults
        )
        ids[name] = scope.id
    # Clean first versions: the base a rebuild starts from.
    for name, text in (
        ("group", "The team deploys on Fridays."),
        ("collective", "Exports need a progress bar."),
        ("shard", "Ada finds exports slow."),
        ("other", "Ada prefers terse answers."),
    ):
        add(store, ids[name], text, "u2")
        consolidate(store, ids[name])
    return ids


def seed_secret(store: MemoryStore, world: dict[str, str], origin: str) -> Observation:
    """The observation in `origin`, consolidated, propagated up, copies consolidated, and a
    clean later version in every scope after it."""
    secret = add(store, world[origin], OLD, "u1")
    for name in ("individual", "group", "collective", "shard"):
        consolidate(store, world[name])
    for name, text in (
        ("individual", "Gene likes short answers."),
        ("group", "Standups start at nine."),
        ("collective", "Maps need an offline mode."),
        ("shard", "Dark mode is requested often."),
    ):
        add(store, world[name], text, "u2" if name != "individual" else "u1")
        consolidate(store, world[name])
    return observation_get(store=store, observation_id=secret.id)


def reached(origin: str) -> list[str]:
    """The scopes the old text reaches: the origin and, by propagation, the levels above."""
    return {
        "individual": ["individual", "group", "collective"],
        "group": ["group", "collective"],
        "collective": ["collective"],
        "shard": ["shard"],
    }[origin]


def act(store: MemoryStore, action: str, secret: Observation, world: dict[str, str]) -> None:
    jobs: list[Job] = []
    if action in ("delete", "restore"):
        observation_delete(store=store, observation=secret, follow_ups=jobs)
    elif action == "edit":
        observation_update(store=store, observation=secret, content=NEW, follow_ups=jobs)
    elif action == "private":
        observation_update(store=store, observation=secret, private=True, follow_ups=jobs)
    else:
        jobs.append(forget_user_request(store=store, agent_id=AGENT, user_id="u1", actor="t"))
    flagged = [scope_get(store=store, scope_id=world[n]) for n in ("group", "collective", "shard")]
    if action in ("delete", "edit", "private", "restore"):
        # Until the rebuild commits, the scopes that held the text say so.
        assert {s.id for s in flagged if s.needs_rebuild} == {
            world[n] for n in reached(secret_origin(world, secret)) if n != "individual"
        }
    drain(store, jobs)
    if action == "restore":
        restore_every_old_version(store, world)


def secret_origin(world: dict[str, str], secret: Observation) -> str:
    return next(n for n, i in world.items() if i == secret.scope_id)


def restore_every_old_version(store: MemoryStore, world: dict[str, str]) -> None:
    """Restoring cannot bring the text back: the versions that held it are redacted."""
    for name in ("individual", "group", "collective", "shard"):
        scope = scope_get(store=store, scope_id=world[name])
        for version in range(1, scope.consolidation_version):
            scope = scope_get(store=store, scope_id=world[name])
            jobs: list[Job] = []
            try:
                consolidation_restore(
                    store=store, scope=scope, version=version, actor="t", follow_ups=jobs
                )
            except Conflict:
                continue
            drain(store, jobs)


def every_document_but(store: MemoryStore, keep: Callable[[str, dict[str, Any]], bool]) -> str:
    """Every memory document (but those `keep` says are the source itself), lower-cased."""
    dumped: list[str] = []
    for name in store.db.list_collection_names():
        if not name.startswith("memory_"):
            continue
        for bounds in (
            {"$gte": ObjectId("0" * 24), "$lte": ObjectId("f" * 24)},
            {"$gte": "", "$lte": "\uffff"},
        ):
            for doc in store.db[name].find({"_id": bounds}).limit(100_000):
                if not keep(name, doc):
                    dumped.append(json.dumps(doc, default=str))
    return "\n".join(dumped).lower()


@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("action", ACTIONS)
def test_the_old_text_is_nowhere_after_the_action_and_its_jobs(
    store, world, fake_openai, action, origin
):
    secret = seed_secret(store, world, origin)
    for name in reached(origin):
        scope = scope_get(store=store, scope_id=world[name])
        assert SECRET in (scope.consolidation or "").lower(), f"{name} must hold it before"
    copies_before = sum(
        1
        for name in reached(origin)[1:]
        for o in observation_list(
            store=store, scope=scope_get(store=store, scope_id=world[name])
        ).items
        if o.propagated_from
    )
    assert copies_before == len(reached(origin)) - 1

    act(store, action, secret, world)

    live = [n for n in world if store.scopes.get(ObjectId(world[n])) is not None]
    if action == "forget_user":
        assert "individual" not in live
    # 1-3. Every scope's consolidation and history; copies; what absorbed the copies.
    for name in live:
        scope = scope_get(store=store, scope_id=world[name])
        assert not scope.needs_rebuild, f"{name} still flagged"
        assert SECRET not in (scope.consolidation or "").lower(), f"{name} consolidation"
        for version in consolidation_history(store=store, scope=scope, limit=100).items:
            assert SECRET not in version.text.lower(), f"{name} v{version.version}"
        for o in observation_list(store=store, scope=scope, include_deleted=True).items:
            if o.propagated_from:
                assert SECRET not in o.content.lower(), f"a copy in {name} survived"
    # Nothing else was lost: each live observation is in its consolidation or pending
    # (a restore puts what later versions absorbed back to pending).
    for name in live:
        scope = scope_get(store=store, scope_id=world[name])
        for o in observation_list(store=store, scope=scope).items:
            if not o.private:
                assert o.content in (scope.consolidation or "") or (
                    o.id in scope.pending_observation_ids
                ), f"{o.content!r} was lost in {name}"
    if action == "edit":
        origin_scope = scope_get(store=store, scope_id=world[origin])
        assert "madagascar" in (origin_scope.consolidation or "").lower()

    # Nothing anywhere but the source itself: the soft-deleted row kept for the audit, the
    # private observation with its own scope's search terms, or (an edit) the earlier text
    # in the observation's own text history, which admins read and delete/forget purge.
    def is_source(collection: str, doc: dict[str, Any]) -> bool:
        if collection == "memory_observations" and str(doc["_id"]) == secret.id:
            return action in ("delete", "restore", "private")
        if collection == "memory_text_history":
            return action == "edit" and str(doc.get("observation_id")) == secret.id
        return (
            action == "private"
            and collection == "memory_search_terms"
            and str(doc["_id"]).startswith(world[origin])
        )

    assert SECRET not in every_document_but(store, is_source)

    # 4-5. The context XML and search, for another member of the group and for u1. A
    # private observation stays in its own scope: those who see that scope may still
    # retrieve the observation itself (never a text derived from it).
    for user_id, name in [("u2", "Ada"), ("u1", "Gene")]:
        sees_source = action == "private" and (origin != "individual" or user_id == "u1")
        context = context_assemble(
            store=store,
            agent_id=AGENT,
            user_id=user_id,
            user_name=name,
            groups=[("g1", "Eden Team")],
            message="Where does Gene go kiteboarding, Zanzibar?",
        )
        xml = context.xml.lower()
        if sees_source:
            xml = xml.split("<retrievedobservations>")[0]
        assert SECRET not in xml, f"context of {user_id}"
        hits = search_observations(
            store=store, agent_id=AGENT, query="Zanzibar kiteboards", user_id=user_id,
            group_ids=["g1"],
        )  # fmt: skip
        for hit in hits:
            if SECRET in hit.observation.content.lower():
                assert sees_source and hit.observation.id == secret.id, user_id

    # 6. The user export: only a private observation, as the user's own, may show it.
    exported = user_export(store=store, agent_id=AGENT, user_id="u1")
    rows = [
        *((exported["individual_scope"] or {}).get("observations") or []),
        *exported["related_observations"],
    ]
    for row in rows:
        if SECRET in (row["content"] or "").lower():
            assert action == "private" and row["id"] == secret.id and row["private"]
    for version in (exported["individual_scope"] or {}).get("history") or []:
        assert SECRET not in version["text"].lower()
    assert SECRET not in ((exported["individual_scope"] or {}).get("consolidation") or "").lower()


def test_an_edited_observation_is_propagated_again_with_its_new_text(store, world, fake_openai):
    secret = seed_secret(store, world, "individual")
    jobs: list[Job] = []
    observation_update(store=store, observation=secret, content=NEW, follow_ups=jobs)
    drain(store, jobs)
    group = scope_get(store=store, scope_id=world["group"])
    copies = [o for o in observation_list(store=store, scope=group).items if o.propagated_from]
    assert [(o.content, o.propagated_from) for o in copies] == [(NEW, secret.id)]


def test_a_failing_model_leaves_the_scope_flagged_and_the_retry_rebuilds(store, world, fake_openai):
    secret = seed_secret(store, world, "group")
    changes: list[Job] = []
    observation_delete(store=store, observation=secret, follow_ups=changes)
    fake_openai.fail(status=500, times=20)
    # The delete's follow-up asks no model (copies out, the log scrubbed); its rebuilds do.
    for change in changes:
        run_job(store=store, job_id=change.id, work=works(store)[change.kind])
    jobs = [job_get(store=store, job_id=i) for c in changes for i in c.payload["rebuild_job_ids"]]
    assert jobs
    for job in jobs:
        with pytest.raises(Exception):  # noqa: B017 - the recorded LLM error, either mode
            run_job(store=store, job_id=job.id, work=works(store)[job.kind])
    settle(store)
    group = scope_get(store=store, scope_id=world["group"])
    assert group.needs_rebuild and SECRET in (group.consolidation or "").lower()
    assert {job_get(store=store, job_id=j.id).status for j in jobs} == {"failed"}
    fake_openai.reset()
    fake_openai.set_responder(responder)
    drain(store, jobs)  # what the retry sweep does
    group = scope_get(store=store, scope_id=world["group"])
    assert not group.needs_rebuild and SECRET not in (group.consolidation or "").lower()
    assert "fridays" in (group.consolidation or "").lower()
