"""Export a user or a scope: the JSON an import reads back (`streams.people.exchange`), and
Markdown a person can read and diff.

The JSON export (`FORMAT`) is a list of scope blocks: the scope's identity, its
consolidation and history (versions as stored: a version a rebuild redacted holds the
redaction marker, never the removed text), and its observations in log order (a deleted
one without its text, as the UI's user export shows it; `streams.people.user_audit` walks and
redacts for both). A user's export holds their individual scope whole, and for each
shared scope only the observations that came from them (no history: it speaks of others).
Each observation and version carries `digest`, a SHA-256 of the item, which the import
checks (an item changed since the export is refused).

Version 2 (`FORMAT`) adds each whole block's `settings`: what an operator set on the scope
(paused, threshold, word limit, review mode, retention cap, pins, the prompt overrides)
and, for a user's own scope, the user's groups (whom their memory propagates to), so
that a restored user feeds their groups again. A shared scope in a user's export has
`settings: null` (the group's settings are not the user's). Version 1 documents, which
have none, still import (`READABLE_FORMATS`). The UI's download and the API's answer are
one rendering (`export_json`, `export_filename`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Scope, utcnow
from streams.core.exceptions import NotFound
from streams.core.ids import parse_object_id
from streams.people.user_audit import observation_json, user_export, version_pages
from streams.store import MemoryStore
from streams.store.privacy import BATCH

FORMAT = "memory-admin/export-2"
READABLE_FORMATS = ("memory-admin/export-1", FORMAT)
# What `settings` holds, in the names `PATCH /scopes/{id}` takes (plus pins and groups).
SETTINGS_FIELDS = (
    "is_active", "consolidation_threshold", "consolidation_max_words", "review_mode",
    "max_observations", "pins", "extraction_prompt", "consolidation_prompt",
    "propagation_prompt", "groups", "consolidate_after_days", "item_words", "item_cap",
    "consolidation_model", "propagation_model", "ranking",
)  # fmt: skip


def digest(item: dict[str, Any]) -> str:
    body = {k: v for k, v in item.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _signed(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "digest": digest(item)}


def _version_item(v: ConsolidationVersion) -> dict[str, Any]:
    return _signed(
        {
            "version": v.version,
            "text": v.text,
            "trigger": v.trigger,
            "actor": v.actor,
            "created_at": v.created_at.isoformat(),
            "absorbed_observation_ids": v.absorbed_observation_ids,
            "redacted": v.redacted,
        }
    )


def scope_settings(scope: Scope) -> dict[str, Any]:
    """The scope's settings as an export holds them (unsigned)."""
    values = {name: getattr(scope, name) for name in SETTINGS_FIELDS}
    values["pins"] = list(scope.pins)
    values["groups"] = [dict(g) for g in scope.groups]
    values["ranking"] = dict(scope.ranking)
    return values


def export_json(document: dict[str, Any]) -> str:
    """The export as its file holds it: the API's answer and the UI's download alike."""
    return json.dumps(document, ensure_ascii=False, indent=2)


def export_filename(name: str, fmt: str) -> str:
    """The download's file name: `memory-<name>.json` (or `.md`), safe characters only."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120]
    return f"memory-{safe}.{'md' if fmt == 'markdown' else 'json'}"


def _identity(scope: Scope) -> dict[str, Any]:
    return {
        "id": scope.id,
        "scope_type": scope.scope_type,
        "user_id": scope.user_id,
        "group_id": scope.group_id,
        "name": scope.name,
        "display_name": scope.display_name,
    }


def scope_block(
    *, store: MemoryStore, scope: Scope, observations: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One scope: identity, consolidation and history, observations in log order (or, for
    a shared scope in a user's export, `observations` given and no history)."""
    block = _identity(scope)
    if observations is not None:
        block.update(consolidation=None, consolidation_version=None, history=None)
        block["settings"] = None
        block["observations"] = [_signed(o) for o in observations]
        return block
    repo = store.privacy
    oid = ObjectId(scope.id)
    block.update(
        consolidation=scope.consolidation,
        consolidation_version=scope.consolidation_version,
        history=[_version_item(v) for v in version_pages(store=store, scope=scope)],
        settings=_signed(scope_settings(scope)),
        observations=[
            _signed(observation_json(o))
            for low in range(0, scope.observation_seq, BATCH)
            for o in repo.scope_observations(
                oid, low_seq=low, high_seq=min(low + BATCH, scope.observation_seq)
            )
        ],
    )
    return block


def scope_export(*, store: MemoryStore, scope: Scope) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "kind": "scope",
        "agent_id": scope.agent_id,
        "scope_id": scope.id,
        "exported_at": utcnow().isoformat(),
        "scopes": [scope_block(store=store, scope=scope)],
    }


