"""Prompt versions: saving, reverting, history, and which prompt is in effect.

Every saved change is a new version (1, 2, 3, ... per agent, scope and kind),
never an update, so an operator can always see who changed a prompt and go
back. Resolution is scope override < agent default < code default: the most
specific saved prompt wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bson import ObjectId

from streams.documents import PromptKind, PromptVersion, utcnow
from streams.exceptions import Conflict, InvalidInput, NotFound
from streams.ids import require_object_id
from streams.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.prompts.defaults import DEFAULT_TEMPLATES
from streams.prompts.templates import check_kind, validate_template
from streams.store import MemoryStore

PromptSource = Literal["default", "agent", "scope"]
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
) -> PromptVersion:
    """Save `text` as the next version of the agent's default (or the scope's override).

    The template is validated first: an invalid one stores nothing. Saving the text
    that is already current is a no-op that returns the current version, so a form
    submitted twice does not pad the history. `expected_version` (the version the
    editor started from; 0 for none) turns an edit over someone else's newer save
    into a Conflict instead of silently replacing it.
    """
    prompt_kind = check_kind(kind)
    text = validate_template(prompt_kind, text)
    author = _check_author(author)
    scope_oid = _scope_oid(store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id)
    for _ in range(SAVE_ATTEMPTS):
        current = store.prompts.latest(agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind)
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
        if store.prompts.insert(entry):
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
) -> PromptVersion:
    """A new version whose text is that of `version`: history only ever grows."""
    prompt_kind = check_kind(kind)
    scope_oid = _scope_oid(store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id)
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
    )


def prompt_clear(
    *, store: MemoryStore, agent_id: str, kind: str, author: str, scope_id: str | None = None
) -> PromptVersion | None:
    """Remove the override at this level (a new, empty version marked `cleared`), so the
    level below applies again; None when there was nothing to clear."""
    prompt_kind = check_kind(kind)
    author = _check_author(author)
    scope_oid = _scope_oid(store=store, agent_id=agent_id, kind=prompt_kind, scope_id=scope_id)
    for _ in range(SAVE_ATTEMPTS):
        current = store.prompts.latest(agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind)
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
        if store.prompts.insert(entry):
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


def effective_prompt(
    *, store: MemoryStore, agent_id: str, kind: str, scope_id: str | None = None
) -> EffectivePrompt:
    """The template in effect: the scope's override, else the agent's default, else the code's.

    At most two indexed reads (one when the scope has an override), because this runs
    before every formation and consolidation.
    """
    prompt_kind = check_kind(kind)
    if scope_id is not None:
        scope_oid = require_object_id(scope_id, what="scope")
        override = store.prompts.latest(agent_id=agent_id, scope_id=scope_oid, kind=prompt_kind)
        if override is not None and not override.cleared:
            return EffectivePrompt(prompt_kind, override.text, "scope", override.version)
    agent_default = store.prompts.latest(agent_id=agent_id, scope_id=None, kind=prompt_kind)
    if agent_default is not None and not agent_default.cleared:
        return EffectivePrompt(prompt_kind, agent_default.text, "agent", agent_default.version)
    return EffectivePrompt(prompt_kind, DEFAULT_TEMPLATES[prompt_kind], "default", None)


def _scope_oid(
    *, store: MemoryStore, agent_id: str, kind: PromptKind, scope_id: str | None
) -> ObjectId | None:
    """The scope an override is written for, which must exist and belong to the agent."""
    if scope_id is None:
        return None
    scope = store.scopes.get(require_object_id(scope_id, what="scope"))
    if scope is None or scope.agent_id != agent_id:
        raise NotFound("scope not found")
    if kind == "extraction" and scope.is_shard:
        # A shard's extraction prompt is guidance placed inside the extraction template,
        # edited on the shard itself; a template override here would never be used.
        raise InvalidInput(
            "a shard's extraction prompt is guidance set on the shard, not a template",
            details=[{"field": "kind"}],
        )
    return require_object_id(scope.id, what="scope")


def _check_author(author: str) -> str:
    author = (author or "").strip()
    if not author or len(author) > MAX_AUTHOR_CHARS:
        raise InvalidInput(
            f"the author must be 1 to {MAX_AUTHOR_CHARS} characters",
            details=[{"field": "author"}],
        )
    return author
