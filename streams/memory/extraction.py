"""Extraction: the one prompt of a formation, and the checked reading of its answer.

`plan_extraction` gathers what the prompt needs (the conversation, the user's
and groups' names, the current consolidations) and the routes an answer may
name; the resolver (`streams.prompts.resolver`) decides the template and each
group's, the collective's and each shard's guidance, and the prompt is rendered
from exactly what it returns. `streams.memory.extraction_answer` reads the answer: not
JSON fails the formation (the messages stay unformed for a retry); an item with
an unknown scope, empty or over-long content is dropped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bson import ObjectId

from streams.core.documents import BufferedMessage, Scope
from streams.llm.port import ConversationLine, ExtractionContext, ShardGuidance
from streams.memory.extraction_limits import target_limits
from streams.memory.scope_limits import extraction_model
from streams.memory.scopes import ScopeKey
from streams.prompts import render_extraction
from streams.prompts.resolver import Draft, ResolvedPrompt, resolve_extraction
from streams.store import MemoryStore

MAX_SHARDS = 50
MAX_PENDING_SHOWN = 30  # the newest pending observations of a scope shown beside its memory
PENDING_HEADING = "Noted, not yet merged into the memory above:"


@dataclass(frozen=True)
class Route:
    key: ScopeKey
    display_name: str | None
    user_id: str | None = None  # an individual route: whose scope it is


@dataclass(frozen=True)
class Speaker:
    """One person who spoke in the messages of a formation, with their groups."""

    user_id: str
    name: str
    groups: list[dict[str, str]]

    @property
    def label(self) -> str:
        return f"individual:{self.user_id}"


@dataclass(frozen=True)
class ExtractedItem:
    key: ScopeKey
    display_name: str | None
    content: str
    related_user_ids: list[str]
    # The ids of the lines it came from (`[<message id>]` in the prompt), only ids of this
    # batch; the speaker's lines when the answer named none of them.
    sources: list[str] = field(default_factory=list)
    # When the conversation said until when it holds ("until Friday"): the answer's
    # optional `expires_at`, kept only when it is a time with a zone, in the future.
    expires_at: datetime | None = None


@dataclass(frozen=True)
class ExtractionPlan:
    prompt: str
    context: ExtractionContext
    routes: dict[str, Route]  # lower-cased scope label -> where it goes
    resolved: ResolvedPrompt  # every text in `prompt` and where it came from
    speakers: list[Speaker] = field(default_factory=list)
    # The agent's extraction model (None: the provider's, the code default).
    model: str | None = None


def session_speakers(buffer: dict[str, Any], messages: list[BufferedMessage]) -> list[Speaker]:
    """The people whose `user` lines are in `messages`, in order of first word.

    A message without its own speaker is the request's user (`buffer["user_id"]`); a
    speaker's groups are those sent with their messages (the buffer's for old messages).
    """
    default_id = buffer["user_id"]
    names: dict[str, str] = {}
    groups: dict[str, dict[str, dict[str, str]]] = {}
    for message in messages:
        uid = message.user_id or default_id
        if message.role != "user":
            continue
        name = message.user_name or (buffer.get("user_name") if uid == default_id else None)
        if uid not in names or message.user_name:
            names[uid] = name or names.get(uid) or uid
        own = groups.setdefault(uid, {})
        for group in message.groups:
            own.setdefault(group["id"], {}).update(group)
    if not names:
        names[default_id] = buffer.get("user_name") or default_id
    speakers = []
    for uid, name in names.items():
        own_groups = list(groups.get(uid, {}).values())
        if not own_groups and uid == default_id:
            own_groups = list(buffer.get("groups") or [])
        speakers.append(Speaker(user_id=uid, name=name, groups=own_groups))
    return speakers


def plan_extraction(
    *,
    store: MemoryStore,
    buffer: dict[str, Any],
    messages: list[BufferedMessage],
    settings: Any,
    draft: Draft | None = None,
) -> ExtractionPlan:
    """The prompt of one formation; with a `draft`, the prompt it would be after a save.
    The item limits are the scopes' own (`settings` gives none), caps grown with tokens."""
    agent_id = buffer["agent_id"]
    speakers = session_speakers(buffer, messages)
    by_id = {s.user_id: s for s in speakers}
    primary = by_id.get(buffer["user_id"]) or speakers[0]
    groups = list(_groups_of(speakers).values())
    shards = store.scopes.active_shards(agent_id, limit=MAX_SHARDS)
    routes = _routes(agent_id, speakers, primary, groups, shards)
    known = _known_scopes(store, routes, speakers, shards)
    consolidations = {
        _display_label(label, routes): text
        for label, scope in known.items()
        if scope is not None and (text := _remembered(store, scope))
    }
    group_names = [g.get("name") or g["id"] for g in groups]
    resolved = resolve_extraction(
        store=store,
        agent_id=agent_id,
        individual=known.get("individual", known.get(primary.label)),
        groups=[(name, known.get(f"group:{name}".lower())) for name in group_names],
        collective=known.get("collective"),
        shards=shards,
        draft=draft,
    )
    agent = store.agents.get(agent_id)
    limits = target_limits(
        store=store,
        agent=agent,
        targets=_targets(speakers, group_names, shards, known),
        tokens=sum(m.weighted_tokens for m in messages),
    )
    context = extraction_context(
        resolved,
        lines=_lines(messages, by_id, buffer["user_id"]),
        user_name=_who(speakers, primary),
        group_names=group_names,
        shard_names=[s.name or "" for s in shards],
        consolidations=consolidations,
        max_observations=max(cap for cap, _ in limits.values()),
        max_words=max(words for _, words in limits.values()),
        paused=_paused_labels(known, speakers),
        target_limits=limits,
    )
    return ExtractionPlan(
        prompt=render_extraction(resolved.template.text, context),
        context=context,
        routes=routes,
        resolved=resolved,
        speakers=speakers,
        model=extraction_model(store=store, agent=agent).named_model,
    )


