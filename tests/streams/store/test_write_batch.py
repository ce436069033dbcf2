"""A single add's writes after its log claim go to the store in one `bulkWrite`, in the
add's own transaction; a server without `bulkWrite` gets them one by one, with the same
result. Either way, a failed add leaves nothing behind."""

from __future__ import annotations

import threading

import pytest
from bson import ObjectId
from pymongo import InsertOne, MongoClient, UpdateOne, monitoring

from streams.actions import Actor
from streams.actions.tx import action_transaction
from streams.core.documents import utcnow
from streams.core.exceptions import Conflict
from streams.memory import window
from streams.memory.observation_batch import observation_add_once
from streams.memory.observations import observation_add
from streams.store import MemoryStore, search_pending, write_batch
from streams.store.query_guard import check_command
from streams.store.write_batch import WriteBatch
from tests.factories import ScopeFactory


class Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        collection = event.command.get(event.command_name)
        with self._lock:
            self.names.append(
                f"{event.command_name} {collection if isinstance(collection, str) else ''}".strip()
            )

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def listened(embedded_mongo, memory_db, monkeypatch):
    monkeypatch.setattr(window, "CHECK", False)  # the commands an add sends, no check's read
    commands = Commands()
    client = MongoClient(embedded_mongo.uri, tz_aware=True, event_listeners=[commands])
    yield MemoryStore(client, memory_db), commands
    client.close()


def _stored(store: MemoryStore, observation_id: str, agent_id: str) -> dict:
    """What one add left: the observation, its audit entry, postings, counters, day."""
    observation = store.observations.get(ObjectId(observation_id))
    audit = list(store.audit.collection.find({"object_id": observation_id}).limit(5))
    day = store.agent_days.on_day([agent_id], utcnow().date()).get(agent_id)
    agent = store.agents.get(agent_id)
    return {
        "content": observation.content if observation else None,
        "seq": observation.seq if observation else None,
        "audit": [(e["actor"], e["action"]) for e in audit],
        "observations": agent.observation_count,
        "pending": agent.pending_count,
        "day": day["observations"] if day else 0,
    }


def as_action(store):
    """The add run as an action's transaction (its entry is the action's, `ActionTx.audit`)."""
    return action_transaction(store, Actor.api("k"))


def test_an_add_claims_its_place_then_sends_its_other_writes_in_one_bulk_write(listened):
    store, commands = listened
    scope = ScopeFactory.create(store=store, agent_id="a1")
    commands.names.clear()

    with search_pending.held():  # the background fold shares this client
        observation = observation_add(
            store=store,
            scope=scope,
            content="Likes green tea.",
            actor="api:k",
            transact=as_action(store),
        )

    sent = [n for n in commands.names if n != "hello"]  # once per client: takes bulkWrite?
    # No dedup read (the unique text index catches a duplicate at the insert) and, in an
    # empty scope, no window: the claim first, answered at once.
    assert sent[0] == "update memory_scopes"
    assert "find memory_observations" not in sent
    assert sent.count("bulkWrite") == 1
    assert not [n for n in sent if n.startswith("insert")]
    assert sent[-2:] == ["bulkWrite", "commitTransaction"]
    assert _stored(store, observation.id, "a1") == {
        "content": "Likes green tea.",
        "seq": 1,
        "audit": [("api:k", "observation.create")],
        "observations": 1,
        "pending": 1,
        "day": 1,
    }
    found = store.search_index.read([ObjectId(scope.id)], ["green"])[1]
    assert [(t.term, t.document_frequency) for t in found] == [("green", 1)]


def test_the_add_that_fills_the_threshold_writes_its_job_in_the_same_bulk_write(listened):
    """The threshold's job commits with the add (a crash after the commit leaves it
    `queued` for the recovery sweep): one read of the active run inside the transaction
    and the job in the add's batch, nothing after the commit; a later add while that job
    is queued reads it and writes no second one."""
    store, commands = listened
    scope = ScopeFactory.create(store=store, agent_id="a1", consolidation_threshold=2)
    observation_add(
        store=store,
        scope=scope,
        content="Likes green tea.",
        actor="api:k",
        transact=as_action(store),
    )
    scope = store.scopes.get(ObjectId(scope.id))
    search_pending.flush()
    commands.names.clear()

    jobs: list = []
    with search_pending.held():  # the background fold shares this client
        observation_add(
            store=store,
            scope=scope,
            content="Walks the dog at six.",
            actor="api:k",
            follow_ups=jobs,
        )

    sent = [n for n in commands.names if n != "hello"]
    assert sent == [
        # No read of the newest ones (contradictions, near duplicates): the add before
        # left its observation in this process's window (`streams.memory.window`). So
        # the claim is the first command, sent alone (a `bulkWrite` may not be first).
        "update memory_scopes",
        "find memory_jobs",
        "bulkWrite",  # the add's writes and the job
        "commitTransaction",
    ]
    queued = list(store.jobs.collection.find({"scope_id": ObjectId(scope.id)}).limit(5))
    assert [(j["kind"], j["status"], j["trigger"]) for j in queued] == [
        ("consolidation", "queued", "threshold")
    ]
    assert [j.id for j in jobs] == [str(queued[0]["_id"])]

    scope = store.scopes.get(ObjectId(scope.id))
    commands.names.clear()
    more: list = []
    observation_add(
        store=store,
        scope=scope,
        content="Reads in the evening.",
        actor="api:k",
        follow_ups=more,
    )
    assert "find memory_jobs" in commands.names
    assert more == []
    assert store.jobs.collection.count_documents({"scope_id": ObjectId(scope.id)}) == 1


