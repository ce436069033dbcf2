"""The persistence package: the only code in the project that talks to pymongo.

`MemoryStore` bundles one repository per collection over one database. Each
repository module declares the indexes its queries need (`INDEXES`), and
`MemoryStore.ensure_indexes` applies them all.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pymongo import MongoClient
from pymongo.client_session import ClientSession
from pymongo.errors import ConnectionFailure, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from streams.exceptions import Conflict, Unavailable
from streams.store import (
    agent_days,
    agents,
    audit,
    bulk,
    chat_calls,
    client_ids,
    consolidations,
    embeddings,
    jobs,
    observations,
    privacy,
    prompt_checks,
    prompts,
    scopes,
    search,
    session_samples,
    sessions,
    usage,
    user_names,
    visible_scopes,
)
from streams.store.indexes import IndexSpec, apply_indexes

T = TypeVar("T")
# What a store call raises when the store fails (unreachable, timed out): callers that
# degrade gracefully (the chat proxy without memory) catch this, not pymongo's names.
StoreError = PyMongoError
StoreSession = ClientSession  # what services pass through to repositories inside a transaction

DECLARED_INDEXES: list[IndexSpec] = [
    *agents.INDEXES,
    *scopes.INDEXES,
    *observations.INDEXES,
    *consolidations.INDEXES,
    *jobs.INDEXES,
    *sessions.INDEXES,
    *prompts.INDEXES,
    *prompt_checks.INDEXES,
    *session_samples.INDEXES,
    *agent_days.INDEXES,
    *audit.INDEXES,
    *privacy.INDEXES,
    *bulk.INDEXES,
    *search.INDEXES,
    *embeddings.INDEXES,
    *visible_scopes.INDEXES,
    *client_ids.INDEXES,
    *chat_calls.INDEXES,
    *user_names.INDEXES,
    *usage.INDEXES,
]


class MemoryStore:
    """The memory collections of one database, reached through one process-wide client."""

    def __init__(
        self,
        client: MongoClient,
        db_name: str,
        *,
        scope_defaults: dict[str, Any] | None = None,
        prices: dict[str, tuple[float, float]] | None = None,
        access_flush_seconds: float = 0.0,
    ) -> None:
        self.client = client
        self.db = client[db_name]
        # Settings new scopes start with (MEMORY_CONSOLIDATION_THRESHOLD, _MAX_WORDS).
        self.scope_defaults = dict(scope_defaults or {})
        self.agents = agents.AgentRepository(self.db)
        self.scopes = scopes.ScopeRepository(self.db)
        # Context calls' access counts: written behind, summed, within this many seconds.
        self.observations = observations.ObservationRepository(
            self.db, access_flush_seconds=access_flush_seconds
        )
        self.consolidations = consolidations.ConsolidationRepository(self.db)
        self.jobs = jobs.JobRepository(self.db)
        self.sessions = sessions.SessionRepository(self.db)
        self.prompts = prompts.PromptRepository(self.db)
        self.prompt_checks = prompt_checks.PromptCheckRepository(self.db)
        self.session_samples = session_samples.SessionSampleRepository(self.db)
        self.search_index = search.SearchIndexRepository(self.db)
        self.embeddings = embeddings.EmbeddingRepository(self.db)
        self.visible_scopes = visible_scopes.VisibleScopeReader(self.db)
        self.agent_days = agent_days.AgentDayRepository(self.db)
        self.audit = audit.AuditRepository(self.db)
        self.client_ids = client_ids.ClientIdRepository(self.db)
        self.chat_calls = chat_calls.ChatCallRepository(self.db)
        self.user_names = user_names.UserNameRepository(self.db)
        self.usage = usage.UsageRepository(self.db)
        # USD per million tokens in and out, per model (MEMORY_LLM_PRICES): usage cost.
        self.prices = dict(prices or {})

    def ensure_indexes(self) -> list[str]:
        return apply_indexes(self.db, DECLARED_INDEXES)

    def ping(self) -> None:
        try:
            self.client.admin.command("ping")
        except PyMongoError as exc:
            # The driver's text (hosts, topology) stays in the chained cause, for the log.
            raise Unavailable("the memory store is unreachable") from exc

    def in_transaction(self, work: Callable[[ClientSession], T], *, attempts: int = 1) -> T:
        """Run `work` in one multi-document transaction, retried on transient conflicts.

        `attempts` > 1 also retries the whole transaction when `work` raises `Conflict`
        (a conditional write missed because a concurrent writer moved the document on).
        """
        for attempt in range(attempts):
            try:
                return self._transaction(work)
            except Conflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable: attempts must be at least 1")

    def _transaction(self, work: Callable[[ClientSession], T]) -> T:
        """pymongo's `with_transaction` loop, except that a store that cannot be reached fails
        at once: `with_transaction` retries those for up to 120 s, so a dead server would hold
        every writing request for two minutes instead of answering 503.
        """
        deadline = time.monotonic() + TRANSACTION_RETRY_SECONDS
        with self.client.start_session() as session:
            retry = 0
            while True:
                if retry:
                    time.sleep(random.random() * min(0.005 * 1.5**retry, 0.5))
                retry += 1
                session.start_transaction(
                    read_concern=ReadConcern("snapshot"),
                    write_concern=WriteConcern(w="majority", j=True),
                )
                try:
                    result = work(session)
                except BaseException as exc:
                    if session.in_transaction:
                        session.abort_transaction()
                    if _retryable(exc, "TransientTransactionError", deadline):
                        continue
                    raise
                try:
                    _commit(session, deadline)
                except PyMongoError as exc:
                    if _retryable(exc, "TransientTransactionError", deadline):
                        continue
                    raise
                return result

    @contextmanager
    def session(self) -> Iterator[ClientSession]:
        with self.client.start_session() as session:
            yield session


# How long a transaction that keeps meeting write conflicts is retried (pymongo: 120 s).
TRANSACTION_RETRY_SECONDS = 30.0


def _retryable(exc: BaseException, label: str, deadline: float) -> bool:
    return (
        isinstance(exc, PyMongoError)
        and not isinstance(exc, ConnectionFailure)
        and exc.has_error_label(label)
        and time.monotonic() < deadline
    )


def _commit(session: ClientSession, deadline: float) -> None:
    """Commit, retrying a commit whose outcome is unknown while the server is reachable."""
    while True:
        try:
            session.commit_transaction()
            return
        except PyMongoError as exc:
            if _retryable(exc, "UnknownTransactionCommitResult", deadline):
                continue
            raise


__all__ = ["DECLARED_INDEXES", "MemoryStore", "StoreError", "StoreSession"]
