"""The context endpoint's retrieval against search on the dev conversations (part of
`retrieval_quality`): how often it fires and the recall of what it retrieves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from statistics import fmean

from benchmarks.harness import print_table
from benchmarks.locomo import AGENT, USER
from benchmarks.retrieval_loo import Dev, recall_at
from streams.context.assemble import context_assemble
from streams.search.ranking import FINAL
from streams.store import MemoryStore


def context_rows(devs: list[Dev]) -> None:
    """The context's retrieval against search, on the same questions and the same store:
    how often it fires; the recall@5 of what it retrieves (nothing when it does not);
    the recall@5 of its top 5 as the context shows it (the retrieved ones, and those of
    the top 5 it shows as recent already, which it does not repeat); the same where it
    fired; and of everything the context shows (retrieved and all ten recent)."""
    rows = []
    for d in devs:
        fired: list[bool] = []
        ranker = _context(d.store, fired, now=d.now)
        ranked = [ranker(q["question"]) for q in d.questions]
        retrieved = [r for r, _ in ranked]
        shown_top = [r[:5] + found for r, found in ranked]
        shown = _recent_turns(d)
        search = d.ranked(FINAL)
        strict = fmean(recall_at(q, r, 5) for q, r in zip(d.questions, retrieved, strict=True))
        context = fmean(recall_at(q, r, 10) for q, r in zip(d.questions, shown_top, strict=True))
        where = [i for i, f in enumerate(fired) if f]
        pairs = list(zip(d.questions, retrieved, strict=True))
        rows.append(
            [
                d.name,
                f"{sum(fired)}/{len(fired)} ({sum(fired) / len(fired):.1%})",
                f"{d.recall(FINAL):.3f}",
                f"{strict:.3f}",
                f"{context:.3f}",
                f"{context - d.recall(FINAL):+.3f}",
                f"{fmean(recall_at(d.questions[i], search[i], 5) for i in where):.3f}",
                f"{fmean(recall_at(d.questions[i], shown_top[i], 10) for i in where):.3f}",
                f"{fmean(recall_at(q, r[:5] + shown, 10**6) for q, r in pairs):.3f}",
            ]
        )
    print_table(
        "Context retrieval against search (final ranking; top 5)",
        [
            "conversation",
            "retrieval fired",
            "search recall@5",
            "context recall@5, retrieved only",
            "context recall@5 (its top 5: retrieved, or shown as recent)",
            "difference",
            "search recall@5 where fired",
            "context recall@5 where fired",
            "context: retrieved top 5 or any of the 10 recent",
        ],
        rows,
    )


def _recent_turns(d: Dev) -> list[str]:
    """The turns the context shows as recent (the user's newest pending observations)."""
    from bson import ObjectId

    from streams.context.assemble import RECENT_LIMIT

    scope = d.store.scopes.get(ObjectId(d.scopes[0].id))
    assert scope is not None, "seeded"
    ids = [ObjectId(i) for i in (scope.pending_observation_ids or [])]
    return [o.source_message_ids[0] for o in d.store.observations.get_many(ids[-RECENT_LIMIT:])]


def _context(
    store: MemoryStore, fired: list[bool], now: datetime | None = None
) -> Callable[[str], tuple[list[str], list[str]]]:
    """What `POST /context` retrieves for the question (nothing when it does not fire),
    and the recent turns it found in its top 5 (shown as recent, not repeated)."""
    from bson import ObjectId

    def rank(question: str) -> tuple[list[str], list[str]]:
        result = context_assemble(
            store=store,
            agent_id=AGENT,
            user_id=USER,
            message=question,
            now=now,
            log=False,
            record_access=False,
        )
        fired.append(result.decision.triggered)
        found = store.observations.get_many([ObjectId(i) for i in result.found_recent])
        return (
            [h.observation.source_message_ids[0] for h in result.hits],
            [o.source_message_ids[0] for o in found],
        )

    return rank
