"""Prompt checks: saved extraction test cases, run on a draft beside the prompt in effect.

A check is a dry-run input (a conversation, optionally the scope whose context it
runs in) with expectations about what extraction returns: an observation lands in a
scope, some observation contains a text, none contains a text, or nothing is
extracted. Before a prompt is saved the editor runs every check of the agent on the
draft and on the prompt in effect; a check the current prompt passes and the draft
fails is a regression, and saving over one needs a confirmation. The API runs them
too, so teams can put them in their CI. Checks cover extraction (templates and
guidance): what they assert is where observations go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from bson import ObjectId

from streams.core.documents import Scope, utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.drafts.dry_run import DryRunResult, dry_run_extraction, parse_conversation
from streams.llm.port import LLMProvider
from streams.prompts import Draft
from streams.store import MemoryStore, StoreSession

ExpectationType = Literal["lands_in", "contains", "not_contains", "nothing"]
EXPECTATION_TYPES: dict[str, str] = {
    "lands_in": "an observation lands in",
    "contains": "some observation contains",
    "not_contains": "no observation contains",
    "nothing": "nothing is extracted",
}
MAX_CHECKS = 20  # each run costs two LLM calls per check
MAX_EXPECTATIONS = 10
MAX_NAME_CHARS = 120
MAX_VALUE_CHARS = 200
MAX_CONVERSATION_CHARS = 20_000


@dataclass(frozen=True)
class Expectation:
    type: ExpectationType
    value: str = ""

    def describe(self) -> str:
        words = EXPECTATION_TYPES[self.type]
        return f"{words} {self.value!r}" if self.value else words

    def met_by(self, items: list[dict[str, str]]) -> bool:
        needle = self.value.lower()
        if self.type == "nothing":
            return not items
        if self.type == "lands_in":
            return any(i["scope"].lower() == needle for i in items)
        found = any(needle in i["content"].lower() for i in items)
        return found if self.type == "contains" else not found


@dataclass(frozen=True)
class PromptCheck:
    agent_id: str
    name: str
    conversation: str
    user_name: str
    expectations: list[Expectation]
    author: str
    scope_id: str | None = None  # the context it runs in (an individual's groups, a group)
    created_at: datetime = field(default_factory=utcnow)
    id: str = field(default_factory=lambda: str(ObjectId()))

    def to_mongo(self) -> dict[str, Any]:
        return {
            "_id": ObjectId(self.id),
            "agent_id": self.agent_id,
            "name": self.name,
            "conversation": self.conversation,
            "user_name": self.user_name,
            "expectations": [{"type": e.type, "value": e.value} for e in self.expectations],
            "author": self.author,
            "scope_id": self.scope_id,
            "created_at": self.created_at,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> PromptCheck:
        return cls(
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            name=doc["name"],
            conversation=doc["conversation"],
            user_name=doc.get("user_name") or "User",
            expectations=[
                Expectation(cast(ExpectationType, e["type"]), e.get("value", ""))
                for e in doc.get("expectations", [])
            ],
            author=doc.get("author", ""),
            scope_id=doc.get("scope_id"),
            created_at=doc["created_at"],
        )


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    failures: list[str]
    result: DryRunResult


@dataclass(frozen=True)
class CheckComparison:
    check: PromptCheck
    current: CheckOutcome
    draft: CheckOutcome | None

    @property
    def regressed(self) -> bool:
        """The prompt in effect passes and the draft fails: what a save must confirm."""
        return self.draft is not None and self.current.passed and not self.draft.passed


def check_create(
    *,
    store: MemoryStore,
    agent_id: str,
    name: str,
    conversation: str,
    user_name: str,
    expectations: list[dict[str, Any]],
    author: str,
    scope_id: str | None = None,
    session: StoreSession | None = None,
) -> PromptCheck:
    """Save a check (in the calling action's transaction `session`, which audits it);
    InvalidInput naming the field when anything is off."""
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise InvalidInput(
            f"name the check (1 to {MAX_NAME_CHARS} characters)", details=[{"field": "name"}]
        )
    conversation = (conversation or "").strip()
    if len(conversation) > MAX_CONVERSATION_CHARS:
        raise InvalidInput(
            f"the conversation is longer than {MAX_CONVERSATION_CHARS} characters",
            details=[{"field": "conversation"}],
        )
    parse_conversation(conversation)
    if scope_id:
        scope = store.scopes.get(require_object_id(scope_id, what="scope"))
        if scope is None or scope.agent_id != agent_id:
            raise NotFound("scope not found")
    if store.prompt_checks.count(agent_id) >= MAX_CHECKS:
        raise InvalidInput(
            f"an agent has at most {MAX_CHECKS} checks: delete one first",
            details=[{"field": "name"}],
        )
    check = PromptCheck(
        agent_id=agent_id,
        name=name,
        conversation=conversation,
        user_name=(user_name or "User").strip()[:128] or "User",
        expectations=_expectations(expectations),
        author=author,
        scope_id=scope_id or None,
    )
    store.prompt_checks.insert(check.to_mongo(), session=session)
    return check


def check_delete(
    *, store: MemoryStore, agent_id: str, check_id: str, session: StoreSession | None = None
) -> None:
    oid = require_object_id(check_id, what="check")
    if not store.prompt_checks.delete(agent_id, oid, session=session):
        raise NotFound("check not found")


def check_list(*, store: MemoryStore, agent_id: str) -> list[PromptCheck]:
    return [
        PromptCheck.from_mongo(d) for d in store.prompt_checks.for_agent(agent_id, limit=MAX_CHECKS)
    ]


def checks_run(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    agent_id: str,
    draft: Draft | None = None,
    level: Scope | None = None,
) -> list[CheckComparison]:
    """Every check of the agent on the prompt in effect and, given one, on the draft.

    A check runs in the context of the scope it was saved from; without one, in the
    context of the level being edited (so a group's guidance draft meets its group).
    """
    comparisons = []
    for check in check_list(store=store, agent_id=agent_id):
        context = level
        if check.scope_id:
            context = store.scopes.get(ObjectId(check.scope_id)) or level
        current = _outcome(store, llm, check, None, context)
        drafted = _outcome(store, llm, check, draft, context) if draft is not None else None
        comparisons.append(CheckComparison(check, current, drafted))
    return comparisons


def _outcome(
    store: MemoryStore,
    llm: LLMProvider,
    check: PromptCheck,
    draft: Draft | None,
    level: Scope | None,
) -> CheckOutcome:
    result = dry_run_extraction(
        store=store,
        llm=llm,
        agent_id=check.agent_id,
        conversation=check.conversation,
        user_name=check.user_name,
        draft=draft,
        level=level,
    )
    if result.error:
        return CheckOutcome(False, [result.error], result)
    failures = [e.describe() for e in check.expectations if not e.met_by(result.items)]
    return CheckOutcome(not failures, failures, result)


def _expectations(raw: list[dict[str, Any]]) -> list[Expectation]:
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(
            "a check needs at least one expectation", details=[{"field": "expectations"}]
        )
    if len(raw) > MAX_EXPECTATIONS:
        raise InvalidInput(
            f"at most {MAX_EXPECTATIONS} expectations per check",
            details=[{"field": "expectations"}],
        )
    expectations = []
    for item in raw:
        kind = item.get("type") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        value = (value or "").strip() if isinstance(value, str) or value is None else None
        if kind not in EXPECTATION_TYPES or value is None:
            raise InvalidInput(
                f"an expectation is one of {', '.join(EXPECTATION_TYPES)} with a text value",
                details=[{"field": "expectations"}],
            )
        if kind != "nothing" and not value:
            raise InvalidInput(
                f'"{EXPECTATION_TYPES[kind]} ..." needs a value',
                details=[{"field": "expectations"}],
            )
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidInput(
                f"an expectation's value is at most {MAX_VALUE_CHARS} characters",
                details=[{"field": "expectations"}],
            )
        expectations.append(
            Expectation(cast(ExpectationType, kind), "" if kind == "nothing" else value)
        )
    return expectations
