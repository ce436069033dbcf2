"""Extraction: the one prompt of a formation, and the checked reading of its answer.

`plan_extraction` gathers what the prompt needs (the conversation, the user's
and groups' names, the current consolidations) and the routes an answer may
name; the resolver (`streams.prompts.resolver`) decides the template and each
group's, the collective's and each shard's guidance, and the prompt is rendered
from exactly what it returns. `parse_extraction` reads the answer: not
JSON fails the formation (the messages stay unformed for a retry); an item with
an unknown scope, empty or over-long content is dropped and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streams.documents import BufferedMessage, Scope
from streams.llm.port import ConversationLine, ExtractionContext, LLMError, ShardGuidance
from streams.prompts import render_extraction
from streams.prompts.resolver import Draft, ResolvedPrompt, resolve_extraction
from streams.scopes import ScopeKey
from streams.store import MemoryStore

MAX_SHARDS = 50


@dataclass(frozen=True)
class Route:
    key: ScopeKey
    display_name: str | None


@dataclass(frozen=True)
class ExtractionPlan:
    prompt: str
    context: ExtractionContext
    routes: dict[str, Route]  # lower-cased scope label -> where it goes
    resolved: ResolvedPrompt  # every text in `prompt` and where it came from


def plan_extraction(
    *,
    store: MemoryStore,
    buffer: dict[str, Any],
    messages: list[BufferedMessage],
    settings: Any,
    draft: Draft | None = None,
) -> ExtractionPlan:
    """The prompt of one formation; with a `draft`, the prompt it would be after a save."""
    agent_id, user_id = buffer["agent_id"], buffer["user_id"]
    user_name = buffer.get("user_name") or user_id
    groups: list[dict[str, str]] = buffer.get("groups") or []
    shards = store.scopes.active_shards(agent_id, limit=MAX_SHARDS)

    routes: dict[str, Route] = {
        "individual": Route(ScopeKey.individual(agent_id, user_id), user_name),
        "collective": Route(ScopeKey.collective(agent_id), None),
    }
    for group in groups:
        name = group.get("name") or group["id"]
        routes[f"group:{name}".lower()] = Route(ScopeKey.group(agent_id, group["id"]), name)
    for shard in shards:
        assert shard.name is not None
        routes[f"shard:{shard.name}".lower()] = Route(
            ScopeKey.collective(agent_id, shard.name), shard.name
        )

    individual = store.scopes.find_by_identity(**routes["individual"].key.identity())
    known: dict[str, Scope | None] = {"individual": individual}
    for label, route in routes.items():
        if label.startswith("group:") or label == "collective":
            known[label] = store.scopes.find_by_identity(**route.key.identity())
    for shard in shards:
        known[f"shard:{shard.name}"] = shard
    consolidations = {
        _display_label(label, routes): scope.consolidation
        for label, scope in known.items()
        if scope is not None and scope.consolidation
    }
    group_names = [g.get("name") or g["id"] for g in groups]
    resolved = resolve_extraction(
        store=store,
        agent_id=agent_id,
        individual=individual,
        groups=[(name, known.get(f"group:{name}".lower())) for name in group_names],
        collective=known.get("collective"),
        shards=shards,
        draft=draft,
    )
    context = extraction_context(
        resolved,
        lines=[
            ConversationLine(
                role=m.role,
                speaker=user_name if m.role == "user" else m.role,
                content=m.content,
                created_at=m.created_at,
            )
            for m in messages
        ],
        user_name=user_name,
        group_names=group_names,
        shard_names=[s.name or "" for s in shards],
        consolidations=consolidations,
        max_observations=settings.max_observations,
        max_words=settings.max_words,
    )
    return ExtractionPlan(
        prompt=render_extraction(resolved.template.text, context),
        context=context,
        routes=routes,
        resolved=resolved,
    )


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
    )


def parse_extraction(
    text: str, *, plan: ExtractionPlan, max_items: int, max_words: int
) -> tuple[list[tuple[ScopeKey, str | None, str]], int]:
    """The items to store (scope key, display name, content) and how many were dropped."""
    try:
        answer = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise LLMError("the extraction answer is not valid JSON") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("observations"), list):
        raise LLMError('the extraction answer has no "observations" list')
    items: list[tuple[ScopeKey, str | None, str]] = []
    seen: set[tuple[str, str]] = set()
    dropped = 0
    for raw in answer["observations"]:
        route, content = _checked_item(raw, plan=plan, max_words=max_words)
        if route is None or len(items) >= max_items:
            dropped += 1
            continue
        identity = (repr(route.key), content.lower())
        if identity in seen:
            dropped += 1
            continue
        seen.add(identity)
        items.append((route.key, route.display_name, content))
    return items, dropped


def _checked_item(raw: Any, *, plan: ExtractionPlan, max_words: int) -> tuple[Route | None, str]:
    if not isinstance(raw, dict):
        return None, ""
    content, label = raw.get("content"), raw.get("scope")
    if not isinstance(content, str) or not isinstance(label, str):
        return None, ""
    content = " ".join(content.split())
    if not content or len(content.split()) > max_words:
        return None, ""
    return plan.routes.get(label.strip().lower()), content


def _display_label(label: str, routes: dict[str, Route]) -> str:
    route = routes.get(label.lower())
    if route is None or label in ("individual", "collective"):
        return label
    kind = label.split(":", 1)[0]
    return f"{kind}:{route.display_name}"
