"""The checked reading of an extraction answer: the items to store and the drops.

Not JSON fails the formation (the messages stay unformed for a retry); an item with an
unknown scope or no text, one longer than its target's word limit, a repeat, or one past
its target's cap (`streams.memory.extraction_limits`) is dropped and counted by reason.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from streams.llm.json_answer import read_json_answer
from streams.llm.port import LLMError
from streams.memory.extraction import ExtractedItem, ExtractionPlan, Route
from streams.memory.extraction_limits import ExtractionDrops
from streams.memory.scopes import ScopeKey


def parse_extraction(
    text: str, *, plan: ExtractionPlan, max_items: int, max_words: int
) -> tuple[list[tuple[ScopeKey, str | None, str]], int]:
    """The items to store (scope key, display name, content) and how many were dropped."""
    items, dropped = parse_extraction_items(
        text, plan=plan, max_items=max_items, max_words=max_words
    )
    return [(i.key, i.display_name, i.content) for i in items], dropped


def parse_extraction_items(
    text: str, *, plan: ExtractionPlan, max_items: int, max_words: int
) -> tuple[list[ExtractedItem], int]:
    """The items to store and how many were dropped (`parse_extraction_counted`)."""
    items, drops = parse_extraction_counted(
        text, plan=plan, max_items=max_items, max_words=max_words
    )
    return items, drops.total


def parse_extraction_counted(
    text: str, *, plan: ExtractionPlan, max_items: int, max_words: int
) -> tuple[list[ExtractedItem], ExtractionDrops]:
    """The items to store, each with who it is about, and the dropped ones by reason.

    Each target takes at most its cap of items of at most its words (the plan's
    `target_limits`; `max_items` in all, and `max_words` where a target has none). An
    item in `individual:<id>` is about that person, plus any other speaker its optional
    `about` list names; any other item is about the speakers its `about` names, or, when
    it names none, about every speaker (so forgetting any of them removes it: the safe
    reading of an unattributed line of a group chat).
    """
    answer = read_json_answer(text, what="extraction").value
    if not isinstance(answer, dict) or not isinstance(answer.get("observations"), list):
        raise LLMError('the extraction answer has no "observations" list')
    limits = _route_limits(plan)
    items: list[ExtractedItem] = []
    seen: set[tuple[str, str]] = set()
    taken: dict[str, int] = {}
    drops = ExtractionDrops()
    for raw in answer["observations"]:
        route, content = _checked_item(raw, plan=plan)
        if route is None:
            drops.unusable += 1
            continue
        target = repr(route.key)
        cap, words = limits.get(target, (max_items, max_words))
        if len(content.split()) > words:
            drops.over_words += 1
        elif (target, content.lower()) in seen:
            drops.repeated += 1
        elif taken.get(target, 0) >= cap or len(items) >= max_items:
            drops.over_cap += 1
        else:
            seen.add((target, content.lower()))
            taken[target] = taken.get(target, 0) + 1
            items.append(_item(raw, route, content, plan))
    return items, drops


def _route_limits(plan: ExtractionPlan) -> dict[str, tuple[int, int]]:
    """(cap, words) by route key: a label and its alias ("individual") share one count."""
    limits = {}
    for label, value in plan.context.target_limits.items():
        route = plan.routes.get(label.lower())
        if route is not None:
            limits[repr(route.key)] = value
    return limits


def _item(raw: dict[str, Any], route: Route, content: str, plan: ExtractionPlan) -> ExtractedItem:
    speaker_ids = [s.user_id for s in plan.speakers]
    given = raw.get("about")
    about: list[Any] = given if isinstance(given, list) else []
    named = [uid for uid in speaker_ids if uid in about]
    if route.user_id is not None:
        related = [route.user_id, *(uid for uid in named if uid != route.user_id)]
    else:
        related = named or speaker_ids
    return ExtractedItem(
        route.key,
        route.display_name,
        content,
        related,
        _sources(raw.get("sources"), plan=plan, speaker=route.user_id, about=named),
        expires_at=_expires_at(raw.get("expires_at")),
    )


def _expires_at(raw: Any) -> datetime | None:
    """An answer's `expires_at`: ISO 8601 with a timezone and still ahead, else None (a
    malformed or past validity is dropped, never the observation)."""
    if not isinstance(raw, str) or len(raw) > 40:
        return None
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        return None
    value = value.astimezone(UTC)
    return value if value > datetime.now(UTC) else None


def _sources(raw: Any, *, plan: ExtractionPlan, speaker: str | None, about: list[str]) -> list[str]:
    """The message ids an item cites, in conversation order: only ids of this batch; with
    none left, its speaker's lines (the person of an `individual:<id>` item, else the people
    its `about` names, else every person who spoke)."""
    lines = [line for line in plan.context.lines if line.message_id]
    # "[g1]" as the line shows it is g1: small models copy the brackets.
    cited = (
        {s.strip().strip("[]") for s in raw if isinstance(s, str)}
        if isinstance(raw, list)
        else set()
    )
    found = [line.message_id for line in lines if line.message_id in cited]
    if found:
        return list(dict.fromkeys(found))
    people = {speaker} if speaker else set(about)
    own = [
        line.message_id
        for line in lines
        if line.role == "user" and line.user_id and (not people or line.user_id in people)
    ]
    return list(dict.fromkeys(own))  # type: ignore[arg-type]


def _checked_item(raw: Any, *, plan: ExtractionPlan) -> tuple[Route | None, str]:
    """The item's route and its text on one line; no route: not a usable item."""
    if not isinstance(raw, dict):
        return None, ""
    content, label = raw.get("content"), raw.get("scope")
    if not isinstance(content, str) or not isinstance(label, str):
        return None, ""
    content = " ".join(content.split())
    if not content:
        return None, ""
    return plan.routes.get(label.strip().lower()), content
