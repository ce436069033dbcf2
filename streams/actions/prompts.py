"""Prompt actions: save a new version, revert to an earlier one; save and delete a check."""

from __future__ import annotations

from typing import Any

from streams.actions.base import Actor
from streams.actions.tx import ActionTx, run_action
from streams.core.documents import PromptVersion
from streams.drafts.prompt_checks import PromptCheck, check_create, check_delete
from streams.prompts.questions import QuestionVersion, questions_save
from streams.prompts.versions import SAVE_ATTEMPTS, prompt_revert, prompt_save
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

    def write(tx: ActionTx) -> PromptVersion:
        entry = prompt_save(
            store=store,
            agent_id=agent_id,
            kind=kind,
            text=text,
            author=str(actor),
            scope_id=scope_id,
            expected_version=expected_version,
            session=tx.session,
        )
        tx.audit(
            action="prompt.save",
            object_type="prompt",
            object_id=entry.id,
            agent_id=agent_id,
            summary={"kind": kind, "version": entry.version, "scope_id": entry.scope_id},
        )
        return entry

    return run_action(store, actor, write, attempts=SAVE_ATTEMPTS)


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

    def write(tx: ActionTx) -> PromptVersion:
        entry = prompt_revert(
            store=store,
            agent_id=agent_id,
            kind=kind,
            version=version,
            author=str(actor),
            scope_id=scope_id,
            session=tx.session,
        )
        tx.audit(
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

    return run_action(store, actor, write, attempts=SAVE_ATTEMPTS)


def do_prompt_check_create(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    name: str,
    conversation: str,
    user_name: str,
    expectations: list[dict[str, Any]],
    scope_id: str | None = None,
    kind: str = "extraction",
) -> PromptCheck:
    """Save a check (InvalidInput naming the field when anything is off)."""
    fields: dict[str, Any] = {
        "name": name,
        "conversation": conversation,
        "user_name": user_name,
        "expectations": expectations,
        "scope_id": scope_id,
        "kind": kind,
    }
    return run_action(
        store, actor, lambda tx: prompt_check_save(tx, store=store, agent_id=agent_id, **fields)
    )


def prompt_check_save(
    tx: ActionTx, *, store: MemoryStore, agent_id: str, **fields: Any
) -> PromptCheck:
    """A check and its audit entry, in the caller's action (made by hand, or from a
    support correction: its `correction_id` is kept in the entry too)."""
    check = check_create(
        store=store, agent_id=agent_id, author=str(tx.actor), session=tx.session, **fields
    )
    correction_id = fields.get("correction_id")
    tx.audit(
        action="prompt_check.create",
        object_type="prompt_check",
        object_id=check.id,
        agent_id=agent_id,
        summary={
            "name": check.name,
            "kind": check.kind,
            **({"correction_id": correction_id} if correction_id else {}),
            "expectations": [e.describe() for e in check.expectations],
        },
    )
    return check


def do_prompt_check_delete(
    *, store: MemoryStore, actor: Actor, agent_id: str, check_id: str
) -> None:
    """Delete a check (NotFound when the agent has no such check)."""

    def write(tx: ActionTx) -> None:
        check_delete(store=store, agent_id=agent_id, check_id=check_id, session=tx.session)
        tx.audit(
            action="prompt_check.delete",
            object_type="prompt_check",
            object_id=check_id,
            agent_id=agent_id,
            summary={},
        )

    run_action(store, actor, write)


def do_questions_default_save(
    *,
    store: MemoryStore,
    actor: Actor,
    agent_id: str,
    scope_kind: str,
    questions: list[str] | None,
) -> QuestionVersion | None:
    """The next version of the agent's questions for a scope kind (None removes them)."""

    def write(tx: ActionTx) -> QuestionVersion | None:
        entry = questions_save(
            store=store,
            agent_id=agent_id,
            scope_kind=scope_kind,
            questions=questions,
            author=str(actor),
            session=tx.session,
        )
        tx.audit(
            action="questions.save",
            object_type="questions",
            object_id=f"{agent_id}:{scope_kind}",
            agent_id=agent_id,
            summary={
                "scope_kind": scope_kind,
                "version": entry.version if entry else 0,
                "questions": entry.questions if entry else [],
            },
        )
        return entry

    return run_action(store, actor, write, attempts=SAVE_ATTEMPTS)
