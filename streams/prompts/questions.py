"""Questions a scope's memory must answer ("What plan is this user on?"), versioned like
guidance: the agent saves a default per scope kind (individual, group, collective,
shard), a scope may override it; every save is a new version with author and time, v0
is none. The consolidation call answers them in its `ANSWERS:` trailer
(`streams.memory.requests`, `streams.memory.coverage`), so no extra call is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from bson import ObjectId

from streams.core.documents import Scope, utcnow
from streams.core.exceptions import Conflict, InvalidInput
from streams.core.ids import require_object_id
from streams.core.pagination import Page, clamp_limit, decode_cursor, encode_cursor
from streams.store import MemoryStore, StoreSession

MAX_QUESTIONS = 5
MAX_QUESTION_CHARS = 200
SCOPE_KINDS = ("individual", "group", "collective", "shard")
SAVE_ATTEMPTS = 20
QuestionSource = Literal["none", "agent", "scope"]


@dataclass(frozen=True)
class QuestionVersion:
    agent_id: str
    scope_kind: str
    scope_id: str | None
    version: int
    questions: list[str]
    author: str
    created_at: datetime
    cleared: bool = False

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> QuestionVersion:
        scope_id = doc.get("scope_id")
        return cls(
            agent_id=doc["agent_id"],
            scope_kind=doc["scope_kind"],
            scope_id=str(scope_id) if scope_id else None,
            version=doc["version"],
            questions=list(doc.get("questions") or []),
            author=doc.get("author", ""),
            created_at=doc["created_at"],
            cleared=bool(doc.get("cleared")),
        )


@dataclass(frozen=True)
class QuestionsInEffect:
    """What a consolidation of a scope asks, and where it came from."""

    questions: list[str]
    source: QuestionSource
    version: int  # 0: none saved


def validate_questions(raw: object, *, field: str = "questions") -> list[str]:
    """The questions stripped, or InvalidInput naming the field (and the item)."""
    if not isinstance(raw, list):
        raise InvalidInput("questions must be a list of texts", details=[{"field": field}])
    if len(raw) > MAX_QUESTIONS:
        raise InvalidInput(
            f"at most {MAX_QUESTIONS} questions per scope ({len(raw)} given)",
            details=[{"field": field, "max": MAX_QUESTIONS}],
        )
    found: list[str] = []
    for position, item in enumerate(raw):
        text = " ".join(item.split()) if isinstance(item, str) else ""
        if not text:
            raise InvalidInput(
                f"question {position + 1} is empty", details=[{"field": field, "index": position}]
            )
        if len(text) > MAX_QUESTION_CHARS:
            raise InvalidInput(
                f"question {position + 1} is longer than {MAX_QUESTION_CHARS} characters",
                details=[{"field": field, "index": position, "max_chars": MAX_QUESTION_CHARS}],
            )
        if text.lower() in (q.lower() for q in found):
            raise InvalidInput(
                f"question {position + 1} repeats another",
                details=[{"field": field, "index": position}],
            )
        found.append(text)
    return found


def check_scope_kind(kind: str) -> str:
    if kind not in SCOPE_KINDS:
        raise InvalidInput(
            f"scope kind must be one of {', '.join(SCOPE_KINDS)}",
            details=[{"field": "scope_kind"}],
        )
    return kind


def questions_save(
    *,
    store: MemoryStore,
    agent_id: str,
    scope_kind: str,
    questions: list[str] | None,
    author: str,
    scope: Scope | None = None,
    session: StoreSession | None = None,
) -> QuestionVersion | None:
    """The next version at this level (`scope` given: its override; `questions` None clears
    it, so the agent's default applies). Saving what is current is a no-op."""
    kind = check_scope_kind(scope.kind if scope is not None else scope_kind)
    checked = None if questions is None else validate_questions(questions)
    scope_oid = require_object_id(scope.id, what="scope") if scope is not None else None
    for _ in range(SAVE_ATTEMPTS if session is None else 1):
        latest = store.questions.latest(
            agent_id=agent_id, scope_kind=kind, scope_id=scope_oid, session=session
        )
        current = QuestionVersion.from_mongo(latest) if latest else None
        if checked is None and (current is None or current.cleared):
            return current
        if current is not None and not current.cleared and current.questions == checked:
            return current
        entry = {
            "_id": ObjectId(),
            "agent_id": agent_id,
            "scope_kind": kind,
            "scope_id": scope_oid,
            "version": (current.version if current else 0) + 1,
            "questions": checked or [],
            "cleared": checked is None,
            "author": author,
            "created_at": utcnow(),
        }
        if store.questions.insert(entry, session=session):
            if scope is not None and scope_oid is not None:
                store.scopes.update_fields(scope_oid, {"questions": checked}, session=session)
            return QuestionVersion.from_mongo(entry)
    raise Conflict("the questions are being changed by someone else; try again")


def questions_in_effect(*, store: MemoryStore, scope: Scope) -> QuestionsInEffect:
    """The scope's override (mirrored on the scope), else the agent's default for its kind."""
    if scope.questions is not None:
        latest = store.questions.latest(
            agent_id=scope.agent_id, scope_kind=scope.kind, scope_id=ObjectId(scope.id)
        )
        return QuestionsInEffect(list(scope.questions), "scope", latest["version"] if latest else 0)
    latest = store.questions.latest(agent_id=scope.agent_id, scope_kind=scope.kind, scope_id=None)
    if latest is None or latest.get("cleared") or not latest.get("questions"):
        return QuestionsInEffect([], "none", latest["version"] if latest else 0)
    return QuestionsInEffect(list(latest["questions"]), "agent", latest["version"])


def questions_default(
    *, store: MemoryStore, agent_id: str, scope_kind: str
) -> QuestionVersion | None:
    """The agent's latest default for a scope kind (None: never saved)."""
    latest = store.questions.latest(
        agent_id=agent_id, scope_kind=check_scope_kind(scope_kind), scope_id=None
    )
    return QuestionVersion.from_mongo(latest) if latest else None


def questions_history(
    *,
    store: MemoryStore,
    agent_id: str,
    scope_kind: str,
    scope: Scope | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Page[QuestionVersion]:
    """Saved versions at this level, newest first."""
    kind = check_scope_kind(scope.kind if scope is not None else scope_kind)
    scope_oid = ObjectId(scope.id) if scope is not None else None
    page_size = clamp_limit(limit)
    position = decode_cursor(cursor, required_keys=("below",))
    if position is not None:
        below = position["below"]
        if not isinstance(below, int) or below < 2:
            raise InvalidInput("malformed cursor", details=[{"field": "cursor"}])
    else:
        latest = store.questions.latest(agent_id=agent_id, scope_kind=kind, scope_id=scope_oid)
        if latest is None:
            return Page(items=[], next_cursor=None)
        below = latest["version"] + 1
    docs = store.questions.page(
        agent_id=agent_id, scope_kind=kind, scope_id=scope_oid, below_version=below, limit=page_size
    )
    lowest = below - page_size
    return Page(
        items=[QuestionVersion.from_mongo(d) for d in docs],
        next_cursor=encode_cursor({"below": lowest}) if lowest > 1 else None,
    )
