"""Correction actions: make a prompt check of a correction (its audit entry with it).

Corrections themselves are written by the actions that correct (edit, delete, private,
bulk, review) through `ActionTx.correct`, in their own transactions."""

from __future__ import annotations

from streams.actions.base import Actor
from streams.actions.prompts import prompt_check_save
from streams.actions.tx import ActionTx, run_action
from streams.core.exceptions import Conflict
from streams.drafts.corrections import correction_check_spec, correction_get
from streams.drafts.prompt_checks import PromptCheck, check_list
from streams.store import MemoryStore


def do_correction_check(
    *, store: MemoryStore, actor: Actor, correction_id: str, agent_ids: frozenset[str] | None
) -> PromptCheck:
    """The prompt check a correction implies (`correction_check_spec`), saved with its
    audit entry; 409 when one was made from this correction already."""
    correction = correction_get(store=store, correction_id=correction_id, agent_ids=agent_ids)
    agent_id = correction.agent_id
    if any(c.correction_id == correction.id for c in check_list(store=store, agent_id=agent_id)):
        raise Conflict("a check was made from this correction already")
    spec = correction_check_spec(store=store, correction=correction)

    def write(tx: ActionTx) -> PromptCheck:
        return prompt_check_save(tx, store=store, agent_id=agent_id, **spec)

    return run_action(store, actor, write)
