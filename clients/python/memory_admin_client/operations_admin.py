"""The operations an operator's tooling needs beside the agent's (webhooks, exchange, bulk,
review decisions, prompt checks, usage, tombstones), as `Call`s like `operations`.

The chat proxy (`/agents/{agent_id}/chat/completions`) has no method here: it is
OpenAI-compatible, and the `openai` package is its client (base URL
`<api>/api/v1/agents/<agent_id>`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_admin_client import models as m
from memory_admin_client._calls import Call
from memory_admin_client.operations import _seg


def _agent(agent_id: str, tail: str) -> str:
    return f"/api/v1/agents/{_seg(agent_id)}/{tail}"


def restore_consolidation(*, scope_id: str, version: int) -> Call[m.Scope]:
    path = f"/api/v1/scopes/{_seg(scope_id)}/consolidations/{int(version)}/restore"
    return Call("POST", path, m.Scope, idempotent=True)


def observation_history(
    *, observation_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[m.TextHistory]:
    path = f"/api/v1/observations/{_seg(observation_id)}/history"
    return Call(
        "GET", path, m.TextHistory, params={"limit": limit, "cursor": cursor}, idempotent=True
    )


def export_scope(*, scope_id: str) -> Call[m.Raw]:
    path = f"/api/v1/scopes/{_seg(scope_id)}/export"
    return Call("GET", path, m.Raw, params={"format": "json"}, idempotent=True)


def import_export(*, agent_id: str, document: Mapping[str, Any]) -> Call[m.ImportResult]:
    """The JSON export back; idempotent on the server's side."""
    return Call(
        "POST", _agent(agent_id, "import"), m.ImportResult, json=dict(document), idempotent=True
    )


def bulk(
    *,
    agent_id: str,
    filter: Mapping[str, Any],
    action: str,
    target_scope_id: str | None = None,
    dry_run: bool = True,
) -> Call[m.BulkResult]:
    body: dict[str, Any] = {"filter": dict(filter), "action": action, "dry_run": dry_run}
    if target_scope_id is not None:
        body["target_scope_id"] = target_scope_id
    return Call(
        "POST", _agent(agent_id, "observations/bulk"), m.BulkResult, json=body, idempotent=dry_run
    )


def review_decisions(
    *, agent_id: str, ids: list[str], decision: str, note: str | None = None
) -> Call[m.ReviewDecisions]:
    body: dict[str, Any] = {"ids": ids, "decision": decision}
    if note is not None:
        body["note"] = note
    # A decided item is skipped by a second send: safe to retry.
    return Call(
        "POST", _agent(agent_id, "review/decisions"), m.ReviewDecisions, json=body, idempotent=True
    )


def undo_review(*, observation_id: str) -> Call[m.Observation]:
    """Take a decision back within the server's MEMORY_REVIEW_UNDO_SECONDS (409 after)."""
    path = f"/api/v1/observations/{_seg(observation_id)}/review/undo"
    return Call("POST", path, m.Observation)


