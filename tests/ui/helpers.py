"""Shared by the UI view tests: htmx headers and a scope with some history."""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from streams.core.documents import Scope
from streams.memory.consolidation import consolidation_edit
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

HTMX = {"HTTP_HX_REQUEST": "true"}


SCOPE_TRAITS: dict[str, dict[str, Any]] = {
    "individual": {"user_id": "u-gene", "display_name": "Gene"},
    "group": {"group": True, "group_id": "g-eden"},
    "collective": {"collective": True},
    "shard": {"shard": True, "name": "known-issues"},
}


def scope_with_history(
    store: MemoryStore, *, agent_id: str = "support-bot", scope_type: str = "individual"
) -> Scope:
    """A scope (Gene's by default; or a group, the collective, a shard) with two
    consolidation versions and three pending observations."""
    scope = ScopeFactory.create(store=store, agent_id=agent_id, **SCOPE_TRAITS[scope_type])
    consolidation_edit(
        store=store, scope=scope, text="Gene likes tea.", expected_version=0, actor="ui:seed"
    )
    consolidation_edit(
        store=store,
        scope=scope,
        text="Gene likes green tea and works in Lisbon.",
        expected_version=1,
        actor="ui:seed",
    )
    for text in ("Gene moved to Porto.", "Gene prefers short answers.", "Gene uses Rust."):
        ObservationFactory.create(store=store, scope=scope, content=text)
    fresh = store.scopes.get(ObjectId(scope.id))
    assert fresh is not None
    return fresh


def recall_search_params(store: MemoryStore) -> dict[str, str]:
    """The search inspector's form for Gene (with history) in the Eden team, asking a recall."""
    gene = scope_with_history(store)
    team = ScopeFactory.create(
        store=store, agent_id="support-bot", group=True, group_id="eden", display_name="Eden"
    )
    ObservationFactory.create(store=store, scope=team, content="The Eden team deploys on Fridays.")
    return {
        "agent": "support-bot",
        "user": gene.user_id or "",
        "user_name": "Gene",
        "groups": "eden=Eden Team",
        "message": "What did I tell you about Rust?",
    }
