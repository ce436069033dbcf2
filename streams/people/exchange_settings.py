"""An imported scope's `settings` (export format 2): checked as the writes that set them
check them (`PATCH /scopes/{id}`, `PUT /scopes/{id}/pins`), and what the import then
stores.

Settings are restored where the import creates the scope: the scope is made with them in
its one insert, and the prompt overrides get their history (a version by the importer)
in the block's transaction. A scope that exists already keeps its own settings (an older
export never undoes a change made since); the import counts it as skipped when they
differ. A setting left out of `settings` (or a prompt that is null: no override) stays
as a new scope has it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput
from streams.core.scope_limits import KIND_DEFAULT_FIELDS
from streams.guard.screening import screen_pins
from streams.memory.pins import pins_checked
from streams.memory.scopes import PROMPT_FIELDS, scope_changes_check
from streams.people.export import SETTINGS_FIELDS, digest, scope_settings
from streams.search.ranking_settings import ranking_settings_check
from streams.store import MemoryStore

MAX_GROUPS = 500
MAX_ID = 128
MAX_NAME = 200
GROUP_FIELDS = {"id", "name"}

Report = Callable[[str | None, str], None]  # (field, message)


def settings_checked(
    value: Any, *, store: MemoryStore, probe: Scope, report: Report
) -> dict[str, Any] | None:
    """The scope fields to create the scope with (None: nothing to restore, or a problem,
    each reported with its field). Limits and models are checked against this store's
    price table, as `PATCH /scopes/{id}` checks them."""
    if value is None:
        return None
    if not isinstance(value, dict):
        report(None, "settings must be an object or null")
        return None
    reported = [0]

    def problem(field: str | None, message: str) -> None:
        reported[0] += 1
        report(field, message)

    unknown = sorted(set(value) - {*SETTINGS_FIELDS, "digest"})
    if unknown:
        problem(None, f"unknown fields: {', '.join(unknown)[:200]}")
    if "digest" in value and value["digest"] != digest(value):
        problem("digest", "changed since the export (digest differs)")
    fields: dict[str, Any] = {}
    for name in SETTINGS_FIELDS:
        if name not in value or name in ("pins", "groups"):
            continue
        if (name in PROMPT_FIELDS or name in KIND_DEFAULT_FIELDS) and value[name] is None:
            continue  # no override: the agent's (or the code's) prompt, limit or model
        try:
            if name == "ranking":
                fields["ranking"] = _ranking(value[name])
            else:
                changes = {name: value[name]}
                fields.update(scope_changes_check(scope=probe, changes=changes, store=store))
        except InvalidInput as exc:
            problem(name, exc.message)
    if "pins" in value:
        pins = value["pins"]
        max_words = fields.get("consolidation_max_words", probe.consolidation_max_words)
        if not isinstance(pins, list) or not all(isinstance(p, str) for p in pins):
            problem("pins", "pins must be a list of sentences")
        else:
            try:
                # The pins pass the screen like any pin write (`PUT /scopes/{id}/pins`):
                # secrets redacted; a flagged pin of a shared scope is refused (`Flagged`).
                fields["pins"], _ = screen_pins(
                    scope=probe, pins=pins_checked(pins, max_words=max_words), origin="import"
                )
            except InvalidInput as exc:
                problem("pins", exc.message)
    if "groups" in value:
        groups = _groups(value["groups"])
        if groups is None:
            problem(
                "groups",
                f"groups must be a list of at most {MAX_GROUPS} objects with an id "
                f"(1..{MAX_ID} characters) and an optional name (1..{MAX_NAME})",
            )
        elif groups and probe.scope_type != "individual":
            problem("groups", "only an individual scope has groups (the user's)")
        else:
            fields["groups"] = groups
    return None if reported[0] else fields


def _ranking(value: Any) -> dict[str, bool]:
    """The scope's own ranking switches (`PATCH /scopes/{id}/ranking`'s check)."""
    if not isinstance(value, dict):
        raise InvalidInput("ranking must be an object of switches")
    return ranking_settings_check(value)


def _groups(value: Any) -> list[dict[str, str]] | None:
    if not isinstance(value, list) or len(value) > MAX_GROUPS:
        return None
    groups: list[dict[str, str]] = []
    for group in value:
        if not isinstance(group, dict) or not set(group) <= GROUP_FIELDS or "id" not in group:
            return None
        if any(
            not isinstance(group[k], str) or not 1 <= len(group[k]) <= limit
            for k, limit in (("id", MAX_ID), ("name", MAX_NAME))
            if k in group
        ):
            return None
        groups.append({k: group[k] for k in ("id", "name") if k in group})
    return groups


def settings_differ(scope: Scope, restored: dict[str, Any]) -> bool:
    """Whether an existing scope's settings differ from those an import brings."""
    own = scope_settings(scope)
    return any(own.get(name) != value for name, value in restored.items())


def prompts_to_record(scope: Scope, restored: dict[str, Any] | None) -> dict[str, str]:
    """The prompt overrides whose history the import writes (kind -> text): those the
    scope holds as the document does (it was made with them, or had them already; saving
    the text in effect again is a no-op, so a re-import adds no version)."""
    if not restored:
        return {}
    return {
        kind: restored[name]
        for name, kind in PROMPT_FIELDS.items()
        if restored.get(name) is not None and getattr(scope, name) == restored[name]
    }
