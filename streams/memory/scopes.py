"""Scopes: creation on first use, reads, and the settings operators change.

Long because: a scope's settings are read, checked and written together; each check needs the
levels the resolver reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from streams.core.consolidate_after import DAYS_RANGE
from streams.core.documents import REVIEW_MODES, Job, PromptKind, Scope, ScopeType, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, seq_before, seq_cursor
from streams.core.scope_limits import KIND_DEFAULT_FIELDS
from streams.memory.consolidation_jobs import consolidation_due
from streams.memory.pins import pins_checked
from streams.memory.scope_limits import scope_limit_checked
from streams.memory.user_names import user_name_record
from streams.prompts import prompt_clear, prompt_save, validate_prompt
from streams.prompts.questions import questions_save, validate_questions
from streams.store import MemoryStore, StoreSession


@dataclass(frozen=True)
class ScopeKey:
    """The identity of a scope: at most one scope exists per key."""

    agent_id: str
    scope_type: ScopeType
    user_id: str | None = None
    group_id: str | None = None
    name: str | None = None

    def identity(self) -> dict[str, Any]:
        """The fields of the unique scope index, as stored (absent parts are None)."""
        return {
            "agent_id": self.agent_id,
            "scope_type": self.scope_type,
            "user_id": self.user_id,
            "group_id": self.group_id,
            "name": self.name,
        }

    @classmethod
    def individual(cls, agent_id: str, user_id: str) -> ScopeKey:
        return cls(agent_id=agent_id, scope_type="individual", user_id=user_id)

    @classmethod
    def group(cls, agent_id: str, group_id: str) -> ScopeKey:
        return cls(agent_id=agent_id, scope_type="group", group_id=group_id)

    @classmethod
    def collective(cls, agent_id: str, name: str | None = None) -> ScopeKey:
        return cls(agent_id=agent_id, scope_type="collective", name=name)


def scope_get_or_create(
    *,
    store: MemoryStore,
    key: ScopeKey,
    display_name: str | None = None,
    defaults: dict[str, Any] | None = None,
    session: StoreSession | None = None,
) -> tuple[Scope, bool]:
    """The scope for `key`, created on first use; True when this call created it.

    A display name sent by a caller is remembered (and updated when it changes). With
    `session` the scope is created in the caller's transaction, where losing a race to
    another creator aborts it: that is a Conflict (the transaction cannot read the winner).
    """
    existing = store.scopes.find_by_identity(**key.identity(), session=session)
    if existing is not None:
        if display_name and display_name != existing.display_name:
            existing.display_name = display_name
            store.scopes.update_fields(
                require_object_id(existing.id, what="scope"),
                {"display_name": display_name, "label_text": existing.label_text},
                session=session,
            )
            user_name_record(store=store, scope=existing, session=session)
        return existing, False
    now = utcnow()
    store.agents.ensure(key.agent_id, now=now, session=session)
    review = {} if key.scope_type == "individual" else {"review_mode": store.review_mode_shared}
    scope = Scope(
        **key.identity(),
        display_name=display_name or key.name,
        seq=store.agents.allocate_scope_seq(key.agent_id, session=session),
        created_at=now,
        last_activity_at=now,
        **{**store.scope_defaults, **review, **(defaults or {})},
    )
    if not store.scopes.insert(scope, session=session):
        if session is not None:
            raise Conflict("that scope exists already")
        # Another caller created it between our read and our insert: theirs stands.
        winner = store.scopes.find_by_identity(**key.identity())
        if winner is None:  # pragma: no cover - the unique index guarantees it
            raise Conflict("scope creation raced and lost")
        return winner, False
    store.agents.adjust_counters(key.agent_id, now=now, scopes=1, session=session)
    user_name_record(store=store, scope=scope, session=session)
    return scope, True


def scope_create(
    *,
    store: MemoryStore,
    key: ScopeKey,
    display_name: str | None = None,
    author: str = "system",
    session: StoreSession | None = None,
    **settings: Any,
) -> Scope:
    """Create a scope explicitly (API); an existing one is a conflict.

    A shard's guidance given at creation is its version 1, by `author`, so its history
    starts where the shard does. With `session`, all of it is the caller's transaction.
    """
    if key.scope_type == "individual":
        raise InvalidInput("individual scopes are created by conversations, not by hand")
    if settings.get("extraction_prompt") is not None:
        probe = Scope(**key.identity())
        settings["extraction_prompt"] = validate_prompt(
            "extraction", probe, settings["extraction_prompt"], field="extraction_prompt"
        )
    scope, created = scope_get_or_create(
        store=store, key=key, display_name=display_name, defaults=settings, session=session
    )
    if not created:
        raise Conflict("that scope exists already", details={"scope_id": scope.id})
    if scope.extraction_prompt:
        entry = prompt_save(
            store=store,
            agent_id=scope.agent_id,
            kind="extraction",
            text=scope.extraction_prompt,
            author=author,
            scope_id=scope.id,
            session=session,
        )
        scope.extraction_prompt, scope.guidance_version = entry.text, entry.version
    return scope


def scope_get(
    *, store: MemoryStore, scope_id: str, agent_ids: frozenset[str] | None = None
) -> Scope:
    """The scope, or NotFound, also when it belongs to an agent the caller may not see."""
    scope = store.scopes.get(require_object_id(scope_id, what="scope"))
    if scope is None or (agent_ids is not None and scope.agent_id not in agent_ids):
        raise NotFound("scope not found")
    return scope


def shard_page(*, store: MemoryStore, agent_id: str, name: str, others: list[Any]) -> Page[Scope]:
    """The agent's shard of that name as a page of one (or none): `shard=` in a scope list
    names one scope, so another filter beside it is refused rather than ignored."""
    if any(others):
        raise InvalidInput(
            "shard names one scope: give it without other filters", details=[{"field": "shard"}]
        )
    found = store.scopes.find_by_identity(
        agent_id=agent_id, scope_type="collective", user_id=None, group_id=None, name=name
    )
    return Page(items=[found] if found else [], next_cursor=None)


def scope_list(
    *,
    store: MemoryStore,
    agent_id: str,
    scope_type: ScopeType | Literal["shard"] | None = None,
    user_id: str | None = None,
    group_id: str | None = None,
    text: str | None = None,
    consolidation_text: str | None = None,
    oldest_first: bool = False,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[Scope]:
    """An agent's scopes, newest first (or oldest first).

    `text` matches ids and names; `consolidation_text` matches the consolidation text
    (case-insensitive), both inside the bounded windows of the scope list.
    """
    page_size = clamp_limit(limit)
    before = seq_before(cursor)
    agent = store.agents.get(agent_id)
    if agent is None:
        return Page(items=[], next_cursor=None)
    items, next_before = store.scopes.page(
        agent_id=agent_id,
        top_seq=agent.scope_seq,
        before=before,
        limit=page_size,
        scope_type=scope_type,
        user_id=user_id,
        group_id=group_id,
        text=text,
        consolidation_text=consolidation_text,
        ascending=oldest_first,
    )
    return Page(items=items, next_cursor=seq_cursor(next_before))


# -- settings operators change ----------------------------------------------------------

THRESHOLD_RANGE = (1, 1000)
MAX_WORDS_RANGE = (50, 5000)
MAX_OBSERVATIONS_RANGE = (10, 1_000_000)
PROMPT_FIELDS: dict[str, PromptKind] = {
    "extraction_prompt": "extraction",
    "consolidation_prompt": "consolidation",
    "propagation_prompt": "propagation",
}
SETTING_FIELDS = frozenset(
    {
        *PROMPT_FIELDS,
        "is_active",
        "consolidation_threshold",
        "consolidation_max_words",
        "max_observations",
        "consolidate_after_days",
        "review_mode",
        "questions",
        *KIND_DEFAULT_FIELDS,  # limits and models (`streams.memory.scope_limits`)
    }
)


def scope_changes_check(
    *, scope: Scope, changes: dict[str, Any], store: MemoryStore | None = None
) -> dict[str, Any]:
    """The changes, normalised, or InvalidInput naming the field; writes nothing.

    A group's, the collective's and a shard's `extraction_prompt` is guidance text
    (a shard's may not be removed); every other prompt is a whole template, refused
    when it lacks or invents a placeholder. A prompt set to None goes back to what the
    agent (or the code) says. The collective memory does not propagate.
    """
    unknown = sorted(set(changes) - SETTING_FIELDS)
    if unknown:
        raise InvalidInput(
            f"not a scope setting: {', '.join(unknown)}",
            details=[{"field": name} for name in unknown],
        )
    checked: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "is_active":
            if not isinstance(value, bool):
                raise InvalidInput("is_active must be true or false", details=[{"field": name}])
            checked[name] = value
        elif name == "review_mode":
            if value not in REVIEW_MODES:
                raise InvalidInput(
                    "review_mode must be one of off, propagated, all", details=[{"field": name}]
                )
            checked[name] = value
        elif name in ("consolidation_threshold", "consolidation_max_words"):
            low, high = THRESHOLD_RANGE if name == "consolidation_threshold" else MAX_WORDS_RANGE
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidInput(
                    f"{name} must be a whole number from {low} to {high}",
                    details=[{"field": name}],
                )
            if name == "consolidation_max_words" and scope.pins:
                pins_checked(scope.pins, max_words=value)  # the pins must still fit
            checked[name] = value
        elif name == "max_observations":
            low, high = MAX_OBSERVATIONS_RANGE
            what = f"null (off) or a whole number from {low} to {high}"
            checked[name] = _optional_whole(name, value, MAX_OBSERVATIONS_RANGE, what)
        elif name == "consolidate_after_days":
            checked[name] = _optional_whole(
                name,
                value,
                DAYS_RANGE,
                f"null (the scope type's default), 0 (off) or a whole number of days up to "
                f"{DAYS_RANGE[1]}",
            )
        elif name == "questions":
            checked[name] = None if value is None else validate_questions(value)
        elif name in KIND_DEFAULT_FIELDS:
            checked[name] = scope_limit_checked(store=store, scope=scope, field=name, value=value)
        else:
            checked[name] = _checked_prompt(scope, name, value)
    return checked


def scope_update(
    *,
    store: MemoryStore,
    scope: Scope,
    changes: dict[str, Any],
    actor: str,
    follow_ups: list[Job] | None = None,
    session: StoreSession | None = None,
) -> Scope:
    """Change a scope's settings (not its consolidation text) and return the fresh scope.

    A threshold change or a resume checks the threshold (a job in `follow_ups`). With
    `session`, all of it (prompt versions and the job too) is the caller's transaction.

    A template prompt is also saved as the scope's next override version, authored by
    `actor`, so its history shows who changed what; the scope document mirrors it.
    """
    checked = scope_changes_check(scope=scope, changes=changes, store=store)
    oid = require_object_id(scope.id, what="scope")
    _save_prompts(store, scope, checked, actor=actor, session=session)
    if "questions" in checked:  # a new version; it mirrors itself onto the scope
        questions_save(
            store=store,
            agent_id=scope.agent_id,
            scope_kind=scope.kind,
            questions=checked.pop("questions"),
            author=actor,
            scope=scope,
            session=session,
        )
    if checked and not store.scopes.update_fields(oid, checked, session=session):
        raise NotFound("scope not found")
    fresh = store.scopes.get(oid, session=session)
    if fresh is None:
        raise NotFound("scope not found")
    if "consolidation_threshold" in checked or checked.get("is_active") is True:
        job = consolidation_due(
            store=store, scope_id=scope.id, trigger="threshold", session=session
        )
        if job is not None and follow_ups is not None:
            follow_ups.append(job)
    return fresh


def _save_prompts(
    store: MemoryStore,
    scope: Scope,
    checked: dict[str, Any],
    *,
    actor: str,
    session: StoreSession | None,
) -> None:
    """Each prompt field of `checked` (popped) as the scope's next override version."""
    for name, kind in PROMPT_FIELDS.items():
        if name not in checked:
            continue
        # The prompt history is written here and mirrors itself onto the scope document.
        text = checked.pop(name)
        if text is None:
            prompt_clear(
                store=store,
                agent_id=scope.agent_id,
                kind=kind,
                author=actor,
                scope_id=scope.id,
                session=session,
            )
            continue
        prompt_save(
            store=store,
            agent_id=scope.agent_id,
            kind=kind,
            text=text,
            author=actor,
            scope_id=scope.id,
            session=session,
        )


def _optional_whole(name: str, value: Any, bounds: tuple[int, int], what: str) -> int | None:
    """None, or a whole number within `bounds`; else InvalidInput saying `what` it must be."""
    low, high = bounds
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
    ):
        raise InvalidInput(f"{name} must be {what}", details=[{"field": name}])
    return value


def _checked_prompt(scope: Scope, name: str, value: Any) -> str | None:
    kind = PROMPT_FIELDS[name]
    if kind == "propagation" and scope.scope_type == "collective":
        raise InvalidInput(
            "the collective memory does not propagate: it has no propagation prompt",
            details=[{"field": name}],
        )
    if value is None:
        if kind == "extraction" and scope.is_shard:
            raise InvalidInput(
                "a shard needs extraction guidance: say what belongs in it",
                details=[{"field": name}],
            )
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text or null", details=[{"field": name}])
    try:
        return validate_prompt(kind, scope, value, field=name)
    except InvalidInput as exc:
        # The template validator speaks of "text"; the caller sent this field.
        details = [
            {**item, "field": name} if isinstance(item, dict) else item
            for item in (exc.details or [{}])
        ]
        raise InvalidInput(exc.message, details=details) from exc
