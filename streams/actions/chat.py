"""The chat proxy's action: file a finished turn (its call record and its ingest job).

The turn's audit entry is the ingest's (`session.ingest`, "via": "chat"), written when
its job buffers the messages; filing it writes the record and the job in one
transaction, and the caller (the after-answer thread, outside any request) dispatches
the job, or the recovery sweep does if the process dies first. Text removed while the
upstream was answering is scrubbed from the new record by a `chat_catch_up` job written
in the same transaction (ids and digests, never the quoted words), so a crash after the
commit still leaves it to the recovery sweep.
"""

from __future__ import annotations

import logging

from streams.actions.base import Actor, schedule
from streams.actions.tx import ActionTx, run_action
from streams.context.chat import ChatOutcome, ChatTurn, chat_turn_finish
from streams.core.documents import Job
from streams.jobs import JobRun, job_create
from streams.records.context_scrub import chat_catch_up, quoted_digest
from streams.store import MemoryStore

logger = logging.getLogger("streams.chat")


def do_chat_turn_finish(
    *,
    store: MemoryStore,
    turn: ChatTurn,
    outcome: ChatOutcome,
    also: list[Job] | None = None,
) -> Job | None:
    """The turn's ingest job (None when the turn is not learnt from), for the caller to
    dispatch once this returns; its `chat_catch_up` job goes to `also` (the caller's to
    dispatch too) or, without it, to the dispatcher."""

    def write(tx: ActionTx) -> Job | None:
        job = tx.schedule(
            chat_turn_finish(store=store, turn=turn, outcome=outcome, session=tx.session)
        )
        if turn.quoted_texts and turn.context:
            tx.schedule(_catch_up_job(store, turn, tx))
        return job

    jobs: list[Job] = []
    job = run_action(store, Actor.parse(turn.actor), write, follow_ups=jobs)
    catch_up = [j for j in jobs if j.kind == "chat_catch_up"]
    if also is not None:
        also.extend(catch_up)
    else:
        schedule(catch_up)
    return job


def _catch_up_job(store: MemoryStore, turn: ChatTurn, tx: ActionTx) -> Job:
    """The outbox job that checks the record against removals made meanwhile."""
    quoted = turn.quoted_texts
    return job_create(
        store=store,
        kind="chat_catch_up",
        agent_id=turn.agent_id,
        trigger="chat",
        payload={
            "call_id": turn.call_id,
            "digests": {k: quoted_digest(v) for k, v in quoted.items() if ":" not in k},
            "versions": sorted(k for k in quoted if ":" in k),
        },
        session=tx.session,
    )


def chat_catch_up_run(*, store: MemoryStore, run: JobRun) -> None:
    """The `chat_catch_up` job's work (`memory_admin.tasks.run_chat_catch_up`)."""
    payload = run.job.payload
    run.result = {
        "rewritten": chat_catch_up(
            store=store,
            call_id=str(payload["call_id"]),
            digests=dict(payload.get("digests") or {}),
            versions=list(payload.get("versions") or []),
        )
    }
