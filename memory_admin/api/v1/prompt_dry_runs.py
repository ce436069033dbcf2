"""`POST /agents/{agent_id}/prompt-dry-runs`: one prompt on one input with two models side
by side (the prompt editor's "Compare two models"). Nothing is stored."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from pydantic import StringConstraints

from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, InSchema, Prompt, error_responses
from memory_admin.integrations.llm import get_llm_provider
from memory_admin.stores import get_store
from streams.core.exceptions import InvalidInput
from streams.drafts.dry_run_models import checked_models, dry_run_models
from streams.memory.scopes import scope_get
from streams.prompts import Draft, validate_prompt

router = Router(tags=["prompt checks"])


class DryRunIn(InSchema):
    kind: Literal["extraction", "consolidation", "propagation"]
    models: list[Annotated[str, StringConstraints(min_length=1, max_length=100)]] = Field(
        ...,
        description="Two different models of the price table (MEMORY_LLM_PRICES), each run "
        "with the same prompt on the same input.",
    )
    text: Prompt | None = Field(
        None, description="A draft template (or a scope's guidance); null: the prompt in effect."
    )
    scope_id: Annotated[str, StringConstraints(max_length=24)] | None = Field(
        None,
        description="Consolidation and propagation: the scope to run on (its pending "
        "observations, or what its last consolidation absorbed); extraction: the level the "
        "draft is for.",
    )
    conversation: Annotated[str, StringConstraints(max_length=20_000)] = Field(
        "", description='Extraction: one message per line, "user: ..." or "assistant: ...".'
    )
    user_name: Annotated[str, StringConstraints(max_length=128)] = "User"


class DryRunSideOut(Schema):
    model_requested: str
    model: str | None = Field(description="The model that answered, as the server says")
    prompt: str
    text: str | None
    items: list[dict[str, str]]
    error: str | None
    duration_ms: int


class DryRunOut(Schema):
    kind: str
    runs: list[DryRunSideOut]


@router.post(
    "/agents/{agent_id}/prompt-dry-runs",
    auth=needs("write"),
    response={200: DryRunOut, **error_responses(400, 401, 404, 422)},
)
def prompt_dry_run(
    request: HttpRequest, agent_id: Path[ExternalId], payload: DryRunIn
) -> dict[str, Any]:
    """Run one prompt with two models on the same input, side by side; nothing is stored."""
    require_agent(request, agent_id)
    store = get_store()
    models = checked_models(store=store, models=payload.models)
    scope = None
    if payload.scope_id:
        scope = scope_get(store=store, scope_id=payload.scope_id, agent_ids=frozenset([agent_id]))
    if payload.kind == "extraction" and not payload.conversation.strip():
        raise InvalidInput(
            "an extraction dry run needs a conversation", details=[{"field": "conversation"}]
        )
    draft = None
    if payload.text is not None:
        draft = Draft(
            validate_prompt(payload.kind, scope, payload.text), scope.id if scope else None
        )
    runs = dry_run_models(
        store=store,
        llm=get_llm_provider(),
        agent_id=agent_id,
        kind=payload.kind,
        models=models,
        draft=draft,
        scope=scope,
        conversation=payload.conversation,
        user_name=payload.user_name,
    )
    return {
        "kind": payload.kind,
        "runs": [
            {
                "model_requested": model,
                "model": run.model,
                "prompt": run.prompt,
                "text": run.text,
                "items": run.items,
                "error": run.error,
                "duration_ms": run.duration_ms,
            }
            for model, run in zip(models, runs, strict=True)
        ],
    }
