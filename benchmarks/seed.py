"""Bulk seeding for benchmarks: scopes and observations straight through the documents'
converters and `insert_many` (the services would take hours for a million observations)."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta

from streams.core.documents import Observation, Scope, utcnow
from streams.search.index import search_index_build
from streams.store import MemoryStore

WORDS = [
    "rust",
    "python",
    "deploy",
    "friday",
    "team",
    "billing",
    "invoice",
    "lisbon",
    "kyoto",
    "window",
    "seat",
    "vegetarian",
    "okta",
    "sso",
    "linux",
    "wayland",
    "dark",
    "mode",
    "export",
    "csv",
    "planning",
    "standup",
    "kubernetes",
    "postgres",
    "interview",
    "lifetimes",
    "neovim",
    "tea",
    "coffee",
    "morning",
    "flight",
    "hotel",
    "budget",
    "euros",
]

# Contents: 12 words drawn Zipf-like from the seed's words followed by 3,000 rarer ones, so
# a batch shares its common terms (as real text does) but not all of them.
VOCABULARY = [*WORDS, *(f"topic{n}" for n in range(3_000))]


def content(rng: random.Random) -> str:
    """Rank r drawn with probability about 1/r (log-uniform): Zipf's law of word use."""
    picks = (int(len(VOCABULARY) ** rng.random()) - 1 for _ in range(12))
    return " ".join(VOCABULARY[i] for i in picks).capitalize() + "."


BATCH = 5000
PROGRESS_EVERY = 100_000  # a line per this many, for long seeds


def seed(
    store: MemoryStore,
    *,
    agent_id: str,
    scopes: int,
    observations: int,
    search_index: bool = True,
) -> float:
    """Seed `scopes` individual scopes holding `observations` in all; the seconds it took.

    With `search_index` the observations are indexed for search too, as every write
    through the services is (the index documents are built whole, per scope).
    """
    started = time.perf_counter()
    rng = random.Random(1)
    now = utcnow()
    store.ensure_indexes()
    store.agents.ensure(agent_id, now=now)
    counts = [observations // scopes + (i < observations % scopes) for i in range(scopes)]
    scope_docs = _scopes(agent_id, counts, now)
    for start in range(0, scopes, BATCH):
        store.seeding.insert_many(
            "scopes", [s.to_mongo() for s in scope_docs[start : start + BATCH]]
        )
    batch: list[Observation] = []
    written = 0
    for scope in scope_docs:
        batch += _observations(scope, rng, now)
        if len(batch) >= BATCH:  # at a scope's end: a scope's index is built in one piece
            before, written = written, _flush(store, batch, search_index, written)
            _progress(before, written, observations, started)
    if batch:
        before, written = written, _flush(store, batch, search_index, written)
        _progress(before, written, observations, started)
    store.agents.set_counters(agent_id, scopes=scopes, observations=observations, pending=0)
    store.seeding.update_one("agents", {"_id": agent_id}, {"$set": {"scope_seq": scopes}})
    return time.perf_counter() - started


def _scopes(agent_id: str, counts: list[int], now: datetime) -> list[Scope]:
    """One individual scope per count, numbered from 1, its log as long as its count."""
    return [
        Scope(
            agent_id=agent_id,
            scope_type="individual",
            user_id=f"bench-user-{i}",
            display_name=f"User {i}",
            seq=i + 1,
            observation_seq=count,
            observation_count=count,
            created_at=now,
            last_activity_at=now,
        )
        for i, count in enumerate(counts)
    ]


def _observations(scope: Scope, rng: random.Random, now: datetime) -> list[Observation]:
    """The scope's consolidated log of random twelve-word notes, a minute apart."""
    return [
        Observation(
            scope_id=scope.id,
            agent_id=scope.agent_id,
            content=" ".join(rng.choice(WORDS) for _ in range(12)),
            observed_at=now - timedelta(minutes=seq),
            created_at=now,
            related_user_ids=[scope.user_id or ""],
            consolidated=True,
            seq=seq,
        )
        for seq in range(1, scope.observation_seq + 1)
    ]


def _flush(store: MemoryStore, batch: list[Observation], search_index: bool, written: int) -> int:
    """Insert the batch (and its search postings) and empty it; how many are written now."""
    store.seeding.insert_many("observations", [o.to_mongo() for o in batch], ordered=False)
    if search_index:
        search_index_build(store=store, observations=batch)
    written += len(batch)
    batch.clear()
    return written


def _progress(before: int, written: int, observations: int, started: float) -> None:
    """A line each PROGRESS_EVERY observations, for seeds that long."""
    if observations >= PROGRESS_EVERY and written // PROGRESS_EVERY > before // PROGRESS_EVERY:
        print(f"  seeded {written:,} in {time.perf_counter() - started:.0f} s", flush=True)
