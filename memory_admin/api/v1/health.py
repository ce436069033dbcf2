"""`GET /health`: unauthenticated, for load balancers and the operator's first look."""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import Router

from memory_admin.api.errors import error_response, with_retry_after
from memory_admin.api.ratelimit import rate_limit_mode
from memory_admin.api.v1.schemas import HealthOut, error_responses
from memory_admin.integrations.llm import llm_server_terms
from memory_admin.stores import get_store, store_mode, store_unreachable
from streams.core.exceptions import IndexesMissing, Unavailable

logger = logging.getLogger("memory_admin.api")
router = Router(tags=["health"])


@router.get("/health", auth=None, response={200: HealthOut, **error_responses(503)})
def health(request: HttpRequest) -> dict[str, object] | HttpResponse:
    """Whether the store answers, and which LLM provider and task queue are configured;
    with a model server, the output mode it accepted (`json_schema`, or the fallback this
    process stepped down to, with a warning) and whether `temperature` is sent."""
    report: dict[str, object] = {
        "status": "ok",
        "store": "ok",
        "llm": settings.MEMORY_LLM_PROVIDER,
        "queue": "eager" if settings.CELERY_TASK_ALWAYS_EAGER else "broker",
        "store_mode": store_mode(),
        "rate_limit": rate_limit_mode(),
    }
    try:
        get_store().ping()
    except IndexesMissing as exc:
        logger.error("health: %s", exc.message)
        return with_retry_after(
            error_response(
                503,
                code=exc.code,
                message=exc.message,
                details={**report, "status": "unavailable", "store": "indexes_missing"},
            )
        )
    except Unavailable as exc:
        # The reason (hosts, driver text) goes to the log, not to anonymous callers.
        logger.warning("health: %s", exc.message)
        store_unreachable(exc)  # an embedded store that died is restarted meanwhile
        return with_retry_after(
            error_response(
                503,
                code="unavailable",
                message="the memory store is unreachable",
                details={**report, "status": "unavailable", "store": "unavailable"},
            )
        )
    terms = llm_server_terms()  # after the ping: a store that is down answers 503 first
    if terms is not None:
        report["llm_output"] = {"output": terms["output"], "temperature": terms["temperature"]}
        report["warnings"] = terms["warnings"]
    return report
