"""Forget user: remove everything an agent remembers about one user, and prove it.

Forgetting removes, for one user of one agent: the individual scope with its
observations and consolidation history, the user's buffered messages and
session buffers, every observation elsewhere whose `related_user_ids` holds the
user, and the propagated copies of any of these.

Group and collective consolidations that absorbed such observations hold the
user's content in their text and in every history version from the first one
that absorbed it. Each such scope is rebuilt by the general mechanism of
streams/memory/rebuild.py (`rebuild_scope`, trigger `forget_user`): the tainted
versions' texts are replaced by a redaction marker (version numbers, times and
who made them stay, for the audit). Hand edits made after the user's content
arrived are lost with the versions: they may quote it.

Order matters for a retried job: a scope is rebuilt and redacted before any
observation is deleted, so a run that fails half way still finds what is left
to do on the next attempt.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import Job, Observation, Scope, utcnow
from streams.guard.erasure import BLOCKS as ERASURE_BLOCKS
from streams.guard.erasure import erasure_begin
from streams.guard.screening import screened
from streams.jobs import JobRun, job_create
from streams.memory.formation import FormationSettings
from streams.memory.pins import pin_quotes
from streams.memory.rebuild import copies_closure, forget_in_search, rebuild_scope
from streams.people.user_audit import check_user_ids, user_individual_scope
from streams.records.context_scrub import context_log_forget_observations, removed_texts
from streams.records.corrections import corrections_forget_user
from streams.records.webhooks import webhook_outbox_add
from streams.store import MemoryStore, StoreSession
from streams.store.privacy import BATCH, PrivacyRepository

REDACTED = "[redacted: this version held content of a user who was forgotten]"
LEASE = timedelta(minutes=5)
MAX_BUFFER_PAGES = 1000


def _repo(store: MemoryStore) -> PrivacyRepository:
    return store.privacy


# -- forget user ------------------------------------------------------------------------


def forget_user_request(
    *,
    store: MemoryStore,
    agent_id: str,
    user_id: str,
    actor: str,
    session: StoreSession | None = None,
) -> Job:
    """Queue the forgetting of one user of one agent (a `forget_user` job, written in
    the caller's transaction with `session`).

    Forgetting someone with nothing remembered is not an error: the receipt says zero,
    which is the proof the caller wants.
    """
    check_user_ids(agent_id, user_id)
    return job_create(
        store=store,
        kind="forget_user",
        agent_id=agent_id,
        trigger="request",
        actor=actor,
        payload={"user_id": user_id},
        session=session,
    )


def forget_user_run(*, store: MemoryStore, run: JobRun, lease: timedelta = LEASE) -> None:
    """The work of a forget_user job; its result is the deletion receipt."""
    job = run.job
    user_id = str(job.payload["user_id"])
    agent_id = job.agent_id
    repo = _repo(store)
    # The tombstone goes first of all: from here on an import, a migration, a late ingest
    # or a propagation stores nothing of them (streams/guard/erasure.py).
    erasure_begin(store=store, agent_id=agent_id, user_id=user_id, now=utcnow(), job_id=job.id)
    # What they said goes first: a formation still holding their messages then fails
    # its commit (and forms the rest later) instead of storing new memories of them
    # after the scan below.
    said = _forget_messages(store, repo, agent_id, user_id)
    individual = user_individual_scope(store=store, agent_id=agent_id, user_id=user_id)
    elsewhere, own = _observations_of(repo, agent_id, user_id, individual)
    by_scope: dict[str, list[Observation]] = {}
    for observation in elsewhere:
        by_scope.setdefault(observation.scope_id, []).append(observation)
    # Pins quoting what they said go before the rebuilds, which would put them back.
    unpinned = sum(
        _unpin_quotes(store, scope_id, observations)
        for scope_id, observations in sorted(by_scope.items())
    )
    rebuilt, redacted = _rebuild_scopes(store, run, by_scope, lease)
    deleted = dict.fromkeys(FORGET_COUNTED, 0)
    now = utcnow()
    uncounted = _delete_elsewhere(store, repo, by_scope, deleted)
    store.agents.adjust_counters(agent_id, now=now, observations=-uncounted)
    if individual is not None:
        _delete_own_scope(store, repo, individual, own, deleted, now)
    for collection, count in said.items():
        deleted[collection] += count
    _forget_traces(store, job, user_id, [*own, *elsewhere], deleted)
    finished_at = utcnow().isoformat()
    run.result = {
        "agent_id": agent_id,
        "user_id": user_id,
        "actor": job.actor,
        "finished_at": finished_at,
        "deleted": deleted,
        "redacted_versions": redacted,
        "reconsolidated_scopes": rebuilt,
        "unpinned": unpinned,
        # The erasure tombstone left behind, and what it blocks until an admin lifts it.
        "tombstone": {"left": True, "blocks": list(ERASURE_BLOCKS)},
    }
    # The event, pushed to the agent's hooks: the id and the time, no counts of what they
    # said (a retried job may push it twice: at least once).
    webhook_outbox_add(
        store=store,
        agent_id=agent_id,
        event="user.forgotten",
        objects=[(f"user:{user_id}", {"user_id": user_id, "forgotten_at": finished_at})],
        session=None,
    )


# What the receipt counts as deleted, in this order (then jobs and user names).
FORGET_COUNTED = (
    "memory_scopes",
    "memory_observations",
    "memory_consolidations",
    "memory_questions",
    "memory_messages",
    "memory_session_buffers",
    "memory_chat_calls",
    "memory_context_calls",
    "memory_webhook_deliveries",
)


def _rebuild_scopes(
    store: MemoryStore,
    run: JobRun,
    by_scope: dict[str, list[Observation]],
    lease: timedelta,
) -> tuple[list[dict[str, Any]], int]:
    """Rebuild every other scope that held their observations without them (what quoted
    them redacted); each rebuild's outcome, and how many versions were redacted."""
    rebuilt: list[dict[str, Any]] = []
    redacted = 0
    for scope_id, observations in sorted(by_scope.items()):
        outcome = rebuild_scope(
            store=store,
            run=run,
            scope_id=scope_id,
            removed={o.id for o in observations},
            trigger="forget_user",
            marker=REDACTED,
            lease=lease,
            absorbed=any(o.consolidated for o in observations),
        )
        if outcome is not None:
            for key in ("removed", "changed"):
                outcome.pop(key)
            rebuilt.append(outcome)
            redacted += outcome.pop("redacted")
    return rebuilt, redacted


def _delete_elsewhere(
    store: MemoryStore,
    repo: PrivacyRepository,
    by_scope: dict[str, list[Observation]],
    deleted: dict[str, int],
) -> int:
    """Delete their observations in other scopes (a transaction a scope), with their
    postings, client ids and text history; how many of them the counters still held."""
    uncounted = 0
    for scope_id, observations in sorted(by_scope.items()):
        forget_in_search(store=store, scope_id=scope_id, observations=observations)

        def delete_scope_observations(
            session: StoreSession, scope: str = scope_id, gone: list[Observation] = observations
        ) -> int:
            return repo.delete_observations(
                ObjectId(scope), [ObjectId(o.id) for o in gone], session=session
            )

        count = store.in_transaction(delete_scope_observations)
        store.client_ids.forget_observations([ObjectId(o.id) for o in observations])
        store.text_history.purge([ObjectId(o.id) for o in observations])
        # A soft-deleted observation left the counts when it was deleted.
        counted = min(count, sum(1 for o in observations if not o.deleted))
        if count:
            repo.unlink_observations(
                ObjectId(scope_id), [ObjectId(o.id) for o in observations], count=counted
            )
        deleted["memory_observations"] += count
        uncounted += counted
    return uncounted


def _delete_own_scope(
    store: MemoryStore,
    repo: PrivacyRepository,
    individual: Scope,
    own: list[Observation],
    deleted: dict[str, int],
    now: datetime,
) -> None:
    """Delete their individual scope whole: its postings, documents, ids and history."""
    # Term by term rather than `search_index_drop_scope`: its `_id` range delete
    # scans the whole index on the embedded store (3 s at 10,000 observations).
    forget_in_search(store=store, scope_id=individual.id, observations=own)
    repo.drop_search_totals(ObjectId(individual.id))
    removed = store.in_transaction(
        lambda session: repo.delete_scope(ObjectId(individual.id), session=session)
    )
    store.client_ids.forget_scope(ObjectId(individual.id))
    store.text_history.purge_scope(ObjectId(individual.id))
    for collection, count in removed.items():
        deleted[collection] += count
    if removed["memory_scopes"]:
        store.agents.adjust_counters(
            individual.agent_id,
            now=now,
            scopes=-1,
            # What the scope counted: its soft-deleted observations left it already.
            observations=-individual.observation_count,
            pending=-individual.pending_count,
        )


def _forget_traces(
    store: MemoryStore,
    job: Job,
    user_id: str,
    gone: list[Observation],
    deleted: dict[str, int],
) -> None:
    """What else holds them: logged calls, webhook deliveries, other jobs, experiments,
    their name, corrections."""
    agent_id = job.agent_id
    deleted["memory_chat_calls"] = store.chat_calls.delete_for_user(
        agent_id=agent_id, user_id=user_id
    )
    deleted["memory_context_calls"] = store.context_calls.delete_for_user(
        agent_id=agent_id, user_id=user_id
    )
    # Other users' logged calls that quoted what is gone (a group's or the collective's
    # section): the text is scrubbed from them (their consolidations' versions were
    # scrubbed by the rebuilds above).
    context_log_forget_observations(store=store, texts=removed_texts(gone))
    # Webhook deliveries that carry their observations: waiting ones are not sent now.
    deleted["memory_webhook_deliveries"] = store.webhooks.forget_objects(
        [f"observation:{o.id}" for o in gone]
    )
    # Other jobs that name them (the chat proxy's ingest holds their name and words).
    purged = store.jobs.forget_user(agent_id=agent_id, user_id=user_id, keep=ObjectId(job.id))
    deleted["memory_jobs"] = purged["deleted"] + purged["reduced"]
    # Prompt experiments that ran on their sessions or observations keep counts only.
    deleted["memory_prompt_experiments"] = store.prompt_experiments.forget_user(
        agent_id=agent_id, user_id=user_id
    )
    # The findable name (streams/people/user_find.py) is personal data too.
    deleted["memory_user_names"] = store.user_names.forget(agent_id=agent_id, user_id=user_id)
    # What support corrected about them holds their words (and checks made from it).
    deleted["memory_corrections"] = corrections_forget_user(
        store=store, agent_id=agent_id, user_id=user_id
    )


def _unpin_quotes(store: MemoryStore, scope_id: str, observations: list[Observation]) -> int:
    """Remove the scope's pins that quote any of these observations; how many went."""
    scope = store.scopes.get(ObjectId(scope_id))
    if scope is None or not scope.pins:
        return 0
    kept = [p for p in scope.pins if not any(pin_quotes(p, o.content) for o in observations)]
    if len(kept) != len(scope.pins):
        store.scopes.set_pins(ObjectId(scope_id), [screened(p) for p in kept])
    return len(scope.pins) - len(kept)


def _forget_messages(
    store: MemoryStore, repo: PrivacyRepository, agent_id: str, user_id: str
) -> dict[str, int]:
    """Delete every message the person sent; recount the sessions they spoke in (others'
    messages stay), dropping a session's buffer when nothing is left in it."""
    counts = {
        "memory_messages": store.in_transaction(
            lambda session: repo.delete_user_messages(agent_id, user_id, session=session)
        )
    }
    dropped = 0
    min_messages = FormationSettings().min_messages
    for _ in range(MAX_BUFFER_PAGES):
        buffer_ids = store.sessions.speaker_buffer_ids(agent_id, user_id, limit=BATCH)
        for buffer_id in buffer_ids:

            def forget_in_buffer(session: StoreSession, bid: ObjectId = buffer_id) -> bool:
                return store.sessions.forget_speaker(
                    bid, user_id, min_messages=min_messages, session=session
                )

            dropped += store.in_transaction(forget_in_buffer, attempts=5)
        if len(buffer_ids) < BATCH:
            break
    counts["memory_session_buffers"] = dropped
    return counts


def _observations_of(
    repo: PrivacyRepository, agent_id: str, user_id: str, individual: Scope | None
) -> tuple[list[Observation], list[Observation]]:
    """(elsewhere, own): observations outside the individual scope to remove (those naming
    the user, and the propagated copies, and copies of copies, of these and of the
    individual ones), and the individual scope's own."""
    found: dict[str, Observation] = {}
    after: ObjectId | None = None
    while True:
        batch = repo.related_observations(agent_id, user_id, after=after)
        found.update((o.id, o) for o in batch)
        if len(batch) < BATCH:
            break
        after = ObjectId(batch[-1].id)
    own: list[Observation] = []
    if individual is not None:
        oid = ObjectId(individual.id)
        for low in range(0, individual.observation_seq, BATCH):
            high = min(low + BATCH, individual.observation_seq)
            own += repo.scope_observations(oid, low_seq=low, high_seq=high)
    origins = set(found) | {o.id for o in own}
    for copy in copies_closure(repo, sorted(origins)):
        found.setdefault(copy.id, copy)
    individual_id = individual.id if individual is not None else None
    return [o for o in found.values() if o.scope_id != individual_id], own
