"""factory-boy factories that write through the domain services, like the app does."""

from __future__ import annotations

from typing import Any

import factory

from streams.core.documents import Observation, Scope
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore


class ScopeFactory(factory.Factory):
    """`ScopeFactory.create(store=store)` creates through `scope_get_or_create`.

    Traits: `group=True`, `collective=True`, `shard=True` (a named collective shard).
    """

    class Meta:
        model = Scope

    agent_id = "agent-1"
    scope_type = "individual"
    user_id = factory.Sequence(lambda n: f"user-{n}")
    group_id = None
    name = None
    display_name = factory.Faker("first_name")

    class Params:
        group = factory.Trait(
            scope_type="group",
            user_id=None,
            group_id=factory.Sequence(lambda n: f"group-{n}"),
            display_name=factory.Sequence(lambda n: f"Team {n}"),
        )
        collective = factory.Trait(scope_type="collective", user_id=None, display_name=None)
        shard = factory.Trait(
            scope_type="collective",
            user_id=None,
            name=factory.Sequence(lambda n: f"shard-{n}"),
            display_name=None,
        )

    @classmethod
    def _create(cls, model_class: type[Scope], *, store: MemoryStore, **kwargs: Any) -> Scope:
        key = ScopeKey(
            agent_id=kwargs.pop("agent_id"),
            scope_type=kwargs.pop("scope_type"),
            user_id=kwargs.pop("user_id"),
            group_id=kwargs.pop("group_id"),
            name=kwargs.pop("name"),
        )
        scope, _ = scope_get_or_create(
            store=store, key=key, display_name=kwargs.pop("display_name"), defaults=kwargs or None
        )
        return scope


class ObservationFactory(factory.Factory):
    """`ObservationFactory.create(store=store, scope=scope)` adds through `observation_add`."""

    class Meta:
        model = Observation

    content = factory.Faker("sentence", nb_words=10)
    private = False

    @classmethod
    def _create(
        cls, model_class: type[Observation], *, store: MemoryStore, scope: Scope, **kwargs: Any
    ) -> Observation:
        return observation_add(store=store, scope=scope, **kwargs)


def edit_consolidation(store: MemoryStore, scope: Scope, text: str) -> None:
    """An operator writes `scope`'s consolidation by hand, over its current version."""
    fresh = scope_get(store=store, scope_id=scope.id)
    consolidation_edit(
        store=store,
        scope=fresh,
        text=text,
        expected_version=fresh.consolidation_version,
        actor="operator",
    )
