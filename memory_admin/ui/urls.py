"""The operator UI's pages; every view checks its role itself (see `roles.py`)."""

from __future__ import annotations

from django.urls import path

from memory_admin.ui import agents as agent_views
from memory_admin.ui import audit as audit_views
from memory_admin.ui import bulk as bulk_views
from memory_admin.ui import context_log as context_log_views
from memory_admin.ui import dashboard, review_decided, scope_state
from memory_admin.ui import exchange as exchange_views
from memory_admin.ui import history as history_views
from memory_admin.ui import jobs as job_views
from memory_admin.ui import limits as limits_views
from memory_admin.ui import observations as observation_views
from memory_admin.ui import people as people_views
from memory_admin.ui import playground as playground_views
from memory_admin.ui import prompt_corrections as prompt_correction_views
from memory_admin.ui import prompt_experiments as experiment_views
from memory_admin.ui import prompt_runs as prompt_run_views
from memory_admin.ui import prompts as prompt_views
from memory_admin.ui import questions as question_views
from memory_admin.ui import ranking as ranking_views
from memory_admin.ui import review as review_views
from memory_admin.ui import scopes as scope_views
from memory_admin.ui import search as search_views
from memory_admin.ui import sessions as session_views
from memory_admin.ui import tombstones as tombstone_views
from memory_admin.ui import unused as unused_views
from memory_admin.ui import usage as usage_views
from memory_admin.ui import webhooks as webhook_views

