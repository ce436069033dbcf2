"""Prompt versions: saving, reverting, history, and the text of any version (v0 included).

Every saved change is a new version (1, 2, 3, ... per agent, scope and kind),
never an update, so an operator can always see who changed a prompt and go
back. What a level holds depends on the level (`prompt_role`): the agent's and
an individual scope's prompts are whole templates; a group's, the collective's
and a shard's extraction text is guidance for that scope's section of the one
extraction prompt. Version 0 is the code default, so the first save diffs too.
Which saved text a call uses is the resolver's business (`resolver.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from streams.core.documents import PromptKind, PromptVersion, Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.prompts.templates import (
    check_kind,
    validate_guidance,
    validate_shard_guidance,
    validate_template,
)
from streams.store import MemoryStore, StoreSession

PromptSource = Literal["default", "agent", "scope"]
PromptRole = Literal["template", "guidance"]
MIRROR_FIELDS: dict[PromptKind, str] = {
    "extraction": "extraction_prompt",
    "consolidation": "consolidation_prompt",
    "propagation": "propagation_prompt",
}
MAX_AUTHOR_CHARS = 200
SAVE_ATTEMPTS = 20  # each miss means another save landed, so this bounds only a storm


@dataclass(frozen=True)
class EffectivePrompt:
    """The template a run uses, and where it came from (recorded beside the run)."""

    kind: PromptKind
    text: str
    source: PromptSource
    version: int | None  # None for the code default


def prompt_save(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    text: str,
    author: str,
    scope_id: str | None = None,
    reverted_from: int | None = None,
    expected_version: int | None = None,
    session: StoreSession | None = None,
) -> PromptVersion:
    """Save `text` as the next version of the agent's default (or the scope's override).

    With `session` the version and the scope's mirror are the caller's transaction; a
    number taken meanwhile then aborts it with Conflict, and the caller tries it again.

    The template is validated first: an invalid one stores nothing. Saving the text
    that is already current is a no-op that returns the current version, so a form
    submitted twice does not pad the history. `expected_version` (the version the
    editor started from; 0 for none) turns an edit over someone else's newer save
    into a Conflict instead of silently replacing it.
    """
    prompt_kind = check_kind(kind)
    author = _check_author(author)
    scope = _level_scope(
        store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id, session=session
    )
    text = validate_prompt(prompt_kind, scope, text)
    scope_oid = require_object_id(scope.id, what="scope") if scope else None
    for _ in range(SAVE_ATTEMPTS if session is None else 1):
        current = store.prompts.latest(
            agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind, session=session
        )
        current_version = current.version if current else 0
        if expected_version is not None and expected_version != current_version:
            raise Conflict(
                "the prompt was changed since it was read",
                details={"expected_version": expected_version, "version": current_version},
            )
        if current is not None and current.text == text and reverted_from is None:
            return current
        if reverted_from is not None and not 1 <= reverted_from <= current_version:
            raise InvalidInput(
                f"version {reverted_from} does not exist", details=[{"field": "reverted_from"}]
            )
        entry = PromptVersion(
            agent_id=agent_id,
            scope_id=scope_id,
            kind=prompt_kind,
            version=current_version + 1,
            text=text,
            author=author,
            reverted_from=reverted_from,
            created_at=utcnow(),
        )
        # The unique (agent, scope, kind, version) key makes a concurrent save of the same
        # number fail here instead of overwriting; re-read and take the next number.
        if store.prompts.insert(entry, session=session):
            _mirror(store, scope, entry, session=session)
            return entry
    raise Conflict("the prompt is being changed by someone else; try again")


def prompt_revert(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    version: int,
    author: str,
    scope_id: str | None = None,
    session: StoreSession | None = None,
) -> PromptVersion:
    """A new version whose text is that of `version`: history only ever grows."""
    prompt_kind = check_kind(kind)
    scope = _level_scope(
        store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id, session=session
    )
    scope_oid = require_object_id(scope.id, what="scope") if scope else None
    old = store.prompts.get(
        agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind, version=version
    )
    if old is None:
        raise NotFound(f"{prompt_kind} prompt version {version} not found")
    return prompt_save(
        store=store,
        agent_id=agent_id,
        kind=prompt_kind,
        text=old.text,
        author=author,
        scope_id=scope_id,
        reverted_from=version,
        session=session,
    )


def prompt_clear(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    author: str,
    scope_id: str | None = None,
    session: StoreSession | None = None,
) -> PromptVersion | None:
    """Remove the override at this level (a new, empty version marked `cleared`), so the
    level below applies again; None when there was nothing to clear. With `session`, as
    in `prompt_save`: the caller's transaction, which a number taken meanwhile aborts."""
    prompt_kind = check_kind(kind)
    author = _check_author(author)
    scope = _level_scope(
        store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id, session=session
    )
    if scope is not None and scope.is_shard and prompt_kind == "extraction":
        raise InvalidInput(
            "a shard's guidance cannot be removed: a shard exists for what it says belongs "
            "in it (pause the shard instead)",
            details=[{"field": "extraction_prompt"}],
        )
    scope_oid = require_object_id(scope.id, what="scope") if scope else None
    for _ in range(SAVE_ATTEMPTS if session is None else 1):
        current = store.prompts.latest(
            agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind, session=session
        )
        if current is None or current.cleared:
            return None
        entry = PromptVersion(
            agent_id=agent_id,
            scope_id=scope_id,
            kind=prompt_kind,
            version=current.version + 1,
            text="",
            author=author,
            cleared=True,
            created_at=utcnow(),
        )
        if store.prompts.insert(entry, session=session):
            _mirror(store, scope, entry, session=session)
            return entry
    raise Conflict("the prompt is being changed by someone else; try again")