@pytest.mark.parametrize("batched", [True, False])
def test_a_duplicate_add_meets_the_unique_index_and_the_retry_answers_with_the_live_one(
    listened, monkeypatch, batched
):
    """The first attempt reads for the same text only when the window of newest texts
    holds it: older, the insert misses on the unique index, the transaction is aborted
    (nothing of it stays) and the retry reads and answers with the live observation.
    Either way a duplicate writes nothing: one audit entry, counts of one add each."""
    store, commands = listened
    monkeypatch.setattr(write_batch, "ENABLED", batched)
    monkeypatch.setattr(window, "SIMILAR_WINDOW", 1)
    scope = ScopeFactory.create(store=store, agent_id="a1")
    first = observation_add(
        store=store,
        scope=scope,
        content="Likes green tea.",
        actor="api:k",
        transact=as_action(store),
    )
    newest = observation_add(
        store=store, scope=scope, content="Walks the dog.", actor="api:k", transact=as_action(store)
    )
    scope = store.scopes.get(ObjectId(scope.id))
    commands.names.clear()

    with search_pending.held():  # the background fold shares this client
        again = observation_add(
            store=store,
            scope=scope,
            content="likes  GREEN tea",
            actor="api:k",
            transact=as_action(store),
        )
        out_of_window = list(commands.names)
        commands.names.clear()
        resent = observation_add(
            store=store,
            scope=scope,
            content="Walks the dog.",
            actor="api:k",
            transact=as_action(store),
        )
        in_window = [n for n in commands.names if n != "hello"]

    assert again.id == first.id and again.duplicate
    assert "abortTransaction" in out_of_window
    assert resent.id == newest.id and resent.duplicate
    assert in_window == [
        # The window (kept by this process since its last add) holds this text, so the
        # live one is read at once.
        "find memory_observations",
        "commitTransaction",
    ]
    assert _stored(store, first.id, "a1") == {
        "content": "Likes green tea.",
        "seq": 1,
        "audit": [("api:k", "observation.create")],
        "observations": 2,
        "pending": 2,
        "day": 2,
    }
    assert store.observations.collection.count_documents({"scope_id": ObjectId(scope.id)}) == 2
    assert store.scopes.get(ObjectId(scope.id)).pending_count == 2


def test_a_keyed_add_sends_its_writes_and_its_key_in_one_bulk_write(listened):
    """`client_id` adds: the key's read (the window is the one this process kept), then
    the claim, the observation, the key, the audit entry, the counters in one `bulkWrite`. The same
    fact under another key answers the kept observation, and that key names it."""
    store, commands = listened
    scope = ScopeFactory.create(store=store, agent_id="a1")
    first, created = observation_add_once(
        store=store,
        scope=scope,
        content="Likes green tea.",
        client_id="k1",
        actor="api:k",
        transact=as_action(store),
    )
    assert created
    scope = store.scopes.get(ObjectId(scope.id))  # as the API reads it for each request
    commands.names.clear()

    with search_pending.held():  # the background fold shares this client
        second, created = observation_add_once(
            store=store,
            scope=scope,
            content="Walks the dog.",
            client_id="k2",
            actor="api:k",
            transact=as_action(store),
        )
    sent = [n for n in commands.names if n != "hello"]
    assert created
    assert sent == [
        "find memory_observation_client_ids",
        # no window read: the keyed add before left its observation in this process's
        "bulkWrite",
        "commitTransaction",
    ]

    again, created = observation_add_once(
        store=store,
        scope=scope,
        content="likes green TEA",
        client_id="k3",
        actor="api:k",
        transact=as_action(store),
    )
    assert (again.id, created) == (first.id, False)
    repeat, created = observation_add_once(
        store=store,
        scope=scope,
        content="likes green TEA",
        client_id="k3",
        actor="api:k",
        transact=as_action(store),
    )
    assert (repeat.id, created) == (first.id, False)
    assert _stored(store, second.id, "a1") == {
        "content": "Walks the dog.",
        "seq": 2,
        "audit": [("api:k", "observation.create")],
        "observations": 2,
        "pending": 2,
        "day": 2,
    }


