"""Pin actions: set a scope's pins, and save a hand edit "and pin" what it added.

The audit entry keeps digests of the pins, never their text (they quote memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from streams.actions.base import Actor
from streams.actions.scopes import do_consolidation_edit
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Scope
from streams.core.exceptions import NotFound
from streams.core.ids import require_object_id
from streams.guard.screening import origin_of, screen_pins
from streams.memory.pins import new_sentences, pins_checked
from streams.records.audit import audit_change, content_digest
from streams.store import MemoryStore, StoreSession


def do_scope_pins_set(
    *, store: MemoryStore, actor: Actor, scope: Scope, pins: list[str], override: bool = False
) -> Scope:
    """Replace the scope's pins (422 over the word limit); every later version holds them.

    Pins pass the screen: secrets redacted; in a shared scope a pin flagged `pii:*` or
    `instruction` is refused (422 `flagged`) unless a person confirms it (`override`),
    which the entry records (`override_flags`)."""
    checked, overridden = screen_pins(
        scope=scope,
        pins=pins_checked(pins, max_words=scope.consolidation_max_words),
        origin=origin_of(str(actor)),
        override=override,
    )

    def write(tx: ActionTx) -> None:
        _store_pins(store, scope, checked, session=tx.session)
        tx.audit(
            action="scope.pins",
            object_type="scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={
                "pins": audit_change(len(scope.pins), len(checked)),
                "pinned": [content_digest(p) for p in checked],
                **({"override_flags": overridden} if overridden else {}),
            },
        )

    run_action(store, actor, write)
    stored: list[str] = list(checked)
    return replace(scope, pins=stored)


def do_consolidation_edit_and_pin(
    *,
    store: MemoryStore,
    actor: Actor,
    scope: Scope,
    text: str,
    expected_version: int,
    override: bool = False,
) -> Scope:
    """A hand edit whose new sentences (those the current text did not hold) are pinned, so
    the next run, rebuild or restore keeps them; the pins are put back if the edit fails."""
    added = new_sentences(scope.consolidation, text)
    checked = pins_checked([*scope.pins, *added], max_words=scope.consolidation_max_words)
    if checked != scope.pins:
        pinned = do_scope_pins_set(
            store=store, actor=actor, scope=scope, pins=checked, override=override
        )
    else:
        pinned = scope
    try:
        return do_consolidation_edit(
            store=store,
            actor=actor,
            scope=pinned,
            text=text,
            expected_version=expected_version,
            override=override,
        )
    except BaseException:
        if pinned is not scope:
            _store_pins(store, scope, scope.pins)
        raise


def _store_pins(
    store: MemoryStore, scope: Scope, pins: Sequence[str], session: StoreSession | None = None
) -> None:
    stored = screen_pins(scope=scope, pins=pins, origin="operator", override=True)[0]
    if not store.scopes.set_pins(
        require_object_id(scope.id, what="scope"), stored, session=session
    ):
        raise NotFound("scope not found")
