"""Prompt experiment actions: start one, re-run one. Each writes the experiment, its audit
entry and its `prompt_experiment` job (the outbox entry) in one transaction; the job does
the model calls. Nothing here or there writes memory."""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Job, utcnow
from streams.drafts.experiment_views import experiment_get
from streams.drafts.experiments import ExperimentInput, experiment_estimate, experiment_input
from streams.prompts import resolve_template
from streams.store import MemoryStore


def do_prompt_experiment_start(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    kind: str,
    scope_id: str,
    draft: str,
    sessions: int,
    budget_tokens: int,
    rerun_of: str | None = None,
) -> tuple[dict[str, Any], Job]:
    """Validate, estimate, and queue the experiment; (the experiment, its job)."""
    given = experiment_input(
        store=store,
        agent_id=agent_id,
        kind=kind,
        scope_id=scope_id,
        draft=draft,
        sessions=sessions,
        budget_tokens=budget_tokens,
    )
    doc = _experiment_doc(store, given, author=str(actor), rerun_of=rerun_of)
    job = Job(
        kind="prompt_experiment",
        agent_id=agent_id,
        scope_id=given.scope.id,
        trigger="rerun" if rerun_of else "manual",
        actor=str(actor),
        payload={"experiment_id": str(doc["_id"])},
    )
    doc["job_id"] = job.id

    def write(tx: ActionTx) -> None:
        store.prompt_experiments.insert(doc, session=tx.session)
        tx.enqueue(job)
        tx.audit(
            action="prompt_experiment.rerun" if rerun_of else "prompt_experiment.start",
            object_type="prompt_experiment",
            object_id=str(doc["_id"]),
            agent_id=agent_id,
            summary={
                "kind": kind,
                "scope_id": given.scope.id,
                "sessions": sessions,
                "budget_tokens": budget_tokens,
                "rerun_of": rerun_of,
            },
        )

    run_action(store, actor, write)
    return experiment_get(store=store, experiment_id=str(doc["_id"])), job


def do_prompt_experiment_rerun(
    *,
    store: MemoryStore,
    actor: Actor,
    experiment_id: str,
    agent_ids: frozenset[str] | None = None,
) -> tuple[dict[str, Any], Job]:
    """A new experiment with the same draft, scope, size and budget, against the prompt in
    effect now (the earlier one is kept as it was)."""
    earlier = experiment_get(store=store, experiment_id=experiment_id, agent_ids=agent_ids)
    return do_prompt_experiment_start(
        store=store,
        actor=actor,
        agent_id=earlier["agent_id"],
        kind=earlier["kind"],
        scope_id=earlier["scope_id"],
        draft=earlier["draft"],
        sessions=earlier["sessions"],
        budget_tokens=earlier["budget_tokens"],
        rerun_of=earlier["id"],
    )


def _experiment_doc(
    store: MemoryStore, given: ExperimentInput, *, author: str, rerun_of: str | None
) -> dict[str, Any]:
    in_effect = resolve_template(
        store=store, agent_id=given.agent_id, kind=given.kind, scope=given.scope
    )
    return {
        "_id": ObjectId(),
        "agent_id": given.agent_id,
        "kind": given.kind,
        "scope_id": given.scope.id,
        "scope_type": given.scope.kind,
        "scope_label": given.scope.label,
        "draft": given.draft.text,
        "draft_scope_id": given.draft.scope_id,
        "draft_level": "scope" if given.draft.scope_id else "agent",
        "in_effect": {"where": in_effect.where, "version": in_effect.version},
        "sessions": given.sessions,
        "budget_tokens": given.budget_tokens,
        "estimate": experiment_estimate(store=store, given=given),
        "status": "queued",
        "units": [],
        "summary": None,
        "author": author,
        "rerun_of": rerun_of,
        "created_at": utcnow(),
    }
