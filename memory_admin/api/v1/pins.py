"""Pins: sentences of a scope's consolidation that every later version holds word for word."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory_admin.api.audit_trail import api_actor
from memory_admin.api.auth import needs, visible_agents
from memory_admin.api.v1.schemas import ScopeOut, ScopePinsIn, error_responses
from memory_admin.stores import get_store
from streams.actions.pins import do_scope_pins_set
from streams.core.documents import Scope
from streams.memory.scopes import scope_get

router = Router(tags=["scopes"])


@router.put(
    "/scopes/{scope_id}/pins",
    auth=needs("write"),
    response={200: ScopeOut, **error_responses(400, 401, 404, 422)},
)
def set_pins(request: HttpRequest, scope_id: str, payload: ScopePinsIn) -> Scope:
    """Replace the scope's pins. Every later consolidation version (threshold run, rebuild,
    restore, hand edit) holds each pin word for word: one the model drops is put back. Pins
    count toward the scope's word limit (a set over it is a 422) and may be set before any
    consolidation exists. Forgetting a user removes the pins that quote their observations.
    """
    store = get_store()
    scope = scope_get(store=store, scope_id=scope_id, agent_ids=visible_agents(request))
    return do_scope_pins_set(store=store, actor=api_actor(request), scope=scope, pins=payload.pins)
