"""What follows a change to an observation, as an outbox job in the change's transaction.

An edit, a delete (a merge deletes one) or marking private writes, in its own
transaction, besides the change (its search terms no text holds any more pruned
there): the flags of the scopes whose consolidation absorbed the old text ("rebuild
pending") with their queued rebuild jobs, and one `source_change` job
(`source_change_queue`). That job (`source_change_run`) scrubs the removed text from
the context log and removes the propagated copies (`sources_clean`), then sends the
rebuilds,
which wait for it (a copy still there would be folded back in). A process killed after
the commit leaves the job queued, and the recovery sweep sends it: nothing of the
follow-up depends on the process that committed surviving.

The payload names the observation, the change and, for an edit, the text-history entry
holding the old text: a job document never holds memory text. Running the job twice
changes nothing twice: the copies are gone, the log records no longer list what was
scrubbed, the rebuilds it sends have run or are the same queued documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bson import ObjectId

from streams.core.documents import Job, JobKind, Observation
from streams.jobs import JobRun
from streams.memory.rebuild import (
    Change,
    copies_closure,
    rebuild_due,
    remove_copies,
)
from streams.records.context_scrub import (
    context_log_forget_observations,
    private_owner,
    removed_texts,
)
from streams.store import MemoryStore, StoreSession

KIND: JobKind = "source_change"


# -- what follows a change: flag scopes and queue rebuilds, scrub the log, remove copies --


def sources_changed(
    *,
    store: MemoryStore,
    observation: Observation,
    change: Change,
    follow_ups: list[Job],
    old_text: str | None = None,
    scrub_log: bool = True,
) -> None:
    """After `observation` was deleted, edited or marked private (the change is stored;
    `old_text`: its text before an edit). `scrub_log=False` (expiry: the text was live
    then, and replay shows it then) keeps it in the context log's records.

    Its propagated copies (and theirs) are removed, whatever the change: a copy
    is derived text, and an edited observation's copy is re-derived from the new
    text once its own scope is rebuilt. Each scope whose consolidation absorbed the
    observation or a copy is flagged and gets a rebuild job (in `follow_ups`).
    """
    copies = copies_closure(store.privacy, [observation.id])
    follow_ups.extend(
        sources_flag(store=store, observation=observation, change=change, copies=copies)
    )
    sources_clean(
        store=store,
        observation=observation,
        change=change,
        copies=copies,
        old_text=old_text,
        scrub_log=scrub_log,
    )


def sources_flag(
    *,
    store: MemoryStore,
    observation: Observation,
    change: Change,
    copies: list[Observation],
    session: StoreSession | None = None,
    after: str | None = None,
) -> list[Job]:
    """Flag each scope whose consolidation absorbed the observation or one of its
    `copies` ("rebuild pending"), each with a queued rebuild job, returned. With `after`
    (the id of the job that removes the copies) each rebuild waits for that job: run
    first, it would fold a copy still there back in (`rebuild_run`)."""
    tainted: dict[str, list[str]] = {}
    if observation.consolidated or observation.restored_to_pending:
        tainted[observation.scope_id] = [observation.id]
    for copy in copies:
        if copy.consolidated and not copy.deleted:
            tainted.setdefault(copy.scope_id, []).append(copy.id)
    jobs: list[Job] = []
    for scope_id, ids in sorted(tainted.items()):
        # Job first, then the flag: a crash in between leaves a queued job (the sweep
        # dispatches it), never a flagged scope that nothing will rebuild.
        job = rebuild_due(
            store=store, scope_id=scope_id, trigger=change, session=session, after=after
        )
        store.scopes.flag_rebuild(ObjectId(scope_id), [ObjectId(i) for i in ids], session=session)
        if job is not None:
            jobs.append(job)
    return jobs


def sources_clean(
    *,
    store: MemoryStore,
    observation: Observation,
    change: Change,
    copies: list[Observation],
    old_text: str | None,
    scrub_log: bool = True,
) -> None:
    """The copies' texts (and the removed text) out of the context log, then the copies
    removed: in that order, a retry after a crash in between still finds the copies."""
    if scrub_log:
        _scrub_context_log(store, observation, change, copies, old_text)
    remove_copies(store=store, copies=copies)


def _scrub_context_log(
    store: MemoryStore,
    observation: Observation,
    change: Change,
    copies: list[Observation],
    old_text: str | None,
) -> None:
    """The removed text leaves every logged call that quoted it (`context_log_scrub`):
    the copies' texts and an edit's old text for everyone; a private observation's text
    for everyone but its owner (their own memory still shows it)."""
    gone = removed_texts(copies)
    if old_text is not None and old_text != observation.content:
        gone.append((observation.id, old_text))
    if change == "delete":
        gone.append((observation.id, observation.content))
    context_log_forget_observations(store=store, texts=gone)
    if change == "private":
        context_log_forget_observations(
            store=store,
            texts=[(observation.id, observation.content)],
            except_user_id=private_owner(store, observation.scope_id),
        )


# -- the outbox job -----------------------------------------------------------------------


@dataclass(frozen=True)
class SourceChange:
    """A change's follow-up, written in its transaction: the job and the rebuilds it sends."""

    job: Job
    rebuilds: list[Job] = field(default_factory=list)


def source_change_queue(
    *,
    store: MemoryStore,
    observation: Observation,
    change: Change,
    session: StoreSession,
    history_id: ObjectId | None = None,
) -> SourceChange:
    """In the change's transaction: the scopes flagged with their rebuilds, and the job
    (`observation`: as it is once the change commits, `history_id`: its old text's entry)."""
    job = Job(
        kind=KIND,
        agent_id=observation.agent_id,
        scope_id=observation.scope_id,
        trigger=change,
        payload={
            "observation_id": observation.id,
            "change": change,
            "history_id": str(history_id) if history_id is not None else None,
        },
    )
    copies = copies_closure(store.privacy, [observation.id])
    rebuilds = sources_flag(
        store=store,
        observation=observation,
        change=change,
        copies=copies,
        session=session,
        after=job.id,
    )
    job.payload["rebuild_job_ids"] = [j.id for j in rebuilds]
    store.jobs.insert(job, session=session)
    return SourceChange(job=job, rebuilds=rebuilds)


def source_change_run(*, store: MemoryStore, run: JobRun) -> None:
    """The work of a `source_change` job (see the module's docstring)."""
    payload = run.job.payload
    observation = store.observations.get(ObjectId(payload["observation_id"]))
    if observation is None:
        run.result = {"note": "the observation is gone"}
        return
    change: Change = payload["change"]
    old_text = None
    if payload.get("history_id"):
        entry = store.text_history.get(ObjectId(payload["history_id"]))
        old_text = entry["content"] if entry is not None else None
    copies = copies_closure(store.privacy, [observation.id])
    sources_clean(
        store=store, observation=observation, change=change, copies=copies, old_text=old_text
    )
    for job_id in payload.get("rebuild_job_ids", []):
        rebuild = store.jobs.get(ObjectId(job_id))
        if rebuild is not None and rebuild.status in ("queued", "failed"):
            run.follow_ups.append(rebuild)
    run.result = {"change": change, "copies_removed": len(copies)}
