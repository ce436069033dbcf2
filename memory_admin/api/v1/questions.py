"""Questions memory must answer: the agent's default per scope kind (a scope's own are a
scope setting, `PATCH /scopes/{id}` with `questions`)."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Path, Router

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, require_agent
from memory_admin.api.v1.schemas import ExternalId, QuestionsIn, QuestionsOut, error_responses
from memory_admin.stores import get_store
from streams.actions.prompts import do_questions_default_save
from streams.prompts.questions import QuestionVersion, questions_default

router = Router(tags=["questions"])
ScopeKind = Literal["individual", "group", "collective", "shard"]


def _out(scope_kind: ScopeKind, entry: QuestionVersion | None) -> QuestionsOut:
    if entry is None:
        return QuestionsOut(scope_kind=scope_kind, questions=[], version=0)
    return QuestionsOut(
        scope_kind=scope_kind,
        questions=[] if entry.cleared else entry.questions,
        version=entry.version,
        author=entry.author,
        created_at=entry.created_at,
    )


@router.get(
    "/agents/{agent_id}/questions/{scope_kind}",
    auth=needs("read"),
    response={200: QuestionsOut, **error_responses(401, 404, 422)},
)
def get_questions(
    request: HttpRequest, agent_id: Path[ExternalId], scope_kind: ScopeKind
) -> QuestionsOut:
    """The questions every scope of this kind asks unless it sets its own."""
    require_agent(request, agent_id)
    entry = questions_default(store=get_store(), agent_id=agent_id, scope_kind=scope_kind)
    return _out(scope_kind, entry)


@router.put(
    "/agents/{agent_id}/questions/{scope_kind}",
    auth=needs("write"),
    response={200: QuestionsOut, **error_responses(400, 401, 404, 409, 422)},
)
def put_questions(
    request: HttpRequest, agent_id: Path[ExternalId], scope_kind: ScopeKind, payload: QuestionsIn
) -> QuestionsOut:
    """A new version of the default (at most 5, each 1 to 200 characters: else 422 naming
    `questions`); the consolidation call answers them from the next run on."""
    require_agent(request, agent_id)
    entry = do_questions_default_save(
        store=get_store(),
        actor=api_actor(request),
        agent_id=agent_id,
        scope_kind=scope_kind,
        questions=payload.questions,
    )
    return _out(scope_kind, entry)
