"""Prompt actions: save a new version, revert to an earlier one."""

from __future__ import annotations

from streams.actions.base import Actor, record
from streams.documents import PromptVersion
from streams.prompts import prompt_revert, prompt_save
from streams.store import MemoryStore


def do_prompt_save(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    kind: str,
    text: str,
    scope_id: str | None = None,
    expected_version: int | None = None,
) -> PromptVersion:
    """The next version of the agent's default (or the scope's override)."""
    entry = prompt_save(
        store=store,
        agent_id=agent_id,
        kind=kind,
        text=text,
        author=str(actor),
        scope_id=scope_id,
        expected_version=expected_version,
    )
    record(
        store=store,
        actor=actor,
        action="prompt.save",
        object_type="prompt",
        object_id=entry.id,
        agent_id=agent_id,
        summary={"kind": kind, "version": entry.version, "scope_id": entry.scope_id},
    )
    return entry


def do_prompt_revert(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    kind: str,
    version: int,
    scope_id: str | None = None,
) -> PromptVersion:
    """A new version whose text is that of `version`: history only ever grows."""
    entry = prompt_revert(
        store=store,
        agent_id=agent_id,
        kind=kind,
        version=version,
        author=str(actor),
        scope_id=scope_id,
    )
    record(
        store=store,
        actor=actor,
        action="prompt.revert",
        object_type="prompt",
        object_id=entry.id,
        agent_id=agent_id,
        summary={
            "kind": kind,
            "reverted_from": version,
            "version": entry.version,
            "scope_id": entry.scope_id,
        },
    )
    return entry
