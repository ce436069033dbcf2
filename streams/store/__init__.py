"""The persistence package: the only code in the project that talks to pymongo.

`MemoryStore` bundles one repository per collection over one database. Each
repository module declares the indexes its queries need (`INDEXES`), and
`MemoryStore.ensure_indexes` applies them all.
"""

from __future__ import annotations

import math
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

from streams.core.consolidate_after import DEFAULT_CONSOLIDATE_AFTER, ConsolidateAfterDays
from streams.core.exceptions import Busy, Conflict, Unavailable
from streams.core.instruction_policy import DEFAULT_INSTRUCTION_POLICY, InstructionPolicy
from streams.store import (
    agent_days,
    agents,
    audit,
    bulk,
    chat_calls,
    client_ids,
    consolidations,
    context_calls,
    corrections,
    embeddings,
    exchange,
    jobs,
    legacy,
    llm_servers,
    observations,
    privacy,
    prompt_checks,
    prompt_experiments,
    prompts,
    questions,
    recount,
    rescans,
    scopes,
    search,
    seeding,
    session_samples,
    sessions,
    text_history,
    tombstones,
    usage,
    user_names,
    visible_scopes,
    webhooks,
)
from streams.store.flavour import Flavour, Workarounds, choose_flavour, workarounds
from streams.store.indexes import IndexSpec, RetiredIndex, apply_indexes
from streams.store.transaction_gate import TransactionGate, process_gate
from streams.store.write_batch import WriteBatch

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
    *corrections.INDEXES,
    *prompt_experiments.INDEXES,
    *questions.INDEXES,
    *session_samples.INDEXES,
    *agent_days.INDEXES,
    *audit.INDEXES,
    *privacy.INDEXES,
    *bulk.INDEXES,
    *search.INDEXES,
    *embeddings.INDEXES,
    *visible_scopes.INDEXES,
    *client_ids.INDEXES,
    *text_history.INDEXES,
    *chat_calls.INDEXES,
    *context_calls.INDEXES,
    *user_names.INDEXES,
    *usage.INDEXES,
    *webhooks.INDEXES,
    *tombstones.INDEXES,
]
# Indexes earlier versions created that `ensure_indexes` drops (each says why).
RETIRED_INDEXES: tuple[RetiredIndex, ...] = (
    *observations.RETIRED_INDEXES,
    *embeddings.RETIRED_INDEXES,
    *scopes.RETIRED_INDEXES,
)


DEFAULT_TASK_MODELS = {
    "extraction": "gpt-4o-mini",
    "consolidation": "gpt-4o",
    "propagation": "gpt-4o-mini",
}


