"""Concurrent adds for one agent: each in its own scope, none refused, the counters exact.

Every add counts itself on the agent and on the agent's day inside its transaction;
one counter document per agent made every pair of concurrent adds a write conflict
(retried, and past the retry window a 503). Counter shards (`streams.store.counter_shards`)
spread those increments; the reads sum them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pymongo import MongoClient, monitoring

from streams.actions import Actor
from streams.actions.observations import do_observation_add
from streams.core.documents import Observation, Scope, utcnow
from streams.records.activity import activity_days
from streams.store import MemoryStore
from streams.store.counter_shards import SHARDS, THREADS_PER_PROCESS, shard_of
from tests.factories import ScopeFactory

CLIENTS = 16
ADDS_EACH = 4
WRITE_CONFLICT = 112


class Conflicts(monitoring.CommandListener):
    """How many commands the store refused with a write conflict."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if event.failure.get("code") == WRITE_CONFLICT:
            with self.lock:
                self.count += 1


def group_scopes(store, agent_id: str) -> list[Scope]:
    return [ScopeFactory.create(store=store, agent_id=agent_id, group=True) for _ in range(CLIENTS)]


def adds_at_once(
    embedded_mongo, memory_db, scopes: list[Scope], content: Callable[[int, int], str]
) -> tuple[list[Observation], int]:
    """A thread per scope, each adding `ADDS_EACH` observations (`content(client, k)`),
    all at once; what they added and how many commands the store refused with a write
    conflict meanwhile."""
    conflicts = Conflicts()
    client = MongoClient(embedded_mongo.uri, tz_aware=True, event_listeners=[conflicts])
    adding = MemoryStore(client, memory_db)
    start = threading.Barrier(CLIENTS)
    actor = Actor.api("bench")

    def adder(n: int) -> list[Observation]:
        start.wait()  # all at once: the adds overlap
        return [
            do_observation_add(store=adding, actor=actor, scope=scopes[n], content=content(n, k))
            for k in range(ADDS_EACH)
        ]

    with ThreadPoolExecutor(CLIENTS) as pool:
        added = [o for batch in pool.map(adder, range(CLIENTS)) for o in batch]
    client.close()
    return added, conflicts.count


def test_sixteen_threads_adding_for_one_agent_all_succeed_and_the_counters_sum_exactly(
    store, embedded_mongo, memory_db
):
    scopes = group_scopes(store, "busy")
    before = store.agents.get("busy")
    assert before is not None
    added, conflicts = adds_at_once(
        embedded_mongo, memory_db, scopes, lambda n, k: f"Client {n} fact {k}."
    )

    assert len({o.id for o in added}) == CLIENTS * ADDS_EACH
    # One counter document per agent and day: ~5 conflicts per add (318 for these 64).
    # On shards only what else the adds share is left (a few in a run).
    assert conflicts < CLIENTS * ADDS_EACH // 2
    after = store.agents.get("busy")
    assert after is not None
    assert after.observation_count - before.observation_count == CLIENTS * ADDS_EACH
    assert after.pending_count - before.pending_count == CLIENTS * ADDS_EACH
    assert after.scope_count == CLIENTS
    (today,) = activity_days(store=store, agent_id="busy", last=utcnow().date(), days=1)
    assert today.observations == CLIENTS * ADDS_EACH
    # The dashboard's busiest agent reads the same sums.
    busiest = store.agents.busiest()
    assert busiest is not None and busiest.id == "busy"
    assert busiest.observation_count == after.observation_count


def test_concurrent_adds_held_for_review_count_on_shards_too(store, embedded_mongo, memory_db):
    """A held add takes itself back off the pending count (it waits for a person): written
    on the agent's own document, every concurrent add with a held item conflicted on it."""
    scopes = group_scopes(store, "held")
    before = store.agents.get("held")
    assert before is not None
    added, conflicts = adds_at_once(
        embedded_mongo,
        memory_db,
        scopes,
        lambda n, k: f"Client {n}'s on-call phone {k} is +44 20 7946 0{n:02d}{k}.",
    )

    assert [o.status for o in added] == ["in_review"] * (CLIENTS * ADDS_EACH)
    assert conflicts < CLIENTS * ADDS_EACH // 2
    after = store.agents.get("held")
    assert after is not None
    assert after.observation_count - before.observation_count == CLIENTS * ADDS_EACH
    assert after.pending_count == before.pending_count  # held: none of them pending


def test_the_busiest_agent_counts_its_shards_and_recount_keeps_the_sums_exact(store):
    quiet = ScopeFactory.create(store=store, agent_id="quiet", group=True)
    busy = ScopeFactory.create(store=store, agent_id="busy", group=True)
    store.agents.set_counters("quiet", scopes=1, observations=5, pending=0)  # base only
    actor = Actor.api("k")
    for n in range(6):  # on the shards: the base of "busy" stays 0
        do_observation_add(store=store, actor=actor, scope=busy, content=f"Busy fact {n}.")

    busiest = store.agents.busiest()
    assert busiest is not None and (busiest.id, busiest.observation_count) == ("busy", 6)

    store.agents.set_counters("busy", scopes=1, observations=6, pending=6)  # what recount sets
    agent = store.agents.get("busy")
    assert agent is not None and (agent.observation_count, agent.pending_count) == (6, 6)
    do_observation_add(store=store, actor=actor, scope=quiet, content="Quiet fact.")
    assert store.agents.get("quiet").observation_count == 6
    assert [a.observation_count for a in store.agents.list_page(after=None, limit=10)] == [6, 6]


def test_the_threads_of_consecutive_workers_take_disjoint_shards():
    """gunicorn's workers have consecutive process ids and 4 threads each: three or four of
    them share no counter shard (offset by the bare pid, worker 2's first thread took
    worker 1's second shard)."""
    for first in (4242, 4243, 7, 65535):
        for workers in (3, 4):
            slots = [
                shard_of(first + w, turn)
                for w in range(workers)
                for turn in range(THREADS_PER_PROCESS)
            ]
            assert len(set(slots)) == len(slots) <= SHARDS, (first, workers, slots)
