"""The search index stays exact: after every step of random sequences (fixed seeds) of
adds, batches, edits, deletes and forget-user, each scope's index equals one rebuilt
from its live observations, and a forgotten scope leaves nothing behind."""

from __future__ import annotations

import random

import pytest
from bson import ObjectId

from streams.core.documents import Observation, Scope
from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.people.privacy import forget_user_request, forget_user_run
from streams.search.index import search_in_scopes
from streams.search.index_rebuild import (
    rebuild_search_index,
    search_index_actual,
    search_index_expected,
)
from streams.store import MemoryStore
from tests.task_mode import run_job, settle

AGENT = "a1"
WORDS = (
    "gene", "prefers", "rust", "tea", "coffee", "fridays", "deploy", "team",
    "berlin", "paris", "standup", "nine", "quiet", "answers", "short", "long",
    "python", "golang", "review", "budget",
)  # fmt: skip
USERS = ("u1", "u2")


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7))).capitalize() + "."


def individual(store: MemoryStore, user_id: str) -> Scope:
    return scope_get_or_create(
        store=store, key=ScopeKey(agent_id=AGENT, scope_type="individual", user_id=user_id)
    )[0]


def collective(store: MemoryStore) -> Scope:
    return scope_get_or_create(store=store, key=ScopeKey(agent_id=AGENT, scope_type="collective"))[
        0
    ]


def assert_exact(store: MemoryStore, scope_ids: set[str], step: str) -> None:
    for scope_id in sorted(scope_ids):
        actual = search_index_actual(store=store, scope_id=scope_id)
        expected = search_index_expected(store=store, scope_id=scope_id)
        assert actual == expected, f"{step}: the index of scope {scope_id} drifted"


def live_of(store: MemoryStore, known: dict[str, Observation]) -> list[Observation]:
    found = store.observations.get_many([ObjectId(i) for i in known])
    return [o for o in found if not o.deleted]


def forget(store: MemoryStore, user_id: str) -> None:
    job = forget_user_request(store=store, agent_id=AGENT, user_id=user_id, actor="api:test")
    run_job(store=store, job_id=job.id, work=lambda run: forget_user_run(store=store, run=run))
    settle(store)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_writes_keep_the_index_exact(store, seed):
    rng = random.Random(seed)
    scopes: dict[str, Scope] = {}
    for user in USERS:
        scopes[user] = individual(store, user)
    scopes["collective"] = collective(store)
    ever: set[str] = {s.id for s in scopes.values()}
    known: dict[str, Observation] = {}
    for n in range(40):
        live = live_of(store, known)
        roll = rng.random()
        if roll < 0.35 or not live:
            name = rng.choice(sorted(scopes))
            scope = store.scopes.get(ObjectId(scopes[name].id)) or scopes[name]
            related = [rng.choice(USERS)] if name == "collective" else None
            o = observation_add(
                store=store, scope=scope, content=text(rng), related_user_ids=related
            )
            known[o.id] = o
            step = f"{n} add to {name}"
        elif roll < 0.5:
            name = rng.choice([u for u in USERS])
            scope = scopes[name]
            items = [
                BatchItem(content=text(rng), client_id=f"{seed}-{n}-{i}")
                for i in range(rng.randint(1, 6))
            ]
            for o in observation_batch_add(store=store, scope=scope, items=items).observations:
                known[o.id] = o
            step = f"{n} batch of {len(items)} to {name}"
        elif roll < 0.72:
            target = rng.choice(live)
            new_text = text(rng) if rng.random() < 0.8 else target.content
            observation_update(store=store, observation=target, content=new_text)
            step = f"{n} edit"
        elif roll < 0.92:
            observation_delete(store=store, observation=rng.choice(live))
            step = f"{n} delete"
        else:
            user = rng.choice(USERS)
            gone = scopes[user].id
            forget(store, user)
            assert search_index_actual(store=store, scope_id=gone) == {}, f"{n}: forgotten"
            assert store.scopes.get(ObjectId(gone)) is None
            scopes[user] = individual(store, user)  # the user comes back later
            ever.add(scopes[user].id)
            step = f"{n} forget {user}"
        assert_exact(store, ever, step)


def test_the_rebuild_repairs_a_drifted_index_and_search_agrees(store):
    scope = individual(store, "u1")
    for content in ("Gene prefers rust.", "Gene drinks tea.", "The team deploys on fridays."):
        observation_add(store=store, scope=scope, content=content)
    store.search_index.replace_scope(ObjectId(scope.id), [], session=None)  # lost
    assert search_in_scopes(store=store, scopes=[scope], query="gene") == []
    assert rebuild_search_index(store=store, scope_id=scope.id) > 0
    assert_exact(store, {scope.id}, "rebuilt")
    hits = search_in_scopes(
        store=store, scopes=[store.scopes.get(ObjectId(scope.id))], query="gene"
    )
    assert {h.observation.content for h in hits} == {"Gene prefers rust.", "Gene drinks tea."}


def test_documents_of_the_earlier_layout_are_read_and_converted_on_write(store):
    """Term documents written before postings were packed (`p`: an array of
    subdocuments) are searched as they are and rewritten packed on their next change."""
    scope = individual(store, "u1")
    first = observation_add(store=store, scope=scope, content="Gene prefers rust.")
    store.search_index.fold({ObjectId(scope.id)})  # a single add's pending document: heads now
    key = f"{scope.id}:rust"
    store.search_index.collection.update_one(
        {"_id": key},
        {
            "$set": {"p": [{"o": ObjectId(first.id), "t": 1, "n": 3}]},
            "$unset": {"pb": ""},
        },
    )
    fresh = store.scopes.get(ObjectId(scope.id))
    hits = search_in_scopes(store=store, scopes=[fresh], query="rust")
    assert [h.observation.id for h in hits] == [first.id]
    second = observation_add(store=store, scope=fresh, content="Rust again.")
    store.search_index.fold({ObjectId(scope.id)})
    doc = store.search_index.collection.find_one({"_id": key})
    assert "p" not in doc and "ps" in doc
    assert_exact(store, {scope.id}, "converted")
    observation_delete(store=store, observation=second)
    assert_exact(store, {scope.id}, "converted, then a delete")


def test_the_rebuild_command(store):
    from io import StringIO

    from django.core.management import CommandError, call_command

    scope = individual(store, "u1")
    observation_add(store=store, scope=scope, content="Gene prefers rust.")
    store.search_index.replace_scope(ObjectId(scope.id), [], session=None)
    out = StringIO()
    call_command("rebuild_search_index", "--scope", scope.id, stdout=out)
    assert out.getvalue().strip() == f"{scope.id}: 4 index documents"  # 3 terms + totals
    assert_exact(store, {scope.id}, "rebuilt by the command")
    with pytest.raises(CommandError, match="not found"):
        call_command("rebuild_search_index", "--scope", str(ObjectId()), stdout=out)
    with pytest.raises(CommandError):
        call_command("rebuild_search_index", "--scope", "not-an-id", stdout=out)
