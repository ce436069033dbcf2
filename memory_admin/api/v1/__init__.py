"""`/api/v1`: one NinjaAPI, one router per resource, Bearer keys, and the error envelope."""

from __future__ import annotations

from ninja import NinjaAPI

from memory_admin.api.auth import ApiKeyAuth, document_permissions
from memory_admin.api.errors import install_exception_handlers
from memory_admin.api.openapi import document_common_errors
from memory_admin.api.parser import StrictJsonParser
from memory_admin.api.v1 import (
    agents,
    audit,
    bulk,
    chat,
    consolidations,
    context,
    corrections,
    exchange,
    health,
    jobs,
    observations,
    pins,
    privacy,
    prompt_checks,
    prompt_dry_runs,
    prompt_experiments,
    questions,
    ranking,
    review,
    scopes,
    search,
    sessions,
    supersession,
    usage,
    webhooks,
)

api = NinjaAPI(
    title="memory-admin",
    version="1",
    description="Memory for AI agents: scopes, observations and consolidations.",
    auth=ApiKeyAuth(),
    parser=StrictJsonParser(),
    urls_namespace="api-v1",
)
install_exception_handlers(api)
document_common_errors(api)
api.add_router("", health.router)
api.add_router("", scopes.router)
api.add_router("", observations.router)
api.add_router("", supersession.router)
api.add_router("", bulk.router)
api.add_router("", consolidations.router)
api.add_router("", sessions.router)
api.add_router("", jobs.router)
api.add_router("", context.router)
api.add_router("", search.router)
api.add_router("", privacy.router)
api.add_router("", exchange.router)
api.add_router("", audit.router)
api.add_router("", prompt_checks.router)
api.add_router("", corrections.router)
api.add_router("", prompt_experiments.router)
api.add_router("", prompt_dry_runs.router)
api.add_router("", questions.router)
api.add_router("", chat.router)
api.add_router("", usage.router)
api.add_router("", pins.router)
api.add_router("", webhooks.router)
api.add_router("", review.router)
api.add_router("", agents.router)
api.add_router("", ranking.router)
document_permissions(api)  # after every router: it reads what each operation needs

__all__ = ["api"]