def user_export_document(*, store: MemoryStore, agent_id: str, user_id: str) -> dict[str, Any]:
    """The user's individual scope whole, and their observations in shared scopes (the
    walk and the redaction of the UI's export, `streams.people.user_audit.user_export`)."""
    data = user_export(store=store, agent_id=agent_id, user_id=user_id)
    blocks: list[dict[str, Any]] = []
    if data["individual_scope"] is not None:
        individual = store.scopes.get(ObjectId(data["individual_scope"]["id"]))
        if individual is not None:
            blocks.append(scope_block(store=store, scope=individual))
    by_scope: dict[str, list[dict[str, Any]]] = {}
    for item in data["related_observations"]:
        by_scope.setdefault(item["scope_id"], []).append(item)
    shared = store.scopes.get_many([ObjectId(i) for i in sorted(by_scope)])
    for scope in sorted(shared, key=lambda s: s.seq):
        blocks.append(scope_block(store=store, scope=scope, observations=by_scope[scope.id]))
    return {
        "format": FORMAT,
        "kind": "user",
        "agent_id": agent_id,
        "user_id": user_id,
        "exported_at": data["exported_at"],
        "scopes": blocks,
    }


def export_markdown(document: dict[str, Any]) -> str:
    """The export as Markdown: one section per scope, the consolidation, its history and
    the observations in log order, one line each (stable, so two exports diff well)."""
    lines: list[str] = []
    if document.get("kind") == "user":
        title = f"Memory of user `{document['user_id']}` (agent `{document['agent_id']}`)"
    else:
        title = f"Memory of scope `{document.get('scope_id')}` (agent `{document['agent_id']}`)"
    lines += [f"# {title}", "", f"Exported at {document['exported_at']}.", ""]
    for block in document["scopes"]:
        label = block.get("user_id") or block.get("group_id") or block.get("name") or ""
        head = f"## {block['scope_type']} {label}".rstrip()
        lines += [head, "", f"Scope id `{block['id']}`."]
        if block.get("display_name"):
            lines.append(f"Display name: {block['display_name']}.")
        lines.append("")
        if block.get("history") is None:
            lines += ["Shared scope: only this user's observations are exported.", ""]
        else:
            lines += _settings_lines(block.get("settings"))
            lines += [f"### Consolidation (version {block['consolidation_version']})", ""]
            lines += _quoted(block.get("consolidation") or "(none yet)") + [""]
            if block["history"]:
                lines += ["### History", ""]
                for v in reversed(block["history"]):
                    flag = " (redacted)" if v["redacted"] else ""
                    by = f" by {v['actor']}" if v.get("actor") else ""
                    lines.append(
                        f"- v{v['version']} · {v['created_at']} · {v['trigger']}{by}{flag}"
                    )
                    lines += ["  " + q for q in _quoted(v["text"])]
                lines.append("")
        lines += [f"### Observations ({len(block['observations'])})", ""]
        for o in block["observations"]:
            marks = [o["status"]] + (["private"] if o["private"] else [])
            if o["deleted"]:
                marks = ["deleted"]
            text = "[deleted: text removed]" if o["content"] is None else _one_line(o["content"])
            lines.append(f"- {o['observed_at']} ({', '.join(marks)}) {text}")
            source = []
            if o.get("source_session_id"):
                source.append(f"session `{o['source_session_id']}`")
            if o.get("source_message_ids"):
                source.append("messages " + ", ".join(f"`{m}`" for m in o["source_message_ids"]))
            if o.get("related_user_ids"):
                source.append("people " + ", ".join(o["related_user_ids"]))
            if o.get("propagated_from"):
                source.append(f"copied from `{o['propagated_from']}`")
            lines.append(f"  - id `{o['id']}`" + ("; " + "; ".join(source) if source else ""))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _settings_lines(settings: dict[str, Any] | None) -> list[str]:
    """What an operator set on the scope, a line each (format 2; none in older exports)."""
    if not settings:
        return []
    cap = settings.get("max_observations")
    lines = [
        "### Settings",
        "",
        f"- threshold {settings.get('consolidation_threshold')}, word limit "
        f"{settings.get('consolidation_max_words')}, review mode {settings.get('review_mode')}, "
        f"retention cap {cap if cap is not None else 'off'}"
        + ("" if settings.get("is_active", True) else "; paused"),
    ]
    lines += [f"- pinned: {_one_line(pin)}" for pin in settings.get("pins") or []]
    groups = [
        f"{g['name']} (`{g['id']}`)" if g.get("name") else f"`{g['id']}`"
        for g in settings.get("groups") or []
    ]
    if groups:
        lines.append("- groups: " + ", ".join(groups))
    overrides = [
        kind
        for kind in ("extraction", "consolidation", "propagation")
        if settings.get(f"{kind}_prompt")
    ]
    if overrides:
        lines.append("- prompt overrides: " + ", ".join(overrides))
    return [*lines, ""]


def _quoted(text: str) -> list[str]:
    return ["> " + line if line else ">" for line in text.splitlines() or [""]]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def scope_for_export(
    *, store: MemoryStore, scope_id: str, agent_ids: frozenset[str] | None
) -> Scope:
    oid = parse_object_id(scope_id)
    scope = store.scopes.get(oid) if oid is not None else None
    if scope is None or (agent_ids is not None and scope.agent_id not in agent_ids):
        raise NotFound("scope not found")
    return scope
