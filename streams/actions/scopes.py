"""Scope actions: create a group scope or collective shard, change settings (pause and
resume included), and hand-edit the consolidation (alone or with settings)."""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput
from streams.guard.screening import origin_of, screen_scope_text
from streams.memory.consolidation import consolidation_edit
from streams.memory.scopes import ScopeKey, scope_changes_check, scope_create, scope_update
from streams.prompts.versions import SAVE_ATTEMPTS
from streams.records.audit import audit_changes
from streams.store import MemoryStore

EDIT_FIELDS = ["consolidation", "consolidation_version"]


def do_scope_create(
    *,
    store: MemoryStore,
    actor: Actor,
    key: ScopeKey,
    display_name: str | None = None,
    extraction_prompt: str | None = None,
) -> Scope:
    """Create a group scope or a collective shard (individual scopes come from
    conversations); the scope, its guidance's version 1 and the entry commit together."""
    settings: dict[str, Any] = {}
    if extraction_prompt is not None:
        settings["extraction_prompt"] = extraction_prompt

    def write(tx: ActionTx) -> Scope:
        scope = scope_create(
            store=store,
            key=key,
            display_name=display_name,
            author=str(actor),
            session=tx.session,
            **settings,
        )
        tx.audit(
            action="scope.create",
            object_type="scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={
                "scope_type": scope.scope_type,
                "group_id": scope.group_id,
                "name": scope.name,
            },
        )
        return scope

    return run_action(store, actor, write)


def do_scope_update(
    *,
    store: MemoryStore,
    actor: Actor,
    scope: Scope,
    changes: dict[str, Any],
    text: str | None = None,
    expected_version: int | None = None,
    override: bool = False,
) -> Scope:
    """Change settings and/or hand-edit the consolidation; returns the fresh scope.

    A hand edit passes the screen (`consolidation_edit`): in a shared scope a flagged
    text is refused unless a person confirms it (`override`, recorded in the entry's
    `override_flags`).

    A hand edit carries the `expected_version` it started from (Conflict if the scope
    moved on, and then nothing is applied). Invalid settings are refused before the
    edit, and the edit, the settings, the entry and the threshold's job commit in one
    transaction, so a refusal never leaves half a change. The entry is `scope.update`
    (object type "scope") or, with a hand edit, `consolidation.edit` (object type
    "consolidation"); its summary is the before/after of every changed field.
    """
    if (text is None) != (expected_version is None):
        field = "expected_version" if text is not None else "consolidation"
        raise InvalidInput(
            "a hand edit of the consolidation needs both consolidation and expected_version",
            details=[{"field": field}],
        )
    scope_changes_check(scope=scope, changes=changes, store=store)
    edited = text is not None
    fields = [*changes, *(EDIT_FIELDS if edited else [])]
    origin = origin_of(str(actor))
    overridden: list[str] = []
    if text is not None:  # refused before anything is written; the edit screens it again
        _, overridden = screen_scope_text(
            scope=scope, text=text, origin=origin, override=override, field="consolidation"
        )

    def write(tx: ActionTx) -> Scope:
        if text is not None and expected_version is not None:
            consolidation_edit(
                store=store,
                scope=scope,
                text=text,
                expected_version=expected_version,
                actor=str(actor),
                origin=origin,
                override=override,
                session=tx.session,
            )
        updated = scope_update(
            store=store,
            scope=scope,
            changes=changes,
            actor=str(actor),
            follow_ups=tx.jobs,
            session=tx.session,
        )
        tx.audit(
            action="consolidation.edit" if edited else "scope.update",
            object_type="consolidation" if edited else "scope",
            object_id=scope.id,
            agent_id=scope.agent_id,
            summary={
                **audit_changes(
                    {f: getattr(scope, f, None) for f in fields},
                    {f: getattr(updated, f, None) for f in fields},
                ),
                **({"override_flags": overridden} if overridden else {}),
            },
        )
        return updated

    # A prompt version number taken meanwhile aborts the transaction: try it again (a
    # hand edit's Conflict is the caller's to resolve, so it is not retried).
    return run_action(store, actor, write, attempts=1 if edited else SAVE_ATTEMPTS)


def do_consolidation_edit(
    *,
    store: MemoryStore,
    actor: Actor,
    scope: Scope,
    text: str,
    expected_version: int,
    override: bool = False,
) -> Scope:
    """A hand edit of the consolidation alone (the editor page)."""
    return do_scope_update(
        override=override,
        store=store,
        actor=actor,
        scope=scope,
        changes={},
        text=text,
        expected_version=expected_version,
    )
