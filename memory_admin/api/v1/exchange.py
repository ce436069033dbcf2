"""Export a user or a scope (JSON or Markdown) and import an export back."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Path, Query, Router, Schema

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent, visible_agents
from memory_admin.api.v1.schemas import ExternalId, InSchema, RefusedOut, error_responses
from memory_admin.stores import get_store
from streams.actions.exchange import do_memory_import, do_scope_export, do_user_export_document
from streams.people.exchange import MAX_SCOPES
from streams.people.export import (
    export_filename,
    export_json,
    export_markdown,
    scope_for_export,
)

router = Router(tags=["export"])

EXPORT_RESPONSE = {
    "responses": {
        200: {
            "description": "The export: JSON (`format=json`, the default) or Markdown.",
            "content": {
                "application/json": {"schema": {"type": "object"}},
                "text/markdown": {"schema": {"type": "string"}},
            },
        }
    }
}


class ExportQuery(Schema):
    format: Literal["json", "markdown"] = "json"


class ImportIn(InSchema):
    format: str = Field(..., max_length=64)
    kind: Literal["user", "scope"] | None = None
    agent_id: ExternalId
    user_id: ExternalId | None = None
    scope_id: str | None = Field(None, max_length=64)
    exported_at: str | None = Field(None, max_length=64)
    scopes: list[dict[str, Any]] = Field(..., max_length=MAX_SCOPES)


class LeftOutOut(Schema):
    item: str = Field(description="The scope block, e.g. `scopes[0]`.")
    reason: str = Field(description="`flagged`: a shared scope does not take the text.")
    flags: list[str]


class ImportOut(Schema):
    scopes_created: int
    observations_imported: int
    observations_already_there: int
    deleted_skipped: int
    versions_imported: int
    # What erasure tombstones refused: the forgotten users, nothing of whom was stored.
    observations_refused: int = 0
    refused: list[RefusedOut] = Field(default_factory=list)
    settings_applied: int = Field(
        0,
        description="Scopes this import created with the document's settings (pins, "
        "threshold, word limit, review mode, retention cap, prompt overrides, groups).",
    )
    settings_skipped: int = Field(
        0,
        description="Scopes that existed with settings of their own, other than the "
        "document's: theirs stand.",
    )
    consolidations_left_out: list[LeftOutOut] = Field(
        default_factory=list,
        description="Consolidation histories a shared scope did not take: a version flagged "
        "`pii:*` or `instruction` (the rest of the block applies; the scope is consolidated "
        "again from its observations). Secrets are redacted in every scope.",
    )


def _answer(data: dict[str, Any], fmt: str, name: str) -> HttpResponse:
    """The export as a download; the UI's Export buttons send the same bytes."""
    if fmt == "markdown":
        response = HttpResponse(export_markdown(data), content_type="text/markdown; charset=utf-8")
    else:
        response = HttpResponse(export_json(data), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{export_filename(name, fmt)}"'
    return response


@router.get(
    "/agents/{agent_id}/users/{user_id}/export",
    auth=needs("write"),
    response={200: None, **error_responses(401, 404, 422)},
    openapi_extra=EXPORT_RESPONSE,
)
def export_user(
    request: HttpRequest,
    agent_id: Path[ExternalId],
    user_id: Path[ExternalId],
    query: Query[ExportQuery],
) -> HttpResponse:
    """What is kept about one user: their individual scope (consolidation with its history,
    observations) and their observations in shared scopes. Deleted observations are listed
    without their text; versions a rebuild redacted hold the marker."""
    require_agent(request, agent_id)
    data = do_user_export_document(
        store=get_store(), actor=api_actor(request), agent_id=agent_id, user_id=user_id
    )
    return _answer(data, query.format, f"{agent_id}-{user_id}")


@router.get(
    "/scopes/{scope_id}/export",
    auth=needs("write"),
    response={200: None, **error_responses(401, 404, 422)},
    openapi_extra=EXPORT_RESPONSE,
)
def export_scope(request: HttpRequest, scope_id: str, query: Query[ExportQuery]) -> HttpResponse:
    """One scope: its consolidation with its history and every observation of its log."""
    store = get_store()
    scope = scope_for_export(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    data = do_scope_export(store=store, actor=api_actor(request), scope=scope)
    return _answer(data, query.format, f"scope-{scope.id}")


@router.post(
    "/agents/{agent_id}/import",
    auth=needs("write"),
    response={200: ImportOut, **error_responses(400, 401, 404, 413, 422)},
)
def import_memory(request: HttpRequest, agent_id: Path[ExternalId], payload: ImportIn) -> dict:
    """Take a JSON export of this agent back: idempotent by ids (what is stored already is
    left as it is). Every item is checked as any write checks it, and an item changed since
    the export (its `digest`) is refused: 422 lists each bad item, and nothing is stored."""
    require_agent(request, agent_id)
    return do_memory_import(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        document={
            **{k: v for k, v in payload.model_dump().items() if v is not None},
            "scopes": payload.scopes,
        },
    )
