"""The chat proxy's action: file a finished turn (its call record and its ingest job).

The turn's audit entry is the ingest's (`session.ingest`, "via": "chat"), written when
its job buffers the messages; filing it writes the record and the job in one
transaction, and the caller (the after-answer thread, outside any request) dispatches
the job, or the recovery sweep does if the process dies first. Text removed while the
upstream was answering is scrubbed from the new record right after (`context_log_catch_up`).
"""

from __future__ import annotations

import logging

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.context.chat import ChatOutcome, ChatTurn, chat_turn_finish
from streams.core.documents import Job
from streams.records.context_scrub import context_log_catch_up
from streams.store import MemoryStore

logger = logging.getLogger("streams.chat")


def do_chat_turn_finish(*, store: MemoryStore, turn: ChatTurn, outcome: ChatOutcome) -> Job | None:
    """The turn's ingest job (None when the turn is not learnt from), for the caller to
    dispatch once this returns."""

    def write(tx: ActionTx) -> Job | None:
        return tx.schedule(
            chat_turn_finish(store=store, turn=turn, outcome=outcome, session=tx.session)
        )

    jobs: list[Job] = []
    job = run_action(store, Actor.parse(turn.actor), write, follow_ups=jobs)
    if turn.quoted_texts:
        try:  # a removal made while the upstream answered missed this record
            context_log_catch_up(store=store, quoted_texts=turn.quoted_texts)
        except Exception:
            logger.exception("chat %s: the removed-text check failed", turn.call_id)
    return job