def _groups_of(speakers: list[Speaker]) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {}
    for speaker in speakers:
        for group in speaker.groups:
            groups.setdefault(group["id"], {}).update(group)
    return groups


def _who(speakers: list[Speaker], primary: Speaker) -> str:
    if len(speakers) == 1:
        return primary.name
    return ", ".join(f"{s.name} ({s.user_id})" for s in speakers)


def _routes(
    agent_id: str,
    speakers: list[Speaker],
    primary: Speaker,
    groups: list[dict[str, str]],
    shards: list[Scope],
) -> dict[str, Route]:
    """Every label an answer may file an item under (lower-cased), and where it goes."""
    routes: dict[str, Route] = {"collective": Route(ScopeKey.collective(agent_id), None)}
    for speaker in speakers:
        routes[speaker.label.lower()] = Route(
            ScopeKey.individual(agent_id, speaker.user_id), speaker.name, speaker.user_id
        )
    if len(speakers) == 1:
        routes["individual"] = routes[primary.label.lower()]
    for group in groups:
        name = group.get("name") or group["id"]
        routes[f"group:{name}".lower()] = Route(ScopeKey.group(agent_id, group["id"]), name)
    for shard in shards:
        assert shard.name is not None
        routes[f"shard:{shard.name}".lower()] = Route(
            ScopeKey.collective(agent_id, shard.name), shard.name
        )
    return routes


def _known_scopes(
    store: MemoryStore, routes: dict[str, Route], speakers: list[Speaker], shards: list[Scope]
) -> dict[str, Scope | None]:
    """The stored scope (or None) of each place, by label ("individual" for one speaker)."""
    known: dict[str, Scope | None] = {}
    for speaker in speakers:
        label = "individual" if len(speakers) == 1 else speaker.label
        known[label] = store.scopes.find_by_identity(**routes[speaker.label.lower()].key.identity())
    for label, route in routes.items():
        if label.startswith("group:") or label == "collective":
            known[label] = store.scopes.find_by_identity(**route.key.identity())
    for shard in shards:
        known[f"shard:{shard.name}"] = shard
    return known