app_name = "ui"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("scopes/", scope_views.scope_browser, name="scopes"),
    path("scopes/<str:scope_id>/", scope_views.scope_detail, name="scope_detail"),
    path(
        "scopes/<str:scope_id>/consolidation/",
        scope_views.scope_consolidation,
        name="scope_consolidation",
    ),
    path(
        "scopes/<str:scope_id>/consolidation/edit/",
        scope_views.consolidation_edit_view,
        name="consolidation_edit",
    ),
    path("scopes/<str:scope_id>/pins/", scope_views.scope_pin, name="scope_pin"),
    path(
        "scopes/<str:scope_id>/questions/",
        question_views.scope_questions,
        name="scope_questions",
    ),
    path(
        "scopes/<str:scope_id>/consolidation/compare/",
        history_views.consolidation_compare,
        name="consolidation_compare",
    ),
    path(
        "scopes/<str:scope_id>/consolidation/<int:version>/restore/",
        history_views.consolidation_restore_view,
        name="consolidation_restore",
    ),
    path("scopes/<str:scope_id>/consolidate/", scope_views.consolidate_now, name="consolidate"),
    path("scopes/<str:scope_id>/settings/", scope_views.scope_settings, name="scope_settings"),
    path("scopes/<str:scope_id>/ranking/", ranking_views.scope_ranking, name="scope_ranking"),
    path("scopes/<str:scope_id>/active/", scope_state.scope_active, name="scope_active"),
    path(
        "scopes/<str:scope_id>/observations/add/",
        observation_views.observation_create,
        name="observation_add",
    ),
    path(
        "scopes/<str:scope_id>/observations/bulk/",
        bulk_views.observation_bulk,
        name="observation_bulk",
    ),
    path(
        "observations/<str:observation_id>/",
        observation_views.observation_row,
        name="observation_row",
    ),
    path(
        "observations/<str:observation_id>/edit/",
        observation_views.observation_edit,
        name="observation_edit",
    ),
    path(
        "observations/<str:observation_id>/private/",
        observation_views.observation_privacy,
        name="observation_private",
    ),
    path(
        "observations/<str:observation_id>/delete/",
        observation_views.observation_remove,
        name="observation_delete",
    ),
    path(
        "observations/<str:observation_id>/merge/",
        observation_views.observation_merge,
        name="observation_merge",
    ),
    path(
        "observations/<str:observation_id>/unsupersede/",
        observation_views.observation_unsupersede,
        name="observation_unsupersede",
    ),
    path(
        "observations/<str:observation_id>/history/",
        observation_views.observation_text_history,
        name="observation_history",
    ),
    path("prompts/", prompt_views.prompt_index, name="prompts"),
    path(
        "prompts/<str:agent_id>/questions/<str:kind>/",
        question_views.agent_questions,
        name="agent_questions",
    ),
    path("prompts/<str:agent_id>/<str:kind>/", prompt_views.prompt_edit, name="prompt_edit"),
    path(
        "prompts/<str:agent_id>/<str:kind>/save/",
        prompt_views.prompt_save_view,
        name="prompt_save",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/revert/<int:version>/",
        prompt_views.prompt_revert_view,
        name="prompt_revert",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/dry-run/",
        prompt_run_views.prompt_dry_run,
        name="prompt_dry_run",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/checks/run/",
        prompt_run_views.prompt_checks_run,
        name="prompt_checks_run",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/checks/",
        prompt_run_views.prompt_check_create,
        name="prompt_check_create",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/checks/<str:check_id>/delete/",
        prompt_run_views.prompt_check_delete,
        name="prompt_check_delete",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/corrections/",
        prompt_correction_views.prompt_corrections,
        name="prompt_corrections",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/corrections/<str:correction_id>/check/",
        prompt_correction_views.prompt_correction_check,
        name="prompt_correction_check",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/suggest/",
        prompt_correction_views.prompt_suggest_view,
        name="prompt_suggest",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/experiments/estimate/",
        experiment_views.prompt_experiment_estimate,
        name="prompt_experiment_estimate",
    ),
    path(
        "prompts/<str:agent_id>/<str:kind>/experiments/",
        experiment_views.prompt_experiment_start,
        name="prompt_experiment_start",
    ),
    path(
        "prompt-experiments/<str:experiment_id>/",
        experiment_views.prompt_experiment_detail,
        name="prompt_experiment",
    ),
    path(
        "prompt-experiments/<str:experiment_id>/rerun/",
        experiment_views.prompt_experiment_rerun,
        name="prompt_experiment_rerun",
    ),
    path("search/", search_views.search_inspector, name="search"),
    path("jobs/", job_views.job_index, name="jobs"),
    path("jobs/<str:job_id>/", job_views.job_detail, name="job_detail"),
    path("jobs/<str:job_id>/status/", job_views.job_status, name="job_status"),
    path("jobs/<str:job_id>/retry/", job_views.job_retry_view, name="job_retry"),
    path("jobs/<str:job_id>/undo/", unused_views.bulk_undo_view, name="bulk_undo"),
    path("users/", audit_views.user_audit_view, name="user_audit"),
    path("users/export/", audit_views.user_export_view, name="user_export"),
    path("users/forget/", audit_views.user_forget_view, name="user_forget"),
    path("users/tombstone/lift/", tombstone_views.tombstone_lift_view, name="tombstone_lift"),
    path("users/import/", exchange_views.user_import_view, name="user_import"),
    path("audit/", audit_views.audit_log, name="audit_log"),
    path(
        "agents/<str:agent_id>/sessions/<path:session_id>/",
        session_views.session_detail,
        name="session_detail",
    ),
    path(
        "agents/<str:agent_id>/context-calls/<str:call_id>/",
        context_log_views.context_call_replay,
        name="context_call_replay",
    ),
    path("agents/<str:agent_id>/webhooks/", webhook_views.webhook_list, name="webhooks"),
    path("usage/", usage_views.usage_page, name="usage"),
    path("review/", review_views.review_page, name="review"),
    path(
        "review/<str:observation_id>/decide/",
        review_views.review_decide_view,
        name="review_decide",
    ),
    path("review/agents/<str:agent_id>/bulk/", review_views.review_bulk_view, name="review_bulk"),
    path("review/<str:observation_id>/undo/", review_decided.review_undo_view, name="review_undo"),
    path("people/", people_views.people_list, name="people"),
    path("people/create/", people_views.person_create, name="person_create"),
    path("people/<int:user_id>/role/", people_views.person_role, name="person_role"),
    path("people/<int:user_id>/active/", people_views.person_active, name="person_active"),
    path("people/<int:user_id>/unlock/", people_views.person_unlock, name="person_unlock"),
    path("keys/", people_views.key_list, name="api_keys"),
    path("keys/create/", people_views.key_create, name="api_key_create"),
    path("keys/<int:key_id>/revoke/", people_views.key_revoke, name="api_key_revoke"),
    path("agents/", agent_views.agent_list, name="agents"),
    path("agents/create/", agent_views.agent_create, name="agent_create"),
    path("agents/<str:agent_id>/settings/", agent_views.agent_settings, name="agent_settings"),
    path("agents/<str:agent_id>/ranking/", ranking_views.agent_ranking, name="agent_ranking"),
    path("agents/<str:agent_id>/unused/", unused_views.unused_report_page, name="unused"),
    path("agents/<str:agent_id>/limits/", limits_views.agent_limits_page, name="agent_limits"),
    path("playground/", playground_views.playground, name="playground"),
    path("playground/turn/", playground_views.playground_turn, name="playground_turn"),
]
