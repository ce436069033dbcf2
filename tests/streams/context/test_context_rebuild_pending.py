"""A consolidation that awaits its rebuild still holds removed text: context leaves it
out until the rebuild has written the version without it (found by the multi-host
rehearsal: with the worker down, context served a deleted observation's words)."""

from __future__ import annotations

from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create


def _context(store) -> str:
    return context_assemble(
        store=store, agent_id="a1", user_id="u1", message="what do you know?", log=False
    ).xml


def test_a_consolidation_awaiting_its_rebuild_is_left_out_of_context(store):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    kept = observation_add(store=store, scope=scope, content="Gene keeps the zq7 key in a drawer.")
    observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id), content="Gene likes tea."
    )
    consolidation_commit(
        store=store,
        scope=scope_get(store=store, scope_id=scope.id),
        expected_version=0,
        text="Gene keeps the zq7 key in a drawer.",
        absorbed_ids=[kept.id],
        trigger="threshold",
        actor=None,
    )
    assert "zq7" in _context(store)

    store.scopes.flag_rebuild(ObjectId(scope.id), [ObjectId(kept.id)])  # as a delete does

    shown = _context(store)
    assert "zq7" not in shown
    assert "Gene likes tea." in shown  # the scope's observations still show
    store.scopes.unflag_rebuild(ObjectId(scope.id), [ObjectId(kept.id)])
    assert "zq7" in _context(store)
