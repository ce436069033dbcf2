"""The LoCoMo conversation the retrieval benchmarks share: its data, its turns as stored
observations, our ranking over them and a table row of recall and hit.

Its own module so that `retrieval_quality` (which runs the others) and the benchmarks it
runs (`retrieval_loo`, `retrieval_context`, `retrieval_lifecycle`, `search_scale`,
`retrieval_semantic`) all import it and none imports back: no import cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean
from typing import Any

from streams.core.documents import Observation
from streams.memory.observations import append_in_transaction
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.search.index import search_observations
from streams.search.ranking import Ranking
from streams.store import MemoryStore

DATA = Path("/work/shared/data/locomo-dev/conv-26.json")
DEV = sorted(DATA.parent.glob("conv-*.json"))  # the dev conversations (lifecycle stages)
AGENT = "bench-agent"
USER = "locomo-user"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)


def _turns(conversation: dict) -> list[tuple[str, str, datetime]]:
    """(turn id, text, session time) of every turn, in order."""
    turns = []
    n = 1
    while f"session_{n}" in conversation:
        when = datetime.strptime(
            conversation[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y"
        ).replace(tzinfo=UTC)
        for turn in conversation[f"session_{n}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append((turn["dia_id"], text, when))
        n += 1
    return turns


def turn_observations(
    scope_id: str, turns: list[tuple[str, str, datetime]], **extra: Any
) -> list[Observation]:
    """One observation per conversation turn, keeping its session and turn id."""
    return [
        Observation(
            scope_id=scope_id,
            agent_id=AGENT,
            content=text,
            observed_at=when,
            created_at=when,
            source_session_id=turn_id.split(":")[0],  # "D3:5": turn 5 of session 3
            source_message_ids=[turn_id],
            related_user_ids=[USER],
            **extra,
        )
        for turn_id, text, when in turns
    ]


def _load(store: MemoryStore, turns: list[tuple[str, str, datetime]]) -> None:
    store.ensure_indexes()
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, USER))
    observations = turn_observations(scope.id, turns)
    for start in range(0, len(observations), 25):
        batch = observations[start : start + 25]
        append_in_transaction(
            store=store, scope_id=scope.id, observations=batch, now=batch[0].created_at
        )


def _ours(
    store: MemoryStore,
    ranking: Ranking,
    timings: list[float] | None = None,
    now: datetime | None = None,
) -> Callable[[str], list[str]]:
    def rank(question: str) -> list[str]:
        started = time.perf_counter()
        hits = search_observations(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            query=question,
            limit=max(KS),
            record_access=False,
            ranking=ranking,
            now=now,
        )
        if timings is not None:
            timings.append((time.perf_counter() - started) * 1000)
        return [h.observation.source_message_ids[0] for h in hits]

    return rank


def _row(
    name: str,
    category: int | None,
    chosen: list[int],
    questions: list[dict],
    ranked: dict[int, list[str]],
) -> list[object]:
    def recall(i: int, k: int) -> float:
        evidence = set(questions[i]["evidence"])
        return len(evidence & set(ranked[i][:k])) / len(evidence) if evidence else 0.0

    def hit(i: int, k: int) -> float:
        return 1.0 if set(questions[i]["evidence"]) & set(ranked[i][:k]) else 0.0

    label = "all" if category is None else f"{category} {CATEGORIES[category]}"
    return [
        name,
        label,
        len(chosen),
        *(f"{fmean(recall(i, k) for i in chosen):.3f}" for k in KS),
        f"{fmean(hit(i, 5) for i in chosen):.3f}",
    ]
