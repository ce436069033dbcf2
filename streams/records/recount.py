"""Repair counters from what is stored: sessions' unformed counters, agents' dashboard totals.

Ingest, formation and forget-user keep the session counters exact (each changes
messages and counters in one transaction); this is for what a crash or an older
version left behind, and it is safe to run at any time: each session is
recounted in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from streams.store import MemoryStore, StoreSession

PAGE = 500


@dataclass
class RecountReport:
    sessions: int = 0
    sessions_changed: int = 0
    agents: int = 0
    agents_changed: int = 0


def recount(*, store: MemoryStore, min_messages: int) -> RecountReport:
    report = RecountReport()
    after = None
    while True:
        ids = store.sessions.buffer_ids(after=after, limit=PAGE)
        for buffer_id in ids:
            before = store.sessions.buffer_counters(buffer_id)

            def recount_one(
                session: StoreSession, bid: ObjectId = buffer_id
            ) -> dict[str, Any] | None:
                return store.sessions.recount(bid, min_messages=min_messages, session=session)

            after_count = store.in_transaction(recount_one, attempts=5)
            report.sessions += 1
            if (
                before
                and after_count
                and (
                    before.get("unformed_count") != after_count["unformed_count"]
                    or abs(before.get("unformed_tokens", 0.0) - after_count["unformed_tokens"])
                    > 1e-6
                )
            ):
                report.sessions_changed += 1
        if len(ids) < PAGE:
            break
        after = ids[-1]
    repo = store.recount
    agent_after = None
    while True:
        agents = store.agents.list_page(after=agent_after, limit=PAGE)
        for agent in agents:
            totals = repo.scope_totals(agent.id)
            report.agents += 1
            if (agent.scope_count, agent.observation_count, agent.pending_count) != (
                totals["scopes"],
                totals["observations"],
                totals["pending"],
            ):
                report.agents_changed += 1
                store.agents.set_counters(agent.id, **totals)
        if len(agents) < PAGE:
            break
        agent_after = agents[-1].id
    return report
