"""Prompt checks: saved extraction test cases, run on a draft beside the prompt in effect.

A check is a dry-run input (a conversation, optionally the scope whose context it
runs in) with expectations about what extraction returns: an observation lands in a
scope, some observation contains a text, none contains a text, or nothing is
extracted. Before a prompt is saved the editor runs every check of the agent on the
draft and on the prompt in effect; a check the current prompt passes and the draft
fails is a regression, and saving over one needs a confirmation. The API runs them
too, so teams can put them in their CI. Checks cover extraction (templates and
guidance): what they assert is where observations go. Consolidation and propagation
checks (`check_kind`) run the same way (`streams.drafts.check_kinds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from bson import ObjectId

from streams.core.documents import Scope, utcnow
from streams.core.exceptions import InvalidInput, NotFound
from streams.core.ids import require_object_id
from streams.drafts.check_kinds import (
    CHECK_KINDS,
    EXPECTATIONS_BY_KIND,
    VALUE_OPTIONAL,
    input_lines,
    run_kind,
)
from streams.drafts.dry_run import DryRunResult, dry_run_extraction, parse_conversation
from streams.llm.port import LLMProvider
from streams.prompts import Draft
from streams.store import MemoryStore, StoreSession

ExpectationType = Literal[
    "lands_in",
    "contains",
    "not_contains",
    "nothing",
    "keeps",
    "answers",
    "within_words",
    "nothing_personal",
]
EXPECTATION_TYPES: dict[str, str] = EXPECTATIONS_BY_KIND["extraction"]
CheckKind = Literal["extraction", "consolidation", "propagation"]
MAX_CHECKS = 20  # each run costs two LLM calls per check
MAX_EXPECTATIONS = 10
MAX_NAME_CHARS = 120
MAX_VALUE_CHARS = 200
MAX_CONVERSATION_CHARS = 20_000


@dataclass(frozen=True)
class Expectation:
    type: ExpectationType
    value: str = ""
    kind: CheckKind = "extraction"

    def describe(self) -> str:
        words = EXPECTATIONS_BY_KIND[self.kind][self.type]
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
    # Which prompt it checks: extraction (a conversation), consolidation or propagation
    # (`conversation` then holds observations, one per line: `streams.drafts.check_kinds`).
    kind: CheckKind = "extraction"
    # Made from a correction (`streams.drafts.corrections`): which, and who it is about
    # (forget-user removes the check with the user's corrections).
    correction_id: str | None = None
    user_ids: list[str] = field(default_factory=list)
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
            "kind": self.kind,
            "correction_id": self.correction_id,
            "user_ids": list(self.user_ids),
            "created_at": self.created_at,
        }

    @classmethod
    def from_mongo(cls, doc: dict[str, Any]) -> PromptCheck:
        kind = cast(CheckKind, doc.get("kind") or "extraction")
        return cls(
            kind=kind,
            id=str(doc["_id"]),
            agent_id=doc["agent_id"],
            name=doc["name"],
            conversation=doc["conversation"],
            user_name=doc.get("user_name") or "User",
            expectations=[
                Expectation(cast(ExpectationType, e["type"]), e.get("value", ""), kind)
                for e in doc.get("expectations", [])
            ],
            author=doc.get("author", ""),
            scope_id=doc.get("scope_id"),
            correction_id=doc.get("correction_id"),
            user_ids=list(doc.get("user_ids") or []),
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
    kind: str = "extraction",
    session: StoreSession | None = None,
    correction_id: str | None = None,
    user_ids: list[str] | None = None,
) -> PromptCheck:
    """Save a check (in the calling action's transaction `session`, which audits it);
    InvalidInput naming the field when anything is off."""
    if kind not in CHECK_KINDS:
        raise InvalidInput(
            f"kind must be one of {', '.join(CHECK_KINDS)}", details=[{"field": "kind"}]
        )
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
    if kind == "extraction":
        parse_conversation(conversation)
    elif not input_lines(conversation):
        raise InvalidInput(
            "give the observations the check folds in, one per line",
            details=[{"field": "conversation"}],
        )
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
        expectations=_expectations(expectations, cast(CheckKind, kind)),
        author=author,
        scope_id=scope_id or None,
        kind=cast(CheckKind, kind),
        correction_id=correction_id,
        user_ids=list(user_ids or []),
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
    kind: str = "extraction",
) -> list[CheckComparison]:
    """Every check of the agent for prompts of `kind`, on the prompt in effect and, given
    one, on the draft.

    A check runs in the context of the scope it was saved from; without one, in the
    context of the level being edited (so a group's guidance draft meets its group).
    """
    comparisons = []
    for check in check_list(store=store, agent_id=agent_id):
        if check.kind != kind:
            continue
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
    if check.kind != "extraction":
        ran, failures = run_kind(store=store, llm=llm, check=check, draft=draft, level=level)
        return CheckOutcome(not failures, failures, ran)
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


def _expectations(raw: list[dict[str, Any]], kind: CheckKind = "extraction") -> list[Expectation]:
    check_kind = kind
    types = EXPECTATIONS_BY_KIND[check_kind]
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
        found = item.get("type") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        value = (value or "").strip() if isinstance(value, str) or value is None else None
        if found not in types or value is None:
            raise InvalidInput(
                f"an expectation of a {check_kind} check is one of {', '.join(types)} "
                "with a text value",
                details=[{"field": "expectations"}],
            )
        if found not in VALUE_OPTIONAL and not value:
            raise InvalidInput(
                f'"{types[found]} ..." needs a value', details=[{"field": "expectations"}]
            )
        if found == "within_words" and not (value.isdigit() and 1 <= int(value) <= 5000):
            raise InvalidInput(
                "within_words needs a whole number of words (1 to 5000)",
                details=[{"field": "expectations"}],
            )
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidInput(
                f"an expectation's value is at most {MAX_VALUE_CHARS} characters",
                details=[{"field": "expectations"}],
            )
        expectations.append(
            Expectation(
                cast(ExpectationType, found), "" if found == "nothing" else value, check_kind
            )
        )
    return expectations


def draft_refusal(
    *,
    store: MemoryStore,
    llm: LLMProvider,
    scope: Scope,
    kind: str,
    text: str,
    field: str,
) -> None:
    """InvalidInput naming `field` when the draft fails checks of its kind that the prompt
    in effect passes (an API save of that draft is refused unless `save_anyway`)."""
    draft = Draft(text, scope.id)
    runs = checks_run(
        store=store, llm=llm, agent_id=scope.agent_id, draft=draft, level=scope, kind=kind
    )
    regressed = [r for r in runs if r.regressed]
    if regressed:
        raise InvalidInput(
            f"the draft fails {len(regressed)} {kind} check(s) the prompt in effect passes; "
            "send save_anyway: true to save it anyway",
            details=[
                {
                    "field": field,
                    "checks": [r.check.name for r in regressed],
                    "failures": [r.draft.failures if r.draft else [] for r in regressed],
                }
            ],
        )
