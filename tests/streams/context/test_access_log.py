"""Context calls' access counts, written behind: summed per observation, none lost on a clean
exit, none counted twice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.core.documents import utcnow
from streams.memory.observations import observation_get
from streams.store import MemoryStore, access_log
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-access"
ROOT = Path(__file__).resolve().parents[3]


def _written_behind(store: MemoryStore) -> MemoryStore:
    return MemoryStore(store.client, store.db.name, access_flush_seconds=30.0)


def test_accesses_of_several_calls_are_summed_per_observation_with_the_latest_time(
    store: MemoryStore,
) -> None:
    scope = ScopeFactory(store=store, agent_id=AGENT, scope_type="individual", user_id="u1")
    often = ObservationFactory(store=store, scope=scope, content="Mel climbs on Sundays")
    once = ObservationFactory(store=store, scope=scope, content="Mel reads on Mondays")
    behind = _written_behind(store)
    first, later = utcnow(), utcnow() + timedelta(seconds=5)

    behind.observations.record_access([ObjectId(often.id), ObjectId(once.id)], now=later)
    behind.observations.record_access([ObjectId(often.id)], now=first)
    behind.observations.record_access([ObjectId(often.id)], now=first)
    access_log.flush()

    stored = eventually(
        lambda: observation_get(store=store, observation_id=often.id),
        until=lambda o: o.access_count == 3,
    )
    assert stored.last_accessed_at is not None
    assert abs(stored.last_accessed_at - later) < timedelta(milliseconds=1)  # the latest
    stored_once = eventually(
        lambda: observation_get(store=store, observation_id=once.id),
        until=lambda o: o.access_count == 1,
    )
    access_log.flush()  # nothing left: a second flush writes nothing again
    assert observation_get(store=store, observation_id=often.id).access_count == 3
    assert stored_once.access_count == 1


def test_a_context_call_counts_each_retrieved_observation_once_within_the_interval(
    store: MemoryStore,
) -> None:
    scope = ScopeFactory(store=store, agent_id=AGENT, scope_type="individual", user_id="u1")
    hit = ObservationFactory(store=store, scope=scope, content="Gene reads a Rust book")
    store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
    behind = MemoryStore(store.client, store.db.name, access_flush_seconds=0.2)

    for _ in range(2):
        result = context_assemble(
            store=behind, agent_id=AGENT, user_id="u1", message="What did I tell you about Rust?"
        )
        assert [h.observation.id for h in result.hits] == [hit.id]

    # The flusher thread writes within its interval, without anyone calling `flush`.
    stored = eventually(
        lambda: observation_get(store=store, observation_id=hit.id),
        until=lambda o: o.access_count == 2,
    )
    assert stored.last_accessed_at is not None


def test_a_process_that_exits_cleanly_writes_its_pending_accesses(store: MemoryStore) -> None:
    scope = ScopeFactory(store=store, agent_id=AGENT, scope_type="individual", user_id="u1")
    observation = ObservationFactory(store=store, scope=scope, content="Mel climbs")
    uri = os.environ["MEMORY_TEST_MONGODB_URI"]
    script = textwrap.dedent(
        f"""
        from bson import ObjectId
        from streams.core.documents import utcnow
        from streams.store import MemoryStore
        from streams.store.client import get_client

        store = MemoryStore(get_client({uri!r}), {store.db.name!r}, access_flush_seconds=3600)
        for _ in range(4):
            store.observations.record_access([ObjectId({observation.id!r})], now=utcnow())
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)

    stored = eventually(
        lambda: observation_get(store=store, observation_id=observation.id),
        until=lambda o: o.access_count == 4,
    )
    assert stored.access_count == 4
