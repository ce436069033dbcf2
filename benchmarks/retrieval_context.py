"""The context endpoint's retrieval against search on the dev conversations (part of
`retrieval_quality`): how often it fires and the recall of what it retrieves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from statistics import fmean

from benchmarks.harness import print_table
from benchmarks.retrieval_loo import Dev, recall_at
from streams.context.assemble import context_assemble
from streams.search.ranking import FINAL
from streams.store import MemoryStore


def context_rows(devs: list[Dev]) -> None:
    """The context's retrieval against search, on the same questions and the same store:
    how often it fires, the recall@5 of what it retrieves (nothing when it does not), the
    same where it fired, and of everything the context shows (retrieved and recent: the
    context's search leaves out what it already shows as recent)."""
    rows = []
    for d in devs:
        fired: list[bool] = []
        ranker = _context(d.store, fired, now=d.now)
        ranked = [ranker(q["question"]) for q in d.questions]
        shown = _recent_turns(d)
        search = d.ranked(FINAL)
        context = fmean(recall_at(q, r, 5) for q, r in zip(d.questions, ranked, strict=True))
        where = [i for i, f in enumerate(fired) if f]
        pairs = list(zip(d.questions, ranked, strict=True))
        rows.append(
            [
                d.name,
                f"{sum(fired)}/{len(fired)} ({sum(fired) / len(fired):.1%})",
                f"{d.recall(FINAL):.3f}",
                f"{context:.3f}",
                f"{context - d.recall(FINAL):+.3f}",
                f"{fmean(recall_at(d.questions[i], search[i], 5) for i in where):.3f}",
                f"{fmean(recall_at(d.questions[i], ranked[i], 5) for i in where):.3f}",
                f"{fmean(recall_at(q, r[:5] + shown, 10**6) for q, r in pairs):.3f}",
            ]
        )
    print_table(
        "Context retrieval against search (final ranking; top 5)",
        [
            "conversation",
            "retrieval fired",
            "search recall@5",
            "context recall@5",
            "difference",
            "search recall@5 where fired",
            "context recall@5 where fired",
            "context: retrieved top 5 or shown as recent",
        ],
        rows,
    )


def _recent_turns(d: Dev) -> list[str]:
    """The turns the context shows as recent (the user's newest pending observations)."""
    from bson import ObjectId

    from streams.context.assemble import RECENT_LIMIT

    scope = d.scopes[0]
    ids = [
        ObjectId(i) for i in (d.store.scopes.get(ObjectId(scope.id)).pending_observation_ids or [])
    ]
    return [o.source_message_ids[0] for o in d.store.observations.get_many(ids[-RECENT_LIMIT:])]


def _context(
    store: MemoryStore, fired: list[bool], now: datetime | None = None
) -> Callable[[str], list[str]]:
    """What `POST /context` retrieves for the question (nothing when it does not fire)."""
    from benchmarks.retrieval_quality import AGENT, USER  # it imports this module

    def rank(question: str) -> list[str]:
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
        return [h.observation.source_message_ids[0] for h in result.hits]

    return rank