def list_decided(
    *, agent_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[m.Page[m.Decided]]:
    return Call(
        "GET",
        _agent(agent_id, "review/decided"),
        m.Page[m.Decided],
        params={"limit": limit, "cursor": cursor},
        idempotent=True,
    )


def create_webhook(*, agent_id: str, url: str, events: list[str]) -> Call[m.WebhookCreated]:
    body = {"url": url, "events": events}
    return Call("POST", _agent(agent_id, "webhooks"), m.WebhookCreated, json=body)


def list_webhooks(
    *, agent_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[m.Page[m.Webhook]]:
    return Call(
        "GET",
        _agent(agent_id, "webhooks"),
        m.Page[m.Webhook],
        params={"limit": limit, "cursor": cursor},
        idempotent=True,
    )


def update_webhook(*, webhook_id: str, active: bool) -> Call[m.Webhook]:
    return Call(
        "PATCH",
        f"/api/v1/webhooks/{_seg(webhook_id)}",
        m.Webhook,
        json={"active": active},
        idempotent=True,
    )


def delete_webhook(*, webhook_id: str) -> Call[Any]:
    return Call("DELETE", f"/api/v1/webhooks/{_seg(webhook_id)}", None, idempotent=True)


def list_deliveries(
    *, webhook_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[m.Page[m.Delivery]]:
    path = f"/api/v1/webhooks/{_seg(webhook_id)}/deliveries"
    return Call(
        "GET", path, m.Page[m.Delivery], params={"limit": limit, "cursor": cursor}, idempotent=True
    )


def get_agent(*, agent_id: str) -> Call[m.Agent]:
    return Call("GET", f"/api/v1/agents/{_seg(agent_id)}", m.Agent, idempotent=True)


def update_agent(*, agent_id: str, memory_tool: str) -> Call[m.Agent]:
    """The agent's settings: `memory_tool` is `off` or `search_memory` (the chat proxy
    offers the model a memory search tool); the same value twice is the same answer."""
    path = f"/api/v1/agents/{_seg(agent_id)}"
    return Call("PATCH", path, m.Agent, json={"memory_tool": memory_tool}, idempotent=True)


def lift_tombstone(*, agent_id: str, user_id: str, reason: str) -> Call[Any]:
    path = _agent(agent_id, f"tombstones/{_seg(user_id)}")
    return Call("DELETE", path, None, json={"reason": reason}, idempotent=True)


def usage(*, agent_id: str, **params: Any) -> Call[m.Raw]:
    return Call("GET", _agent(agent_id, "usage"), m.Raw, params=params, idempotent=True)


def retrieval_health(*, agent_id: str, days: int | None = None) -> Call[m.Raw]:
    return Call(
        "GET", _agent(agent_id, "retrieval-health"), m.Raw, params={"days": days}, idempotent=True
    )


def list_prompt_checks(*, agent_id: str) -> Call[m.PromptCheckList]:
    return Call("GET", _agent(agent_id, "prompt-checks"), m.PromptCheckList, idempotent=True)


def create_prompt_check(*, agent_id: str, check: Mapping[str, Any]) -> Call[m.PromptCheck]:
    return Call("POST", _agent(agent_id, "prompt-checks"), m.PromptCheck, json=dict(check))


def run_prompt_checks(
    *, agent_id: str, run: Mapping[str, Any] | None = None
) -> Call[m.PromptCheckRun]:
    return Call(
        "POST",
        _agent(agent_id, "prompt-checks/run"),
        m.PromptCheckRun,
        json=dict(run or {}),
        idempotent=True,
    )


def get_questions(*, agent_id: str, scope_kind: str) -> Call[m.Questions]:
    """The questions every scope of this kind must answer (the agent's default)."""
    path = _agent(agent_id, f"questions/{_seg(scope_kind)}")
    return Call("GET", path, m.Questions, idempotent=True)


def set_questions(
    *, agent_id: str, scope_kind: str, questions: list[str] | None
) -> Call[m.Questions]:
    """A new version of the default for a scope kind (None clears it)."""
    path = _agent(agent_id, f"questions/{_seg(scope_kind)}")
    return Call("PUT", path, m.Questions, json={"questions": questions}, idempotent=True)


def delete_prompt_check(*, agent_id: str, check_id: str) -> Call[Any]:
    path = _agent(agent_id, f"prompt-checks/{_seg(check_id)}")
    return Call("DELETE", path, None, idempotent=True)


def estimate_prompt_experiment(
    *, agent_id: str, experiment: Mapping[str, Any]
) -> Call[m.PromptExperimentEstimate]:
    """What an experiment (`kind`, `scope_id`, `draft`, `sessions`, `budget_tokens`) would
    cost at most, before any model call."""
    path = _agent(agent_id, "prompt-experiments/estimate")
    return Call("POST", path, m.PromptExperimentEstimate, json=dict(experiment), idempotent=True)


def start_prompt_experiment(
    *, agent_id: str, experiment: Mapping[str, Any]
) -> Call[m.PromptExperimentStarted]:
    path = _agent(agent_id, "prompt-experiments")
    return Call("POST", path, m.PromptExperimentStarted, json=dict(experiment))


def list_prompt_experiments(
    *, agent_id: str, kind: str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[m.Page[m.PromptExperiment]]:
    return Call(
        "GET",
        _agent(agent_id, "prompt-experiments"),
        m.Page[m.PromptExperiment],
        params={"kind": kind, "limit": limit, "cursor": cursor},
        idempotent=True,
    )


def get_prompt_experiment(*, experiment_id: str) -> Call[m.PromptExperiment]:
    path = f"/api/v1/prompt-experiments/{_seg(experiment_id)}"
    return Call("GET", path, m.PromptExperiment, idempotent=True)


def rerun_prompt_experiment(*, experiment_id: str) -> Call[m.PromptExperimentStarted]:
    path = f"/api/v1/prompt-experiments/{_seg(experiment_id)}/rerun"
    return Call("POST", path, m.PromptExperimentStarted)


# -- tuning and lifecycle: corrections, suggestions, two-model dry runs, ranking, unused
# memory, bulk undo, the chunked consolidation's estimate --------------------------------


def list_corrections(
    *,
    agent_id: str,
    kind: str | None = None,
    scope_id: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[m.Page[m.Raw]]:
    """Support's corrections of one prompt kind (optionally one scope), newest first."""
    params = {"kind": kind, "scope_id": scope_id, "limit": limit, "cursor": cursor}
    path = _agent(agent_id, "corrections")
    return Call("GET", path, m.Page[m.Raw], params=params, idempotent=True)


def check_from_correction(*, correction_id: str) -> Call[m.Raw]:
    """Turn a correction into a prompt check (the check made)."""
    return Call("POST", f"/api/v1/corrections/{_seg(correction_id)}/check", m.Raw)


def suggest_prompt(*, agent_id: str, kind: str, scope_id: str | None = None) -> Call[m.Raw]:
    """A draft the model proposes from the corrections (nothing is saved)."""
    path = _agent(agent_id, f"prompts/{_seg(kind)}/suggest")
    return Call("POST", path, m.Raw, json={"scope_id": scope_id}, idempotent=True)


def dry_run_prompt(*, agent_id: str, dry_run: Mapping[str, Any]) -> Call[m.Raw]:
    """A dry run (`kind`, `models`: two to compare, `text`, the input): both answers."""
    path = _agent(agent_id, "prompt-dry-runs")
    return Call("POST", path, m.Raw, json=dict(dry_run), idempotent=True)


def get_agent_ranking(*, agent_id: str) -> Call[m.Raw]:
    return Call("GET", _agent(agent_id, "ranking"), m.Raw, idempotent=True)


def set_agent_ranking(*, agent_id: str, switches: Mapping[str, bool | None]) -> Call[m.Raw]:
    """Recency, MMR, feedback: true, false or None (inherit); those left out stay."""
    return Call("PATCH", _agent(agent_id, "ranking"), m.Raw, json=dict(switches), idempotent=True)


def get_scope_ranking(*, scope_id: str) -> Call[m.Raw]:
    return Call("GET", f"/api/v1/scopes/{_seg(scope_id)}/ranking", m.Raw, idempotent=True)


def set_scope_ranking(*, scope_id: str, switches: Mapping[str, bool | None]) -> Call[m.Raw]:
    path = f"/api/v1/scopes/{_seg(scope_id)}/ranking"
    return Call("PATCH", path, m.Raw, json=dict(switches), idempotent=True)


def unused_memory(
    *, agent_id: str, days: int, limit: int | None = None, cursor: str | None = None
) -> Call[m.Raw]:
    """Per scope, how many observations were not retrieved in `days` days."""
    params = {"days": days, "limit": limit, "cursor": cursor}
    return Call("GET", _agent(agent_id, "unused"), m.Raw, params=params, idempotent=True)


def undo_bulk(*, job_id: str) -> Call[m.JobId]:
    """Take a finished bulk action back within its window: one `bulk_undo` job."""
    return Call("POST", f"/api/v1/bulk/{_seg(job_id)}/undo", m.JobId)


def consolidation_estimate(*, scope_id: str) -> Call[m.Raw]:
    """Chunks, tokens and cost of consolidating the scope's pending set now."""
    path = f"/api/v1/scopes/{_seg(scope_id)}/consolidation-estimate"
    return Call("GET", path, m.Raw, idempotent=True)