class MemoryStore:
    """The memory collections of one database, reached through one process-wide client."""

    # A bulk action can be undone for this long after it finished (MEMORY_BULK_UNDO_SECONDS;
    # `memory_admin.stores` sets it from the setting).
    bulk_undo_seconds: int = 900

    def __init__(
        self,
        client: MongoClient,
        db_name: str,
        *,
        scope_defaults: dict[str, Any] | None = None,
        prices: dict[str, tuple[float, float]] | None = None,
        access_flush_seconds: float = 0.0,
        context_log_days: int = 0,
        conflict_seconds: float | None = None,
        review_mode_shared: str = "off",
        collective_min_groups: int = 2,
        erasure_key: bytes | None = None,
        instruction_policy: InstructionPolicy | None = None,
        consolidate_after: ConsolidateAfterDays | None = None,
        review_undo_seconds: int = 600,
        flavour: Flavour | None = None,
        default_models: dict[str, str] | None = None,
        transactions_per_process: int | None = None,
    ) -> None:
        self.client = client
        if flavour is not None:  # MEMORY_STORE_FLAVOUR; unset: the server's buildInfo says
            choose_flavour(client, flavour)
        # How long a transaction that keeps meeting write conflicts is retried before
        # `Busy` (MEMORY_STORE_CONFLICT_SECONDS).
        self.conflict_seconds = (
            TRANSACTION_RETRY_SECONDS if conflict_seconds is None else conflict_seconds
        )
        # At most this many of the process's transactions open at once
        # (MEMORY_STORE_TRANSACTIONS_PER_PROCESS; None: the flavour's; `transaction_gate`).
        self.transactions_per_process = transactions_per_process
        self.db = client[db_name]
        self.name = db_name  # the database's name (per-database caches key on it)
        # Settings new scopes start with (MEMORY_CONSOLIDATION_THRESHOLD, _MAX_WORDS).
        self.scope_defaults = dict(scope_defaults or {})
        # New group, collective and shard scopes start with this review mode
        # (MEMORY_REVIEW_MODE_SHARED); a group's collective copy waits as a candidate until
        # this many groups supply it (MEMORY_COLLECTIVE_MIN_GROUPS).
        self.review_mode_shared = review_mode_shared
        self.collective_min_groups = collective_min_groups
        # A review decision can be undone for this long (MEMORY_REVIEW_UNDO_SECONDS).
        self.review_undo_seconds = review_undo_seconds
        # What the context and the write screen do with instruction-flagged text, per
        # scope kind (MEMORY_INSTRUCTION_POLICY).
        self.instruction_policy = instruction_policy or DEFAULT_INSTRUCTION_POLICY
        # Pending observations older than this are folded below the threshold, per scope
        # kind (MEMORY_CONSOLIDATE_AFTER_DAYS; a scope's own days override it).
        self.consolidate_after = consolidate_after or DEFAULT_CONSOLIDATE_AFTER
        self.agents = agents.AgentRepository(self.db)
        self.scopes = scopes.ScopeRepository(self.db)
        # Context calls' access counts: written behind, summed, within this many seconds.
        self.observations = observations.ObservationRepository(
            self.db, access_flush_seconds=access_flush_seconds
        )
        self.consolidations = consolidations.ConsolidationRepository(self.db)
        self.jobs = jobs.JobRepository(self.db)
        # What each model server accepts (streams.llm.negotiation), for every process.
        self.llm_servers = llm_servers.LLMServerRepository(self.db)
        self.sessions = sessions.SessionRepository(self.db)
        self.prompts = prompts.PromptRepository(self.db)
        self.prompt_checks = prompt_checks.PromptCheckRepository(self.db)
        # What support corrected (`streams.records.corrections`), written by actions only.
        self.corrections = corrections.CorrectionRepository(self.db)
        self.prompt_experiments = prompt_experiments.PromptExperimentRepository(self.db)
        self.questions = questions.QuestionRepository(self.db)
        self.session_samples = session_samples.SessionSampleRepository(self.db)
        self.search_index = search.SearchIndexRepository(self.db)
        self.embeddings = embeddings.EmbeddingRepository(self.db)
        self.visible_scopes = visible_scopes.VisibleScopeReader(self.db)
        self.agent_days = agent_days.AgentDayRepository(self.db)
        self.audit = audit.AuditRepository(self.db)
        self.client_ids = client_ids.ClientIdRepository(self.db)
        self.text_history = text_history.TextHistoryRepository(self.db)
        self.chat_calls = chat_calls.ChatCallRepository(self.db)
        self.rescans = rescans.RescanRepository(self.db)  # the detector rescan's checkpoint
        # What each context call gave the agent, kept this many days (0: not recorded),
        # written behind like the access counts.
        self.context_log_days = context_log_days
        self.context_calls = context_calls.ContextCallRepository(
            self.db, flush_seconds=access_flush_seconds
        )
        self.user_names = user_names.UserNameRepository(self.db)
        self.usage = usage.UsageRepository(self.db)
        self.webhooks = webhooks.WebhookRepository(self.db)
        # Forgotten users, by a keyed hash of agent and user id (MEMORY_ERASURE_KEY).
        self.tombstones = tombstones.TombstoneRepository(self.db, key=erasure_key)
        # The multi-collection repositories of whole-scope and whole-person work: forget,
        # copies and rebuilds, bulk actions, export/import, counter repair.
        self.privacy = privacy.PrivacyRepository(self.db)
        self.bulk = bulk.BulkRepository(self.db)
        self.exchange = exchange.ExchangeRepository(self.db)
        self.recount = recount.RecountRepository(self.db)
        self.seeding = seeding.SeedingRepository(self.db)  # benchmarks' raw seeding only
        # USD per million tokens in and out, per model (MEMORY_LLM_PRICES): usage cost.
        self.prices = dict(prices or {})
        # The model each task uses when neither agent nor scope names one (the provider's
        # MEMORY_LLM_MODEL_FAST / _SLOW): what the settings pages show as the code default.
        self.default_models = {**DEFAULT_TASK_MODELS, **(default_models or {})}

    def write_batch(self, session: ClientSession) -> WriteBatch | None:
        """The transaction's writes as one round trip, or None where the server cannot
        (streams/store/write_batch.py): then each write goes as it is made."""
        return WriteBatch.for_session(self.client, session)

    def legacy_reader(self, db_name: str) -> legacy.LegacyReader:
        """The legacy collections of `db_name` on this store's server (the migration)."""
        return legacy.LegacyReader.open(self.client, db_name)

    @property
    def workarounds(self) -> Workarounds:
        """The embedded store's workarounds on or off (`streams.store.flavour`)."""
        return workarounds(self.client)

    @property
    def transaction_gate(self) -> TransactionGate:
        """The process's gate for this store's transactions (asked at the first
        transaction, so a store that is down costs no `buildInfo` before it)."""
        slots = self.transactions_per_process
        if slots is None:
            slots = self.workarounds.transactions_per_process
        return process_gate(slots)

    def ensure_indexes(self) -> list[str]:
        return apply_indexes(self.db, DECLARED_INDEXES, RETIRED_INDEXES)

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

        The conflict window opens at the first conflict, not at the start: under load one
        attempt may take longer than the window, and a transaction that met its first
        conflict then was answered 503 without a single retry (`benchmarks concurrency`,
        batch adds at 16 clients). An orphan's conflicts come at once: still 503 within it.
        """
        deadline = math.inf
        with self.transaction_gate.slot(), self.client.start_session() as session:
            retry = 0
            while True:
                if retry:
                    time.sleep(random.random() * min(0.005 * 1.5**retry, 0.5))
                    deadline = min(deadline, time.monotonic() + self.conflict_seconds)
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
                    self._raise_busy_if_conflict(exc)
                    raise
                try:
                    _commit(session, min(deadline, time.monotonic() + self.conflict_seconds))
                except PyMongoError as exc:
                    if _retryable(exc, "TransientTransactionError", deadline):
                        continue
                    self._raise_busy_if_conflict(exc)
                    raise
                return result

    def _raise_busy_if_conflict(self, exc: BaseException) -> None:
        """A write conflict that outlasted the window: `Busy` (503, Retry-After), not a
        500 after pymongo's two minutes. What holds the documents is most likely a
        transaction whose client died, which the store aborts once it idles past its
        transaction lifetime (`memory_admin.runtime.embedded_store`)."""
        if (
            isinstance(exc, PyMongoError)
            and not isinstance(exc, ConnectionFailure)
            and exc.has_error_label("TransientTransactionError")
        ):
            raise Busy(
                "another write to the same memory is still open (a worker may have died "
                "in the middle of it); retry shortly",
                retry_after=max(1, math.ceil(self.conflict_seconds)),
            ) from exc

    @contextmanager
    def session(self) -> Iterator[ClientSession]:
        with self.client.start_session() as session:
            yield session


# How long a transaction that keeps meeting write conflicts is retried (pymongo: 120 s)
# before `Busy`: a conflict with a live writer clears in milliseconds, one with a dead
# writer's orphan only when the store reaps it.
TRANSACTION_RETRY_SECONDS = 5.0


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


__all__ = ["DECLARED_INDEXES", "RETIRED_INDEXES", "MemoryStore", "StoreError", "StoreSession"]