def prompt_current(
    *, store: MemoryStore, agent_id: str, kind: str, scope_id: str | None = None
) -> PromptVersion | None:
    """The latest saved version at exactly this level (agent default or scope), if any."""
    scope_oid = require_object_id(scope_id, what="scope") if scope_id is not None else None
    return store.prompts.latest(agent_id=agent_id, scope_id=scope_oid, kind=check_kind(kind))


def prompt_history(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: str,
    scope_id: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[PromptVersion]:
    """Saved versions at this level, newest first."""
    prompt_kind = check_kind(kind)
    page_size = clamp_limit(limit)
    scope_oid = require_object_id(scope_id, what="scope") if scope_id is not None else None
    position = decode_cursor(cursor, required_keys=("below",))
    if position is not None:
        below = position["below"]
        if not isinstance(below, int) or below < 2:
            raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    else:
        current = store.prompts.latest(agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind)
        if current is None:
            return Page(items=[], next_cursor=None)
        below = current.version + 1
    items = store.prompts.page(
        agent_id=agent_id,
        scope_id=scope_oid,
        kind=prompt_kind,
        below_version=below,
        limit=page_size,
    )
    lowest = below - page_size
    return Page(items=items, next_cursor=encode_cursor({"below": lowest}) if lowest > 1 else None)


def prompt_role(kind: PromptKind, scope: Scope | None) -> PromptRole:
    """Guidance for a group's, the collective's or a shard's extraction; else a template."""
    if kind == "extraction" and scope is not None and scope.scope_type != "individual":
        return "guidance"
    return "template"


def validate_prompt(
    kind: PromptKind, scope: Scope | None, text: str, *, field: str = "text"
) -> str:
    """The text checked as what this level holds: a template, or a scope's guidance."""
    if prompt_role(kind, scope) == "template":
        return validate_template(kind, text)
    assert scope is not None
    if scope.is_shard:
        return validate_shard_guidance(text, field=field)
    return validate_guidance(text, field=field)


def code_default(kind: PromptKind, scope: Scope | None) -> str:
    """Version 0 of a level: the code's template, or no guidance at all."""
    return "" if prompt_role(kind, scope) == "guidance" else DEFAULT_TEMPLATES[kind]


def prompt_version_text(
    *, store: MemoryStore, agent_id: str, kind: str, version: int, scope: Scope | None = None
) -> str | None:
    """The text of one version at this level; 0 is the code default; None if there is none."""
    prompt_kind = check_kind(kind)
    if version == 0:
        return code_default(prompt_kind, scope)
    scope_oid = require_object_id(scope.id, what="scope") if scope else None
    entry = store.prompts.get(
        agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind, version=version
    )
    return entry.text if entry else None


def _level_scope(
    *,
    store: MemoryStore,
    agent_id: str,
    kind: PromptKind,
    scope_id: str | None,
    session: StoreSession | None = None,
) -> Scope | None:
    """The scope an override is written for, which must exist, belong to the agent and
    take part in calls of this kind (the collective memory does not propagate)."""
    if scope_id is None:
        return None
    scope = store.scopes.get(require_object_id(scope_id, what="scope"), session=session)
    if scope is None or scope.agent_id != agent_id:
        raise NotFound("scope not found")
    if kind == "propagation" and scope.scope_type == "collective":
        raise InvalidInput(
            "the collective memory does not propagate: it has no propagation prompt",
            details=[{"field": "kind"}],
        )
    return scope


def _mirror(
    store: MemoryStore,
    scope: Scope | None,
    entry: PromptVersion,
    session: StoreSession | None = None,
) -> None:
    """The scope document carries its current prompt text (API, and the shards and groups
    the formation reads anyway), so the resolver needs no history read per scope."""
    if scope is None:
        return
    fields: dict[str, object] = {MIRROR_FIELDS[entry.kind]: None if entry.cleared else entry.text}
    if prompt_role(entry.kind, scope) == "guidance":
        fields["guidance_version"] = None if entry.cleared else entry.version
    store.scopes.update_fields(require_object_id(scope.id, what="scope"), fields, session=session)


def _check_author(author: str) -> str:
    author = (author or "").strip()
    if not author or len(author) > MAX_AUTHOR_CHARS:
        raise InvalidInput(
            f"the author must be 1 to {MAX_AUTHOR_CHARS} characters",
            details=[{"field": "author"}],
        )
    return author