def test_without_bulk_write_the_writes_go_one_by_one_with_the_same_result(listened, monkeypatch):
    store, commands = listened
    monkeypatch.setattr(write_batch, "ENABLED", False)
    scope = ScopeFactory.create(store=store, agent_id="a1")
    commands.names.clear()

    with search_pending.held():  # the background fold shares this client
        observation = observation_add(
            store=store,
            scope=scope,
            content="Likes green tea.",
            actor="api:k",
            transact=as_action(store),
        )

    assert "bulkWrite" not in commands.names
    assert "insert memory_observations" in commands.names
    assert "insert memory_audit" in commands.names
    assert _stored(store, observation.id, "a1") == {
        "content": "Likes green tea.",
        "seq": 1,
        "audit": [("api:k", "observation.create")],
        "observations": 1,
        "pending": 1,
        "day": 1,
    }


def test_consecutive_adds_from_one_stale_read_each_take_the_next_number(listened):
    store, _ = listened
    scope = ScopeFactory.create(store=store, agent_id="a1")

    added = [
        observation_add(
            store=store, scope=scope, content=f"Fact {n}.", actor="api:k", transact=as_action(store)
        )
        for n in range(3)
    ]

    assert [o.seq for o in added] == [1, 2, 3]
    assert store.agents.get("a1").observation_count == 3


def test_a_duplicate_key_in_a_batch_is_a_conflict_and_the_transaction_writes_nothing(store):
    namespace = store.audit.collection.full_name
    same = ObjectId()

    def work(session):
        batch = WriteBatch.for_session(store.client, session)
        assert batch is not None  # the embedded store takes client-level bulkWrite
        store.agents.collection.find_one({"_id": "nobody"}, session=session)  # not first
        batch.add(InsertOne({"_id": same, "action": "x"}, namespace=namespace))
        batch.add(InsertOne({"_id": same, "action": "y"}, namespace=namespace))
        batch.flush()

    with pytest.raises(Conflict):
        store.in_transaction(work)
    assert store.audit.collection.find_one({"_id": same}) is None


def test_a_conditional_update_of_a_batch_that_misses_is_a_conflict_and_undoes_the_rest(store):
    namespace = store.audit.collection.full_name
    written = ObjectId()

    def work(session):
        batch = WriteBatch.for_session(store.client, session)
        assert batch is not None
        store.agents.collection.find_one({"_id": "nobody"}, session=session)  # not first
        batch.add(
            UpdateOne({"_id": "nobody"}, {"$set": {"n": 1}}, namespace=namespace),
            must_match=True,
        )
        batch.add(InsertOne({"_id": written, "action": "x"}, namespace=namespace))
        batch.flush()

    with pytest.raises(Conflict):
        store.in_transaction(work)
    assert store.audit.collection.find_one({"_id": written}) is None


def test_adds_from_one_stale_read_claim_in_the_batch_and_each_take_the_next_number(listened):
    """The first add finds its window kept (the add before put it there): nothing read, so
    its claim goes alone. The second one's stale scope is older than that window, which
    is read again: its claim rides in the `bulkWrite`, misses there, the transaction is
    aborted and the retry claims anew."""
    store, commands = listened
    scope = ScopeFactory.create(store=store, agent_id="a1")
    observation_add(
        store=store, scope=scope, content="Fact zero.", actor="api:k", transact=as_action(store)
    )
    stale = store.scopes.get(ObjectId(scope.id))
    commands.names.clear()

    with search_pending.held():  # the background fold shares this client
        added = [
            observation_add(
                store=store,
                scope=stale,
                content=f"Fact {n}.",
                actor="api:k",
                transact=as_action(store),
            )
            for n in (1, 2)
        ]

    assert commands.names.count("update memory_scopes") == 1  # the first add's, alone
    assert "abortTransaction" in commands.names  # the second one's stale claim
    assert [o.seq for o in added] == [2, 3]
    fresh = store.scopes.get(ObjectId(scope.id))
    assert (fresh.observation_seq, fresh.pending_count) == (3, 3)
    assert store.agents.get("a1").observation_count == 3


def test_the_query_guard_checks_the_filters_inside_a_bulk_write():
    catalog = {}
    from streams.store import DECLARED_INDEXES

    for spec in DECLARED_INDEXES:
        catalog.setdefault(spec.collection, []).append(spec)
    command = {
        "bulkWrite": 1,
        "nsInfo": [{"ns": "db.memory_audit"}, {"ns": "db.memory_agents"}],
        "ops": [
            {"insert": 0, "document": {"_id": 1}},
            {"update": 1, "filter": {"_id": "a1"}, "updateMods": {"$inc": {"n": 1}}},
        ],
    }
    assert check_command("bulkWrite", command, catalog) is None
    command["ops"].append(
        {"update": 1, "filter": {"display_name": "x"}, "updateMods": {"$set": {"n": 0}}}
    )
    problem = check_command("bulkWrite", command, catalog)
    assert problem is not None and "memory_agents" in problem