def _targets(
    speakers: list[Speaker],
    group_names: list[str],
    shards: list[Scope],
    known: dict[str, Scope | None],
) -> list[tuple[str, str, Scope | None]]:
    """(label as the prompt writes it, scope kind, stored scope or None) of each place."""
    single = len(speakers) == 1
    targets = [
        (s.label, "individual", known.get("individual" if single else s.label)) for s in speakers
    ]
    targets += [(f"group:{n}", "group", known.get(f"group:{n}".lower())) for n in group_names]
    targets.append(("collective", "collective", known.get("collective")))
    targets += [(f"shard:{shard.name}", "shard", shard) for shard in shards]
    return targets


def _lines(
    messages: list[BufferedMessage], by_id: dict[str, Speaker], default_id: str
) -> list[ConversationLine]:
    return [
        ConversationLine(
            role=m.role,
            speaker=by_id[m.user_id or default_id].name
            if m.role == "user" and (m.user_id or default_id) in by_id
            else m.role,
            content=m.content,
            created_at=m.created_at,
            user_id=(m.user_id or default_id) if m.role == "user" else None,
            message_id=m.message_id,
        )
        for m in messages
    ]


def _remembered(store: MemoryStore, scope: Scope) -> str:
    """What a scope holds for the prompt: its consolidation, then the newest of its pending
    observations (not private), so the model can leave out what is noted already."""
    text = (scope.consolidation or "").strip()
    recent = [ObjectId(i) for i in scope.pending_observation_ids[-MAX_PENDING_SHOWN:]]
    pending = [o for o in store.observations.get_many(recent) if not o.private and not o.deleted]
    if pending:
        noted = "\n".join(f"- {' '.join(o.content.split())}" for o in pending)
        text = f"{text}\n\n{PENDING_HEADING}\n{noted}".strip()
    return text


def _paused_labels(known: dict[str, Scope | None], speakers: list[Speaker]) -> list[str]:
    """Labels of the paused scopes this conversation could reach, as the model sees them."""
    paused = []
    for label, scope in known.items():
        if scope is None or scope.is_active:
            continue
        if label == "individual" and speakers:
            label = speakers[0].label
        paused.append(label)
    return paused


def extraction_context(
    resolved: ResolvedPrompt,
    *,
    lines: list[ConversationLine],
    user_name: str,
    group_names: list[str],
    shard_names: list[str],
    consolidations: dict[str, str],
    max_observations: int = 5,
    max_words: int = 50,
    paused: list[str] | None = None,
    target_limits: dict[str, tuple[int, int]] | None = None,
) -> ExtractionContext:
    """The data of one extraction call, its guidance exactly the parts the resolver says
    are in effect (formation, dry runs and prompt checks all build it here)."""
    return ExtractionContext(
        lines=lines,
        user_name=user_name,
        group_names=group_names,
        shards=[
            ShardGuidance(name=name, guidance=resolved.guidance_text(f"shard:{name}"))
            for name in shard_names
        ],
        consolidations=consolidations,
        max_observations=max_observations,
        max_words=max_words,
        group_guidance={
            name: text for name in group_names if (text := resolved.guidance_text(f"group:{name}"))
        },
        collective_guidance=resolved.guidance_text("collective"),
        paused=list(paused or []),
        target_limits=dict(target_limits or {}),
    )


def _display_label(label: str, routes: dict[str, Route]) -> str:
    route = routes.get(label.lower())
    if route is None or label in ("individual", "collective") or route.user_id is not None:
        return label
    kind = label.split(":", 1)[0]
    return f"{kind}:{route.display_name}"
